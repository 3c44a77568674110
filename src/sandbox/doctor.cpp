#include "sandbox/doctor.hpp"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <fstream>
#include <sstream>

#include "sandbox/cgroup.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/loopback.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/seccomp/seccomp_policy.hpp"
#include "sandbox/seccomp/syscalls.hpp"

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

bool exists(const char* path) { return ::access(path, F_OK) == 0; }

int status_field(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + ":", 0) == 0) return std::atoi(line.c_str() + name.size() + 1);
  return 0;
}

// What runs us, as far as a process can tell from inside: the sign it saw, or "".
std::string detect_container() {
  if (exists("/.dockerenv")) return "docker (/.dockerenv)";
  if (exists("/run/.containerenv")) return "podman (/run/.containerenv)";
  if (std::getenv("KUBERNETES_SERVICE_HOST")) return "kubernetes (KUBERNETES_SERVICE_HOST)";
  std::ifstream in("/proc/1/cgroup");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* kind : {"kubepods", "docker", "containerd", "lxc", "libpod"})
    if (text.find(kind) != std::string::npos) return std::string(kind) + " (/proc/1/cgroup)";
  return "";
}

// An allow-all filter, installed in a child: where an outer filter (a container runtime's
// profile) refuses seccomp(2) itself, this fails as the sandbox's would.
int probe_seccomp_install() {
  return in_child([] {
    sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    sock_fprog prog{1, &allow};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0 ? 0 : errno;
  });
}

HostFacts read_host_facts() {
  HostFacts f;
  f.root = ::geteuid() == 0;
  f.userns_errno = in_child([] { return ::unshare(CLONE_NEWUSER) == 0 ? 0 : errno; });
  f.max_user_namespaces = read_first_line("/proc/sys/user/max_user_namespaces");
  if (exists("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"))
    f.apparmor_restrict_userns =
        read_first_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  f.seccomp_mode_before = status_field("Seccomp");
  f.seccomp_filters_before = status_field("Seccomp_filters");
  f.seccomp_errno = probe_seccomp_install();
  f.clone3_errno = ::syscall(SYS_clone3, nullptr, 0) < 0 ? errno : 0;
  f.container = detect_container();
  return f;
}

const char* kFilteredAlready =
    "a seccomp filter is already in force on this process (a container runtime's profile or "
    "a service manager's SystemCallFilter=)";

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

MechanismCheck user_namespaces_check(const HostFacts& f) {
  std::string detail = f.userns_errno == 0 ? "unshare(CLONE_NEWUSER) works" : errno_text(f.userns_errno);
  if (f.userns_errno != 0) {
    detail += "; user.max_user_namespaces=" + f.max_user_namespaces;
    if (!f.apparmor_restrict_userns.empty())
      detail += ", kernel.apparmor_restrict_unprivileged_userns=" + f.apparmor_restrict_userns;
    if (f.seccomp_mode_before == 2)
      detail += std::string("; ") + kFilteredAlready + " and may refuse unshare (Docker's "
                "default profile does)";
  }
  return {"user namespaces", f.userns_errno == 0, detail,
          "refuses to run: every other namespace and the unprivileged path hang on it", true};
}

MechanismCheck apparmor_userns_check(const HostFacts& f) {
  const std::string sysctl = "kernel.apparmor_restrict_unprivileged_userns=" + f.apparmor_restrict_userns;
  const bool restricted = f.apparmor_restrict_userns == "1";
  std::string detail;
  if (!restricted)
    detail = sysctl + ": unprivileged user namespaces are not restricted";
  else if (f.root)
    detail = sysctl + ": root is not restricted; an unprivileged daemon would be (its new user "
             "namespaces get no capabilities unless an AppArmor profile allows `userns`)";
  else
    detail = sysctl + " (Ubuntu 23.10 and later): this user's new user namespaces get no "
             "capabilities, unless an AppArmor profile for the program allows `userns`";
  return {"AppArmor and user namespaces", !restricted || f.root, detail,
          "the sandbox cannot be built as this user (its first mount or id map is refused: the "
          "trial sandbox below fails): run the daemon as root, or load an AppArmor profile "
          "for airlock and airlock-serve that allows `userns,` (docs/sandbox.md), or set the "
          "sysctl to 0",
          false};
}

MechanismCheck clone3_check(const HostFacts& f) {
  const bool missing = f.clone3_errno == ENOSYS;
  std::string detail = "available";
  if (missing)
    detail = f.seccomp_mode_before == 2
                 ? std::string("ENOSYS: ") + kFilteredAlready + " and answers clone3 with ENOSYS "
                   "(container runtimes' default profiles do)"
                 : "missing (kernel < 5.3)";
  return {"clone3", !missing, detail,
          "refuses to run (namespaces, pidfd and cgroup placement are set in one call)", true};
}

MechanismCheck seccomp_check(const HostFacts& f, std::size_t instructions) {
  std::string detail;
  if (f.seccomp_errno == 0) {
    detail = std::to_string(instructions) +
             "-instruction filter (compiled with libseccomp at build time)";
    if (f.seccomp_mode_before == 2)
      detail += "; stacked under " + std::to_string(f.seccomp_filters_before) +
                " filter(s) already in force";
  } else {
    detail = "installing a filter fails: " + errno_text(f.seccomp_errno);
    if (f.seccomp_mode_before == 2) detail += std::string("; ") + kFilteredAlready;
  }
  return {"seccomp-bpf", f.seccomp_errno == 0, detail, "refuses to run", true};
}

MechanismCheck container_check(const HostFacts& f) {
  std::string detail = f.container.empty() ? "no sign of a container" : "signs of " + f.container;
  const bool filtered = f.seccomp_mode_before == 2;
  if (filtered)
    detail += "; " + std::to_string(f.seccomp_filters_before) + " seccomp filter(s) already in force";
  return {"container", !filtered, detail,
          "the outer filter's refusals are the sandbox's: with Docker's default profile, "
          "unshare, mount and clone3's namespaces are refused and no sandbox can be built. Run "
          "the container with a profile that allows them (or --security-opt seccomp=unconfined; "
          "the sandbox installs its own filter) and with an unmasked /proc "
          "(--security-opt systempaths=unconfined), or on Kubernetes use the kubernetes "
          "backend (docs/sandbox.md)",
          false};
}

MechanismCheck cgroup_hierarchies_check(const CgroupFacts& f) {
  std::vector<std::string> v1, v2, unmounted;
  for (const auto& [name, where] : f.controllers)
    (where == "v1" ? v1 : where == "v2" ? v2 : unmounted).push_back(name);
  std::vector<std::string> parts;
  if (!v1.empty()) parts.push_back("v1: " + join(v1, ", "));
  if (!v2.empty()) parts.push_back("v2: " + join(v2, ", "));
  if (!unmounted.empty()) parts.push_back("unmounted: " + join(unmounted, ", "));
  const char* kind = v1.empty() ? (v2.empty() ? "no cgroup hierarchy" : "pure cgroup v2")
                     : v2.empty() ? "cgroup v1" : "hybrid (v1 and v2)";
  return {"cgroup hierarchies", true, std::string(kind) + "; " + join(parts, "; "), "", false};
}

MechanismCheck cgroup_v2_delegation_check(const CgroupFacts& f, const CgroupSupport& cg) {
  const std::string name = "cgroup v2 delegation";
  const std::string without =
      "no memory or pids limit from cgroup v2 (the rlimits of the lines above instead) and "
      "warm calls run cold. Under systemd: Delegate=yes (deploy/systemd/airlock.service); by "
      "hand: a cgroup whose directory, cgroup.procs, cgroup.subtree_control and cgroup.threads "
      "are this user's, with memory and pids in its cgroup.controllers, holding only the "
      "daemon (docs/sandbox.md)";
  if (cg.mode == CgroupMode::v2 && cg.v2_memory && cg.v2_pids)
    return {name, true, f.v2_path + ": memory and pids are handed to the sandboxes' cgroups "
                                    "(cgroup.subtree_control: " + f.v2_subtree + ")",
            without, false};
  if (cg.mode == CgroupMode::v1 && cg.limits_memory())
    return {name, true, "not needed: memory and pids are limited on v1 here; the unified "
                        "hierarchy holds " + (f.v2_controllers.empty() ? "no controller" : f.v2_controllers),
            without, false};
  std::string detail;
  auto has = [&](const char* c) { return (" " + f.v2_controllers + " ").find(std::string(" ") + c + " ") != std::string::npos; };
  if (!f.v2_writable)
    detail = f.v2_path + " is not writable by uid " + std::to_string(::geteuid()) +
             ": nothing is delegated to this user";
  else if (!has("memory") || !has("pids"))
    detail = f.v2_path + "/cgroup.controllers is \"" + f.v2_controllers +
             "\": the parent did not delegate memory and pids";
  else
    detail = cg.why_not.empty() ? f.v2_path + ": memory and pids are not enabled in "
                                              "cgroup.subtree_control (\"" + f.v2_subtree + "\")"
                                : cg.why_not;
  return {name, false, detail, without, false};
}

MechanismCheck warm_calls_check(const CgroupSupport& cg, const std::optional<std::string>& why_not) {
  std::string detail = cg.mode == CgroupMode::v2
                           ? "v2: each call's init is cloned into the call's cgroup "
                             "(CLONE_INTO_CGROUP) in its template's tree"
                           : "v1: each call joins its cgroups through their `tasks` files";
  return {"warm calls (tools[].warm)", !why_not, why_not ? *why_not : detail,
          "every call of a warm tool runs cold (a fresh Python and import each time) and says "
          "so (\"start\": \"cold\", with why)",
          false};
}

std::vector<MechanismCheck> check_mechanisms() {
  std::vector<MechanismCheck> checks;

  const HostFacts host = read_host_facts();
  checks.push_back(user_namespaces_check(host));
  if (!host.apparmor_restrict_userns.empty()) checks.push_back(apparmor_userns_check(host));
  checks.push_back(clone3_check(host));

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
  const CgroupFacts cgroups = read_cgroup_facts(cg);
  checks.push_back(cgroup_hierarchies_check(cgroups));
  if (cgroups.unified_holds_us) checks.push_back(cgroup_v2_delegation_check(cgroups, cg));
  checks.push_back(warm_calls_check(cg, warm_calls_unsupported()));

  checks.push_back(seccomp_check(host, seccomp_program().instructions.size()));
  if (!host.container.empty() || host.seccomp_mode_before == 2)
    checks.push_back(container_check(host));
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
