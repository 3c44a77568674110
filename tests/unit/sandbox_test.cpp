// Unit tests for the sandbox library: the pieces that need no namespaces.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "sandbox/cgroup.hpp"
#include "sandbox/doctor.hpp"
#include "sandbox/fd_passing.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/plan.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/seccomp/seccomp_policy.hpp"

namespace airlock::sandbox {
namespace {

TEST(NormalizeAbsolute, CleansAndRejects) {
  EXPECT_EQ(*normalize_absolute("/a//b/./c/"), "/a/b/c");
  EXPECT_EQ(*normalize_absolute("/"), "/");
  EXPECT_EQ(*normalize_absolute("///"), "/");
  EXPECT_FALSE(normalize_absolute("relative/path").ok());
  EXPECT_FALSE(normalize_absolute("/a/../etc").ok());
  EXPECT_FALSE(normalize_absolute("").ok());
  EXPECT_FALSE(normalize_absolute(std::string("/a\0b", 4)).ok());
}

Spec valid_spec() {
  Spec s;
  s.argv = {"/bin/true"};
  return s;
}

TEST(ValidateSpec, AcceptsTheDefaults) { EXPECT_TRUE(validate_spec(valid_spec()).ok()); }

TEST(ValidateSpec, RejectsWhatCannotRun) {
  auto rejects = [](auto mutate, const char* why) {
    Spec s = valid_spec();
    mutate(s);
    EXPECT_FALSE(validate_spec(s).ok()) << why;
  };
  rejects([](Spec& s) { s.argv.clear(); }, "no command");
  rejects([](Spec& s) { s.argv = {""}; }, "empty command");
  rejects([](Spec& s) { s.argv.push_back(std::string("a\0b", 3)); }, "NUL in argument");
  rejects([](Spec& s) { s.env["BAD=NAME"] = "x"; }, "= in env name");
  rejects([](Spec& s) { s.env["1ST"] = "x"; }, "env name starting with a digit");
  rejects([](Spec& s) { s.workdir = "/"; }, "workdir /");
  rejects([](Spec& s) { s.workdir = "/usr/lib"; }, "workdir under /usr");
  rejects([](Spec& s) { s.workdir = "/proc"; }, "workdir /proc");
  rejects([](Spec& s) { s.workdir = "work"; }, "relative workdir");
  rejects([](Spec& s) { s.limits.wall_time = std::chrono::milliseconds(0); }, "zero timeout");
  rejects([](Spec& s) { s.limits.memory_bytes = 1024; }, "tiny memory");
  rejects([](Spec& s) { s.limits.pids = 0; }, "zero pids");
  rejects([](Spec& s) { s.limits.open_files = 2; }, "too few fds");
  rejects([](Spec& s) { s.network.loopback_listeners = {0}; }, "port 0");
  rejects([](Spec& s) { s.tty = Terminal{0, 80}; }, "a terminal with no rows");
  rejects(
      [](Spec& s) {
        s.tty = Terminal{};
        s.output_mode = OutputMode::caller;
      },
      "a terminal with caller-owned stdio");
}

TEST(SeccompPolicy, EmbeddedProgramIsTheTableCompiledNow) {
  // The build embeds the compiled table; a stale or hand-edited program fails here.
  auto fresh = compile_seccomp_program();
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  const auto& embedded = seccomp_program().instructions;
  ASSERT_EQ(fresh->instructions.size(), embedded.size());
  for (std::size_t i = 0; i < embedded.size(); ++i) {
    EXPECT_EQ(fresh->instructions[i].code, embedded[i].code) << i;
    EXPECT_EQ(fresh->instructions[i].k, embedded[i].k) << i;
  }
}

TEST(SeccompPolicy, CoversEverySyscallTheIssueNames) {
  std::set<std::string> covered;
  for (const auto& rule : syscall_policy()) covered.insert(std::string(rule.syscall));
  for (const char* name :
       {"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount",
        "mount_setattr", "unshare", "setns", "clone", "clone3", "ptrace", "process_vm_readv",
        "process_vm_writev", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
        "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "kexec_load",
        "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
        "swapoff", "acct", "quotactl", "name_to_handle_at", "open_by_handle_at", "iopl", "ioperm",
        "syslog", "personality", "socket", "ioctl"})
    EXPECT_TRUE(covered.count(name)) << name << " is missing from the syscall policy";
  for (const auto& rule : syscall_policy()) EXPECT_FALSE(rule.reason.empty()) << rule.syscall;
}

TEST(SeccompPolicy, NamesSyscallsPerArchitecture) {
  EXPECT_EQ(syscall_name(AUDIT_ARCH_X86_64, 101), "ptrace");
  EXPECT_EQ(syscall_name(AUDIT_ARCH_X86_64, 0x40000000 | 39), "x32:getpid");
  EXPECT_EQ(syscall_name(AUDIT_ARCH_I386, 20), "i386:getpid");
  EXPECT_EQ(syscall_name(AUDIT_ARCH_X86_64, 99999), "#99999");
}

TEST(Landlock, RulesAreMaskedToTheAbi) {
  LandlockPlan plan;
  plan.paths.push_back({"/work", landlock::kReadWrite, true});
  plan.paths.push_back({"/dev/null", landlock::kReadFile | landlock::kWriteFile | landlock::kReadDir,
                        false});
  finish_landlock_plan(plan, 1);
  EXPECT_EQ(plan.handled_net, 0u);
  EXPECT_EQ(plan.scoped, 0u);
  EXPECT_EQ(plan.paths[0].access & landlock::kRefer, 0u);       // ABI 2
  EXPECT_EQ(plan.paths[0].access & landlock::kTruncate, 0u);    // ABI 3
  EXPECT_EQ(plan.paths[1].access & landlock::kReadDir, 0u);     // not on a file
  LandlockPlan v6;
  finish_landlock_plan(v6, 6);
  EXPECT_EQ(v6.handled_net, landlock::kNetBindTcp | landlock::kNetConnectTcp);
  EXPECT_EQ(v6.scoped, landlock::kScopeAbstractUnix | landlock::kScopeSignal);
}

TEST(Outcome, JsonFieldsAndExitStatus) {
  Outcome o;
  o.verdict = Verdict::seccomp_violation;
  o.signal = 31;
  o.syscall = "ptrace";
  auto j = to_json(o);
  EXPECT_EQ(j["verdict"], "seccomp_violation");
  EXPECT_EQ(j["signal"], "SIGSYS");
  EXPECT_EQ(j["syscall"], "ptrace");
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_TRUE(j["usage"]["pids_peak"].is_null());
  EXPECT_TRUE(j["usage"]["pids_limit_hit"].is_null());
  EXPECT_EQ(o.exit_status(), 159);
  o.verdict = Verdict::timeout;
  EXPECT_EQ(o.exit_status(), 124);
  o.verdict = Verdict::setup_error;
  EXPECT_EQ(o.exit_status(), 125);
  o.verdict = Verdict::exit_nonzero;
  o.signal.reset();
  o.exit_code = 4;
  EXPECT_EQ(o.exit_status(), 4);
  for (Verdict v : {Verdict::ok, Verdict::exit_nonzero, Verdict::signaled, Verdict::timeout,
                    Verdict::cpu_time_limit, Verdict::memory_limit, Verdict::output_limit,
                    Verdict::seccomp_violation, Verdict::setup_error})
    EXPECT_FALSE(verdict_name(v).empty());
}

TEST(ChildPlan, EnvironmentIsPathHomeLangAndTheSpec) {
  Spec s = valid_spec();
  s.env["PATH"] = "/opt/bin";
  s.env["TOKEN"] = "t";
  auto plan = make_child_plan(s, detect_cgroup_support("none"));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::vector<std::string> env(plan->envp_storage.begin(), plan->envp_storage.end());
  EXPECT_EQ(env, (std::vector<std::string>{"HOME=/work", "LANG=C.UTF-8", "PATH=/opt/bin", "TOKEN=t"}));
  EXPECT_EQ(plan->envp.back(), nullptr);
}

TEST(ChildPlan, CommandIsLookedUpInTheSandboxPath) {
  Spec s = valid_spec();
  s.argv = {"python3", "-c", "pass"};
  auto plan = make_child_plan(s, detect_cgroup_support("none"));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->exec_candidates, (std::vector<std::string>{"/usr/local/bin/python3",
                                                             "/usr/bin/python3", "/bin/python3"}));
}

TEST(ChildPlan, BindsNeverCreateDirectoriesInHostTrees) {
  Spec s = valid_spec();
  s.binds.push_back({"/usr/share", "/data", false});
  s.binds.push_back({"/usr/lib", "/data/no-such-dir-here", false});  // inside the first bind
  auto plan = make_child_plan(s, detect_cgroup_support("none"));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("/data/no-such-dir-here"), std::string::npos);

  Spec ok = valid_spec();
  ok.binds.push_back({"/usr/share", "/data", false});
  ok.binds.push_back({"/usr/lib", "/data/doc", false});  // /usr/share/doc exists on the host
  EXPECT_TRUE(make_child_plan(ok, detect_cgroup_support("none")).ok());
}

TEST(ChildPlan, ReservedDestinationsAreRefused) {
  for (const char* dest : {"/proc", "/proc/sys", "/dev", "/dev/shm", "/"}) {
    Spec s = valid_spec();
    s.binds.push_back({"/usr", dest, false});
    EXPECT_FALSE(make_child_plan(s, detect_cgroup_support("none")).ok()) << dest;
  }
}

TEST(ChildPlan, OnlyATerminalGetsANewDevptsInstance) {
  auto devpts_steps = [](const ChildPlan& plan) {
    std::vector<std::string> found;
    for (const auto& step : plan.steps)
      if (step.kind == MountStep::Kind::mount_devpts ||
          (step.path.rfind("dev/pt", 0) == 0 || step.path == "dev/tty"))
        found.push_back(step.path + " " + step.text);
    return found;
  };
  auto plan = make_child_plan(valid_spec(), detect_cgroup_support("none"));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->tty);
  EXPECT_TRUE(devpts_steps(*plan).empty());
  for (const auto& source : plan->sources) EXPECT_NE(source.host_path, "/dev/tty");
  for (const auto& source : plan->sources) EXPECT_NE(source.host_path, "/dev/pts");

  Spec s = valid_spec();
  s.tty = Terminal{30, 100};
  plan = make_child_plan(s, detect_cgroup_support("none"));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->tty);
  EXPECT_EQ(plan->tty_rows, 30);
  EXPECT_EQ(plan->tty_columns, 100);
  EXPECT_EQ(plan->tty_ptmx, "/dev/pts/ptmx");
  auto steps = devpts_steps(*plan);
  EXPECT_NE(std::find(steps.begin(), steps.end(),
                      "dev/pts newinstance,ptmxmode=0666,mode=0620,gid=1000,max=16"),
            steps.end());
  EXPECT_NE(std::find(steps.begin(), steps.end(), "dev/ptmx pts/ptmx"), steps.end());
  // Never the host's ptys: no host tree under /dev/pts is cloned.
  for (const auto& source : plan->sources) EXPECT_NE(source.host_path.rfind("/dev/pts", 0), 0u);
}

TEST(Cgroups, TheUsualPlacesAgreeWithMountinfo) {
  // Detection looks at /sys/fs/cgroup/... before it reads /proc/self/mountinfo; on any host
  // both must find the same cgroups.
  for (const char* mode : {"auto", "v1", "v2"}) {
    auto usual = detect_cgroup_support(mode, CgroupMountLookup::usual_places_first);
    auto mountinfo = detect_cgroup_support(mode, CgroupMountLookup::mountinfo);
    EXPECT_EQ(usual.mode, mountinfo.mode) << mode;
    EXPECT_EQ(usual.v2_base, mountinfo.v2_base) << mode;
    EXPECT_EQ(usual.v2_memory, mountinfo.v2_memory) << mode;
    EXPECT_EQ(usual.v2_pids, mountinfo.v2_pids) << mode;
    EXPECT_EQ(usual.v1_memory, mountinfo.v1_memory) << mode;
    EXPECT_EQ(usual.v1_pids, mountinfo.v1_pids) << mode;
    EXPECT_EQ(usual.v1_cpuacct, mountinfo.v1_cpuacct) << mode;
    EXPECT_EQ(usual.v1_memsw, mountinfo.v1_memsw) << mode;
  }
}

// `airlock doctor` on hosts this one is not: each absence is named, with what it costs.
bool mentions(const MechanismCheck& c, const std::string& text) {
  return c.detail.find(text) != std::string::npos || c.without.find(text) != std::string::npos;
}

TEST(Doctor, AppArmorsUserNamespaceRestrictionIsNamedForAnUnprivilegedUser) {
  HostFacts ubuntu;
  ubuntu.apparmor_restrict_userns = "1";
  auto c = apparmor_userns_check(ubuntu);
  EXPECT_FALSE(c.works);
  EXPECT_TRUE(mentions(c, "kernel.apparmor_restrict_unprivileged_userns=1")) << c.detail;
  EXPECT_TRUE(mentions(c, "userns")) << c.without;
  ubuntu.root = true;  // root is not restricted
  EXPECT_TRUE(apparmor_userns_check(ubuntu).works);
  HostFacts open;
  open.apparmor_restrict_userns = "0";
  EXPECT_TRUE(apparmor_userns_check(open).works);
}

TEST(Doctor, AContainersSeccompProfileIsNamedAsTheCause) {
  HostFacts docker;
  docker.container = "docker (/.dockerenv)";
  docker.seccomp_mode_before = 2;
  docker.seccomp_filters_before = 1;
  docker.userns_errno = EPERM;
  docker.clone3_errno = ENOSYS;
  auto userns = user_namespaces_check(docker);
  EXPECT_FALSE(userns.works);
  EXPECT_TRUE(mentions(userns, "seccomp filter is already in force")) << userns.detail;
  auto clone3 = clone3_check(docker);
  EXPECT_FALSE(clone3.works);
  EXPECT_TRUE(mentions(clone3, "seccomp filter is already in force")) << clone3.detail;
  EXPECT_FALSE(mentions(clone3, "kernel < 5.3")) << clone3.detail;
  auto container = container_check(docker);
  EXPECT_FALSE(container.works);
  EXPECT_TRUE(mentions(container, "signs of docker")) << container.detail;
  EXPECT_TRUE(mentions(container, "seccomp=unconfined")) << container.without;
  docker.seccomp_errno = EPERM;  // the outer profile refuses seccomp(2) itself
  auto seccomp = seccomp_check(docker, 100);
  EXPECT_FALSE(seccomp.works);
  EXPECT_TRUE(seccomp.required);
  EXPECT_TRUE(mentions(seccomp, "installing a filter fails")) << seccomp.detail;
  HostFacts bare;  // a kernel without clone3 says so
  bare.clone3_errno = ENOSYS;
  EXPECT_TRUE(mentions(clone3_check(bare), "kernel < 5.3"));
}

TEST(Doctor, CgroupHierarchiesAreNamedPerController) {
  CgroupFacts hybrid;
  hybrid.controllers = {{"memory", "v1"}, {"pids", "v1"}, {"hugetlb", "v2"}, {"rdma", "unmounted"}};
  auto c = cgroup_hierarchies_check(hybrid);
  EXPECT_EQ(c.detail, "hybrid (v1 and v2); v1: memory, pids; v2: hugetlb; unmounted: rdma");
  CgroupFacts pure;
  pure.controllers = {{"cpu", "v2"}, {"memory", "v2"}};
  EXPECT_EQ(cgroup_hierarchies_check(pure).detail, "pure cgroup v2; v2: cpu, memory");
}

TEST(Doctor, AMissingV2DelegationSaysWhatIsMissingAndWhatItCosts) {
  CgroupFacts facts;
  facts.unified_holds_us = true;
  facts.v2_path = "/sys/fs/cgroup/user.slice/user-1000.slice/session-1.scope";
  CgroupSupport none;  // nothing usable was found
  auto c = cgroup_v2_delegation_check(facts, none);
  EXPECT_FALSE(c.works);
  EXPECT_TRUE(mentions(c, "is not writable by uid")) << c.detail;
  EXPECT_TRUE(mentions(c, "Delegate=yes")) << c.without;
  EXPECT_TRUE(mentions(c, "warm calls run cold")) << c.without;
  facts.v2_writable = true;
  facts.v2_controllers = "cpu io";
  EXPECT_TRUE(mentions(cgroup_v2_delegation_check(facts, none), "did not delegate memory and pids"));
  facts.v2_controllers = "cpu io memory pids";
  none.why_not = "cgroup v2: X holds other processes, so its controllers cannot be delegated";
  EXPECT_TRUE(mentions(cgroup_v2_delegation_check(facts, none), "holds other processes"));
  CgroupSupport delegated;
  delegated.mode = CgroupMode::v2;
  delegated.v2_memory = delegated.v2_pids = true;
  facts.v2_subtree = "memory pids";
  EXPECT_TRUE(cgroup_v2_delegation_check(facts, delegated).works);
}

TEST(Doctor, WarmCallsSayWhyTheyRunCold) {
  CgroupSupport v2;
  v2.mode = CgroupMode::v2;
  auto works = warm_calls_check(v2, std::nullopt);
  EXPECT_TRUE(works.works);
  EXPECT_TRUE(mentions(works, "CLONE_INTO_CGROUP")) << works.detail;
  auto cold = warm_calls_check(v2, std::string("no memory limit"));
  EXPECT_FALSE(cold.works);
  EXPECT_EQ(cold.detail, "no memory limit");
  EXPECT_TRUE(mentions(cold, "\"start\": \"cold\"")) << cold.without;
}

TEST(Cgroups, ForcedNoneUsesNoCgroup) {
  auto s = detect_cgroup_support("none");
  EXPECT_EQ(s.mode, CgroupMode::none);
  EXPECT_FALSE(s.limits_memory());
  EXPECT_FALSE(s.why_not.empty());
}

}  // namespace
}  // namespace airlock::sandbox

namespace airlock::sandbox {
namespace {

TEST(SeccompPolicy, DocsListEveryRule) {
  std::ifstream in(AIRLOCK_DOCS_DIR "/sandbox.md");
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(doc.empty()) << "docs/sandbox.md is missing";
  for (const auto& rule : syscall_policy())
    EXPECT_NE(doc.find("| `" + std::string(rule.syscall) + "` |"), std::string::npos)
        << rule.syscall << " is in the policy but not in docs/sandbox.md";
}

}  // namespace
}  // namespace airlock::sandbox

namespace airlock::sandbox {
namespace {

struct SeqpacketPair {
  int a = -1, b = -1;
  SeqpacketPair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    a = sv[0];
    b = sv[1];
  }
  ~SeqpacketPair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
};

ino_t inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

TEST(FdPassing, ARecordCarriesItsTagAndDescriptors) {
  SeqpacketPair sp;
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  ASSERT_TRUE(send_fds(sp.a, 'C', pipe_fds, 2));
  ASSERT_TRUE(send_fds(sp.a, 'S', nullptr, 0));

  ReceivedFds record;
  ASSERT_EQ(receive_fds(sp.b, record, 0), 1);
  EXPECT_EQ(record.tag, 'C');
  ASSERT_EQ(record.count, 2u);
  EXPECT_FALSE(record.truncated);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_NE(record.fds[i], pipe_fds[i]);  // new descriptors for the same open files
    EXPECT_EQ(inode_of(record.fds[i]), inode_of(pipe_fds[i]));
    EXPECT_EQ(::fcntl(record.fds[i], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    ::close(record.fds[i]);
    ::close(pipe_fds[i]);
  }
  ASSERT_EQ(receive_fds(sp.b, record, 0), 1);  // records stay apart
  EXPECT_EQ(record.tag, 'S');
  EXPECT_EQ(record.count, 0u);

  EXPECT_EQ(receive_fds(sp.b, record, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  ::close(sp.a);
  sp.a = -1;
  EXPECT_EQ(receive_fds(sp.b, record, 0), 0);  // the peer went away
}

TEST(FdPassing, RefusesMoreThanARecordHolds) {
  SeqpacketPair sp;
  int fds[kMaxPassedFds + 1];
  for (auto& fd : fds) fd = sp.a;
  errno = 0;
  EXPECT_FALSE(send_fds(sp.a, 'L', fds, kMaxPassedFds + 1));
  EXPECT_EQ(errno, EINVAL);
  EXPECT_TRUE(send_fds(sp.a, 'L', fds, kMaxPassedFds));
  ReceivedFds record;
  ASSERT_EQ(receive_fds(sp.b, record, 0), 1);
  EXPECT_EQ(record.count, kMaxPassedFds);
  for (std::size_t i = 0; i < record.count; ++i) ::close(record.fds[i]);
}

}  // namespace
}  // namespace airlock::sandbox
