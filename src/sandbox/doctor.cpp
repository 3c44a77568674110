#include "sandbox/doctor.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sandbox/cgroup.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/loopback.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/seccomp_policy.hpp"
#include "sandbox/syscalls.hpp"

namespace airlock::sandbox {
namespace {

std::string errno_text(int err) { return std::string(strerror(err)) + " (errno " + std::to_string(err) + ")"; }

// Runs `probe` in a forked child; returns 0 on success or the errno it reported.
template <typename F>
int in_child(F probe) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno;
  pid_t pid = ::fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    int err = probe();
    (void)!::write(fds[1], &err, sizeof err);
    ::_exit(0);
  }
  ::close(fds[1]);
  int err = EIO;
  (void)!::read(fds[0], &err, sizeof err);
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return err;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::vector<MechanismCheck> check_mechanisms() {
  std::vector<MechanismCheck> checks;

  int userns = in_child([] { return ::unshare(CLONE_NEWUSER) == 0 ? 0 : errno; });
  std::string userns_detail = userns == 0 ? "unshare(CLONE_NEWUSER) works" : errno_text(userns);
  if (userns != 0) {
    std::string max = read_first_line("/proc/sys/user/max_user_namespaces");
    std::string aa = read_first_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    userns_detail += "; user.max_user_namespaces=" + max;
    if (!aa.empty()) userns_detail += ", kernel.apparmor_restrict_unprivileged_userns=" + aa;
  }
  checks.push_back({"user namespaces", userns == 0, userns_detail,
                    "refuses to run: every other namespace and the unprivileged path hang on it",
                    true});

  long clone3 = ::syscall(SYS_clone3, nullptr, 0);
  bool has_clone3 = clone3 < 0 && errno != ENOSYS;
  checks.push_back({"clone3", has_clone3, has_clone3 ? "available" : "missing (kernel < 5.3)",
                    "refuses to run (namespaces, pidfd and cgroup placement are set in one call)",
                    true});

  int pidfd = sys::pidfd_open(::getpid());
  checks.push_back({"pidfd", pidfd >= 0, pidfd >= 0 ? "pidfd_open works" : errno_text(errno),
                    "refuses to run (supervision waits on the pidfd)", true});
  if (pidfd >= 0) ::close(pidfd);

  sys::MountAttr attr{};  // an empty change is a successful no-op where the syscall exists
  bool has_setattr = sys::mount_setattr(-1, "", 0, &attr) == 0 || errno != ENOSYS;
  checks.push_back({"mount API (open_tree, mount_setattr)", has_setattr,
                    has_setattr ? "available" : "missing (kernel < 5.12)",
                    "refuses to run (binds are cloned and made read-only recursively with it)",
                    true});

  const auto& cg = cgroup_support();
  auto cg_line = [&](const std::string& what, bool works, const std::string& where,
                     const std::string& without) {
    checks.push_back({what, works, works ? where : (cg.why_not.empty() ? "not available" : cg.why_not),
                      without, false});
  };
  std::string mode = cg.mode == CgroupMode::v2 ? "v2" : cg.mode == CgroupMode::v1 ? "v1" : "none";
  cg_line("cgroup memory", cg.limits_memory(),
          mode + " at " + (cg.mode == CgroupMode::v2 ? cg.v2_base : cg.v1_memory) +
              (cg.mode == CgroupMode::v1 && !cg.v1_memsw ? " (no swap accounting)" : ""),
          "RLIMIT_AS per process instead: a program that allocates too much gets ENOMEM "
          "(verdict exit_nonzero, not memory_limit); memory_peak_bytes is the largest single "
          "process's RSS");
  cg_line("cgroup pids", cg.limits_pids(),
          mode + " at " + (cg.mode == CgroupMode::v2 ? cg.v2_base : cg.v1_pids),
          "RLIMIT_NPROC in the sandbox's own user namespace instead; pids_peak is null");
  cg_line("cgroup cpu accounting", cg.measures_cpu(),
          mode + " at " + (cg.mode == CgroupMode::v2 ? cg.v2_base : cg.v1_cpuacct),
          "--cpu-time falls back to RLIMIT_CPU, which counts each process separately; usage "
          "comes from the init's rusage");
  if (cg.mode == CgroupMode::v2)
    checks.push_back({"cgroup v2 placement and kill", true,
                      "CLONE_INTO_CGROUP and cgroup.kill under " + cg.v2_base, "", false});

  const auto& program = seccomp_program();
  bool seccomp_works = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  checks.push_back({"seccomp-bpf", seccomp_works,
                    seccomp_works ? std::to_string(program.instructions.size()) +
                                        "-instruction filter (compiled with libseccomp at build time)"
                                  : errno_text(errno),
                    "refuses to run", true});
  std::string actions = read_first_line("/proc/sys/kernel/seccomp/actions_avail");
  bool notif = actions.find("user_notif") != std::string::npos;
  checks.push_back({"seccomp user notification", notif,
                    notif ? "violations are reported to the supervisor with the syscall's name"
                          : "actions available: " + actions,
                    "violations kill with SIGSYS and the verdict cannot name the syscall", false});

  int abi = landlock_abi();
  std::string ll_detail = "ABI " + std::to_string(abi);
  if (abi >= 4) ll_detail += " (filesystem, TCP bind/connect";
  else if (abi >= 1) ll_detail += " (filesystem only";
  if (abi >= 6) ll_detail += ", signal and abstract-socket scoping";
  if (abi >= 1) ll_detail += ")";
  checks.push_back({"Landlock", abi > 0, abi > 0 ? ll_detail : "not enabled in this kernel",
                    "no second filesystem layer: the mount namespace alone decides what is "
                    "visible; TCP is limited by the empty network namespace only",
                    false});

  // The sandbox's loopback with large segments, which lets the egress relay keep up with a
  // direct connection (docs/egress.md).
  constexpr int kSmallSegments = -1;
  int lo = in_child([] {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) return errno;
    LoopbackResult result = bring_up_loopback();
    if (result.err != 0) return result.err;
    return result.big_segments ? 0 : kSmallSegments;
  });
  const std::string big = std::to_string((kLoopbackSegmentBytes + 1023) / 1024) + " KiB";
  checks.push_back({"loopback segments (for egress throughput)", lo == 0,
                    lo == 0                ? "the sandbox's lo takes " + big + " segments"
                    : lo == kSmallSegments ? "this kernel keeps lo at 64 KiB segments (BIG TCP "
                                             "for IPv4 needs Linux 6.3)"
                                           : errno_text(lo),
                    "egress is relayed at about half the throughput of a direct connection; "
                    "nothing else changes",
                    false});

  // End to end: run /bin/true in a sandbox with default limits.
  Spec spec;
  spec.argv = {"/bin/true"};
  spec.limits.wall_time = std::chrono::seconds(10);
  Outcome outcome = run(spec);
  checks.push_back({"trial sandbox (/bin/true)", outcome.verdict == Verdict::ok, outcome.message,
                    "nothing can run; the line above that failed says why", true});

  // --tty: a sandbox with a pty from a devpts instance of its own, running `test -t 0`.
  Spec tty_spec = spec;
  tty_spec.argv = {"/bin/sh", "-c", "test -t 0 && test -t 1"};
  tty_spec.tty = Terminal{};
  tty_spec.output_mode = OutputMode::collect;
  Outcome tty = run(tty_spec);
  checks.push_back({"terminal (devpts new instance, for --tty)", tty.verdict == Verdict::ok,
                    tty.verdict == Verdict::ok ? "a pty of the sandbox's own devpts instance works"
                                               : tty.message,
                    "--tty refuses to run (a setup error naming the step); runs without it are "
                    "unaffected",
                    false});
  return checks;
}

}  // namespace airlock::sandbox
