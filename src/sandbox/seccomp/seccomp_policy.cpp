#include "sandbox/seccomp/seccomp_policy.hpp"

#include <linux/audit.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "common/unique_fd.hpp"

namespace airlock::sandbox {
namespace {

constexpr std::array<SyscallRule, 62> kPolicy{{
    // Mount table and root changes: the sandbox's view of the filesystem is fixed at start.
    {"mount", SyscallCondition::always, true, 0, "changes the mount table"},
    {"umount2", SyscallCondition::always, true, 0, "could reveal what a mount hides"},
    {"pivot_root", SyscallCondition::always, true, 0, "changes the root"},
    {"chroot", SyscallCondition::always, true, 0, "changes the root"},
    {"move_mount", SyscallCondition::always, true, 0, "new mount API"},
    {"open_tree", SyscallCondition::always, true, 0, "new mount API"},
    {"fsopen", SyscallCondition::always, true, 0, "new mount API"},
    {"fsconfig", SyscallCondition::always, true, 0, "new mount API"},
    {"fsmount", SyscallCondition::always, true, 0, "new mount API"},
    {"fspick", SyscallCondition::always, true, 0, "new mount API"},
    {"mount_setattr", SyscallCondition::always, true, 0, "new mount API"},
    // Namespaces: a new user namespace would hand the program capabilities again.
    {"unshare", SyscallCondition::always, true, 0, "new namespaces regain capabilities"},
    {"setns", SyscallCondition::always, true, 0, "joins other namespaces"},
    {"clone", SyscallCondition::clone_with_namespace_flags, true, 0,
     "new namespaces regain capabilities"},
    {"clone3", SyscallCondition::always, false, ENOSYS,
     "its flags live in memory seccomp cannot read; libc falls back to clone(2)"},
    // Reaching into other processes.
    {"ptrace", SyscallCondition::always, true, 0, "inspects and controls other processes"},
    {"process_vm_readv", SyscallCondition::always, true, 0, "reads another process's memory"},
    {"process_vm_writev", SyscallCondition::always, true, 0, "writes another process's memory"},
    {"pidfd_getfd", SyscallCondition::always, true, 0, "steals another process's descriptors"},
    {"kcmp", SyscallCondition::always, true, 0, "probes other processes' kernel objects"},
    // Kernel attack surface that tools do not need.
    {"bpf", SyscallCondition::always, true, 0, "loads programs into the kernel"},
    {"perf_event_open", SyscallCondition::always, true, 0, "side channels, large attack surface"},
    {"keyctl", SyscallCondition::always, true, 0, "kernel keyrings are not namespaced"},
    {"add_key", SyscallCondition::always, true, 0, "kernel keyrings are not namespaced"},
    {"request_key", SyscallCondition::always, true, 0, "kernel keyrings are not namespaced"},
    {"io_uring_setup", SyscallCondition::always, false, ENOSYS,
     "bypasses seccomp for the operations it runs; runtimes probe it and fall back"},
    {"io_uring_enter", SyscallCondition::always, false, ENOSYS, "see io_uring_setup"},
    {"io_uring_register", SyscallCondition::always, false, ENOSYS, "see io_uring_setup"},
    {"userfaultfd", SyscallCondition::always, true, 0, "widens kernel race windows"},
    {"kexec_load", SyscallCondition::always, true, 0, "replaces the kernel"},
    {"kexec_file_load", SyscallCondition::always, true, 0, "replaces the kernel"},
    {"init_module", SyscallCondition::always, true, 0, "loads kernel modules"},
    {"finit_module", SyscallCondition::always, true, 0, "loads kernel modules"},
    {"delete_module", SyscallCondition::always, true, 0, "unloads kernel modules"},
    {"reboot", SyscallCondition::always, true, 0, "reboots the host"},
    {"swapon", SyscallCondition::always, true, 0, "host swap configuration"},
    {"swapoff", SyscallCondition::always, true, 0, "host swap configuration"},
    {"acct", SyscallCondition::always, true, 0, "host process accounting"},
    {"quotactl", SyscallCondition::always, true, 0, "host disk quotas"},
    {"quotactl_fd", SyscallCondition::always, true, 0, "host disk quotas"},
    {"name_to_handle_at", SyscallCondition::always, true, 0,
     "file handles open files by number, past mount boundaries"},
    {"open_by_handle_at", SyscallCondition::always, true, 0,
     "file handles open files by number, past mount boundaries"},
    {"iopl", SyscallCondition::always, true, 0, "raw I/O port access"},
    {"ioperm", SyscallCondition::always, true, 0, "raw I/O port access"},
    {"syslog", SyscallCondition::always, true, 0, "reads the host kernel log"},
    {"lookup_dcookie", SyscallCondition::always, true, 0, "host-wide profiling interface"},
    {"uselib", SyscallCondition::always, true, 0, "obsolete loader interface"},
    {"vhangup", SyscallCondition::always, true, 0, "hangs up terminals"},
    {"settimeofday", SyscallCondition::always, true, 0, "host clock"},
    {"clock_settime", SyscallCondition::always, true, 0, "host clock"},
    {"clock_adjtime", SyscallCondition::always, true, 0, "host clock"},
    {"adjtimex", SyscallCondition::always, true, 0, "host clock"},
    {"fanotify_init", SyscallCondition::always, true, 0, "watches host filesystems"},
    {"modify_ldt", SyscallCondition::always, true, 0, "16-bit segments, a history of kernel bugs"},
    {"personality", SyscallCondition::personality_not_default, true, 0,
     "execution domains switch off ASLR and change syscall semantics"},
    // Sockets: only the families ordinary programs use.
    {"socket", SyscallCondition::socket_family_not_allowed, true, 0,
     "packet, vsock, key, bluetooth, alg and other families reach host interfaces or kernel "
     "code that tools do not need"},
    {"socket", SyscallCondition::netlink_not_route, true, 0,
     "netlink other than NETLINK_ROUTE talks to kernel subsystems (audit, netfilter, ...)"},
    {"socketpair", SyscallCondition::socket_family_not_allowed, true, 0, "as for socket"},
    // Terminals: pushing input into a terminal's queue runs commands as its owner.
    {"ioctl", SyscallCondition::ioctl_terminal_injection, true, 0,
     "TIOCSTI/TIOCLINUX inject input into a terminal"},
    {"_sysctl", SyscallCondition::always, true, 0, "obsolete sysctl interface"},
    {"nfsservctl", SyscallCondition::always, true, 0, "obsolete kernel NFS server control"},
    {"vm86", SyscallCondition::always, true, 0, "obsolete 16-bit mode"},
}};

constexpr std::array<int, 4> kAllowedFamilies{AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
constexpr int kFamilyLimit = 64;      // AF_MAX is 46 on 6.x kernels; the kernel rejects the rest
constexpr int kNetlinkProtocols = 32; // MAX_LINKS
constexpr std::uint64_t kLow32 = 0xffffffffULL;
constexpr std::array<std::uint64_t, 7> kNamespaceFlags{CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,
                                                       CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                                       CLONE_NEWCGROUP};

uint32_t action_of(const SyscallRule& rule) {
  return rule.kill ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(static_cast<uint32_t>(rule.errno_value));
}

// Adds the libseccomp rules for one table row. Returns a negative errno on failure.
int add_rule(scmp_filter_ctx ctx, const SyscallRule& rule) {
  int nr = seccomp_syscall_resolve_name(std::string(rule.syscall).c_str());
  if (nr == __NR_SCMP_ERROR) return 0;  // not on this architecture (vm86, _sysctl, ...)
  uint32_t action = action_of(rule);
  switch (rule.condition) {
    case SyscallCondition::always:
      return seccomp_rule_add(ctx, action, nr, 0);
    case SyscallCondition::clone_with_namespace_flags:
      for (auto flag : kNamespaceFlags)
        if (int rc = seccomp_rule_add(ctx, action, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)))
          return rc;
      return 0;
    case SyscallCondition::socket_family_not_allowed:
      // Only the low 32 bits of an int argument count, so compare those: upper-bit garbage
      // must not slip a denied family past an equality test.
      for (int family = 0; family < kFamilyLimit; ++family) {
        bool allowed = false;
        for (int ok : kAllowedFamilies) allowed |= (family == ok);
        if (allowed) continue;
        if (int rc = seccomp_rule_add(ctx, action, nr, 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, std::uint64_t(family))))
          return rc;
      }
      return 0;
    case SyscallCondition::netlink_not_route:
      for (int protocol = 1; protocol < kNetlinkProtocols; ++protocol)
        if (int rc = seccomp_rule_add(
                ctx, action, nr, 2, SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, std::uint64_t(AF_NETLINK)),
                SCMP_A2(SCMP_CMP_MASKED_EQ, kLow32, std::uint64_t(protocol))))
          return rc;
      return 0;
    case SyscallCondition::ioctl_terminal_injection:
      for (std::uint64_t request : {std::uint64_t(TIOCSTI), std::uint64_t(TIOCLINUX)})
        if (int rc = seccomp_rule_add(ctx, action, nr, 1,
                                      SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, request)))
          return rc;
      return 0;
    case SyscallCondition::personality_not_default:
      // libseccomp cannot compare one argument twice in a rule ("neither 0 nor 0xffffffff"),
      // so this row is compiled into the hand-written prologue below.
      return 0;
  }
  return -EINVAL;
}

// Exports the libseccomp program as raw BPF through a memfd (libseccomp 2.5 has no
// in-memory export).
Result<std::vector<sock_filter>> export_bpf(scmp_filter_ctx ctx) {
  UniqueFd mem(memfd_create("airlock-seccomp", MFD_CLOEXEC));
  if (!mem) return Error::make("seccomp", std::string("memfd_create: ") + strerror(errno));
  if (int rc = seccomp_export_bpf(ctx, mem.get()))
    return Error::make("seccomp", std::string("seccomp_export_bpf: ") + strerror(-rc));
  off_t size = lseek(mem.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0)
    return Error::make("seccomp", "exported filter has an unexpected size");
  std::vector<sock_filter> program(static_cast<std::size_t>(size) / sizeof(sock_filter));
  if (pread(mem.get(), program.data(), static_cast<std::size_t>(size), 0) != size)
    return Error::make("seccomp", std::string("reading the exported filter: ") + strerror(errno));
  return program;
}

// Runs before libseccomp's program (x86_64 only):
//  - every other audit architecture and the x32 numbering are violations;
//  - personality(2) is allowed only as PER_LINUX (0) or the query 0xffffffff. The kernel takes
//    the argument as an unsigned int, so only its low 32 bits count (libseccomp cannot express
//    "neither 0 nor 0xffffffff": it compares an argument once per rule).
// Jumps are relative; libseccomp's program starts right after the prologue.
std::vector<sock_filter> architecture_prologue() {
  constexpr std::uint32_t kX32Bit = 0x40000000U;
  constexpr std::uint32_t kArg0Low = offsetof(seccomp_data, args);  // little-endian
  return {
      /* 0*/ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      /* 1*/ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      /* 2*/ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      /* 3*/ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      /* 4*/ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 0, 1),
      /* 5*/ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      /* 6*/ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, 4),
      /* 7*/ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0Low),
      /* 8*/ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0),
      /* 9*/ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffU, 1, 0),
      /*10*/ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
  };  // 11: libseccomp's program
}

}  // namespace

bool warm_template_needs(const SyscallRule& rule) {
  for (std::string_view set_up : {"unshare", "clone", "clone3", "mount"})
    if (rule.syscall == set_up) return true;
  return false;
}

Result<SeccompProgram> compile_seccomp_program(SeccompFor what) {
#if !defined(__x86_64__)
  return Error::make("seccomp", "the sandbox's syscall policy is written for x86_64 only");
#endif
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return Error::make("seccomp", "seccomp_init failed");
  struct CtxGuard {
    scmp_filter_ctx c;
    ~CtxGuard() { seccomp_release(c); }
  } guard{ctx};
  if (int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_NOTIFY))
    return Error::make("seccomp", std::string("bad-arch action: ") + strerror(-rc));
  // The filter is installed by the sandbox itself after no_new_privs; libseccomp must not
  // try to set it again or synchronise threads.
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  for (const auto& rule : kPolicy) {
    if (what == SeccompFor::warm_template && warm_template_needs(rule)) continue;
    if (int rc = add_rule(ctx, rule); rc < 0)
      return Error::make("seccomp", "rule for " + std::string(rule.syscall) + ": " + strerror(-rc));
  }
  auto bpf = export_bpf(ctx);
  if (!bpf) return bpf.error();
  SeccompProgram program;
  program.instructions = architecture_prologue();
  program.instructions.insert(program.instructions.end(), bpf->begin(), bpf->end());
  if (program.instructions.size() > BPF_MAXINSNS)
    return Error::make("seccomp", "filter exceeds the kernel's instruction limit");
  return program;
}

std::span<const SyscallRule> syscall_policy() { return kPolicy; }

std::string syscall_name(std::uint32_t audit_arch, int nr) {
  const char* arch_label = nullptr;
  uint32_t scmp_arch = 0;
  if (audit_arch == AUDIT_ARCH_X86_64 && (nr & 0x40000000)) {
    arch_label = "x32";
    scmp_arch = SCMP_ARCH_X32;
  } else if (audit_arch == AUDIT_ARCH_X86_64) {
    scmp_arch = SCMP_ARCH_X86_64;
  } else if (audit_arch == AUDIT_ARCH_I386) {
    arch_label = "i386";
    scmp_arch = SCMP_ARCH_X86;
  } else {
    return "arch" + std::to_string(audit_arch) + ":#" + std::to_string(nr);
  }
  std::string name;
  if (char* resolved = seccomp_syscall_resolve_num_arch(scmp_arch, nr)) {
    name = resolved;
    free(resolved);
  } else {
    name = "#" + std::to_string(nr & ~0x40000000);
  }
  return arch_label ? std::string(arch_label) + ":" + name : name;
}

}  // namespace airlock::sandbox
