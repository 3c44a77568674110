// The sandbox's syscall policy: a table (one row per rule, with its reason), compiled once
// per process into a BPF program with libseccomp.
//
// Denied syscalls either end the run (action `kill`: the filter returns SECCOMP_RET_USER_NOTIF,
// the supervisor learns the syscall's name from the notification and kills the sandbox; the
// verdict is seccomp_violation naming it) or fail with an errno where ordinary runtimes probe
// the syscall and fall back (clone3, io_uring).
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace airlock::sandbox {

enum class SyscallCondition {
  always,
  clone_with_namespace_flags,  // clone(2) asking for any CLONE_NEW* flag
  socket_family_not_allowed,   // anything but AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
  netlink_not_route,           // AF_NETLINK with a protocol other than NETLINK_ROUTE
  ioctl_terminal_injection,    // TIOCSTI, TIOCLINUX
  personality_not_default,     // anything but PER_LINUX or the 0xffffffff query
};

struct SyscallRule {
  std::string_view syscall;
  SyscallCondition condition;
  bool kill;         // true: end the run (seccomp_violation); false: fail with errno_value
  int errno_value;   // when !kill
  std::string_view reason;
};

// Every rule, in the order docs/sandbox.md lists them.
std::span<const SyscallRule> syscall_policy();

struct SeccompProgram {
  std::vector<sock_filter> instructions;
};

// Whom a program is for: a call (every rule), or a warm template (docs/warm-start.md), which
// runs its tool's import under the call's rules but for the few its calls' set-up needs
// (warm_child.cpp): new namespaces (unshare, clone with CLONE_NEW*, clone3 into the call's
// cgroup) and mount (the call's tmpfs and /proc). Each call adds the call's program on top
// before its tool runs; filters stack, and the most restrictive answer wins.
enum class SeccompFor { call, warm_template };

// The rows a warm template may break (only so that its calls can build their sandbox).
bool warm_template_needs(const SyscallRule& rule);

// Compiles the table with libseccomp, behind a prologue that sends foreign architectures and
// x32 syscall numbers to the supervisor as violations. The build runs this once
// (airlock_seccomp_gen) and embeds the result, so no run pays for compiling the filter.
Result<SeccompProgram> compile_seccomp_program(SeccompFor what = SeccompFor::call);

// The programs compiled at build time.
const SeccompProgram& seccomp_program();
const SeccompProgram& warm_template_seccomp_program();

// A copy of `program` whose violations kill (for a process that cannot get a listener).
inline std::vector<sock_filter> kill_on_violation(const SeccompProgram& program) {
  std::vector<sock_filter> kill = program.instructions;
  for (auto& insn : kill)
    if (insn.code == (BPF_RET | BPF_K) && insn.k == SECCOMP_RET_USER_NOTIF)
      insn.k = SECCOMP_RET_KILL_PROCESS;
  return kill;
}

// "ptrace", or "x32:getpid", or "i386:#11" for a number libseccomp cannot name.
std::string syscall_name(std::uint32_t audit_arch, int nr);

}  // namespace airlock::sandbox
