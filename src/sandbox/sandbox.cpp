// The supervisor side of a sandbox: create, release, supervise, judge, clean up.
#include "sandbox/sandbox.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "common/no_sigpipe.hpp"
#include "common/units.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/child.hpp"
#include "sandbox/fd_passing.hpp"
#include "sandbox/plan.hpp"
#include "sandbox/seccomp/seccomp_policy.hpp"
#include "sandbox/seccomp/syscalls.hpp"
#include "sandbox/verdict.hpp"
#include "sandbox/warm/warm_plan.hpp"

namespace airlock::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

Error setup_error(const std::string& what) { return Error::make("setup_error", what); }
Error setup_errno(const std::string& what, int err) {
  return setup_error(what + ": " + strerror(err) + " (errno " + std::to_string(err) + ")");
}

struct Pipe {
  UniqueFd read, write;
};

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return setup_errno("pipe2", errno);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

bool write_proc_file(pid_t pid, const char* name, const std::string& text) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  return fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// --tty, when the input ends: the terminal's end-of-file character, as a user would type it
// (twice after a partial line: the first only ends the line). Nothing in non-canonical mode.
std::string terminal_eof(int master, bool partial_line) {
  termios mode{};
  if (::tcgetattr(master, &mode) != 0 || !(mode.c_lflag & ICANON)) return "";
  return std::string(partial_line ? 2 : 1, static_cast<char>(mode.c_cc[VEOF]));
}

// Collected or forwarded output of one stream, with its cap.
struct StreamSink {
  int source = -1;  // the read end, owned by State
  std::string* collected = nullptr;
  int forward_fd = -1;
  std::uint64_t limit = 0;
  std::uint64_t kept = 0;
  std::uint64_t discarded = 0;
  bool open = false;

  // Returns false at EOF.
  bool drain() {
    std::array<char, 65536> buf;
    for (;;) {
      ssize_t n = ::read(source, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return true;
      if (n <= 0) return false;
      auto take = static_cast<std::size_t>(
          std::min<std::uint64_t>(static_cast<std::uint64_t>(n), limit - kept));
      if (take > 0) {
        if (collected) collected->append(buf.data(), take);
        if (forward_fd >= 0) (void)write_all(forward_fd, std::string_view(buf.data(), take));
        kept += take;
      }
      discarded += static_cast<std::uint64_t>(n) - take;
    }
  }
};

}  // namespace

struct Sandbox::State {
  Spec spec;
  ChildPlan plan;
  SandboxCgroup cgroup;
  pid_t pid = -1;
  UniqueFd pidfd;
  UniqueFd stdin_w, stdout_r, stderr_r, status_r, control, notify, kill_event;
  UniqueFd go_w;  // held open while the sandbox lives: the child sees it close if we die
  UniqueFd tty_master;  // --tty: read as stdout; stdin_w is a second descriptor for it
  UniqueFd tty_slave;   // --tty: held so the master is readable whenever the program reopens it
  std::vector<UniqueFd> listeners;
  std::size_t expected_listeners = 0;  // the plan's (a warm template's calls open its ports)
  Clock::time_point started;
  bool reaped = false;
  bool warm = false;  // started by a warm template: init is not our child (start_warm_call)
  bool handed_over = false;  // hand_over: a prepared warm call got its call
};

Sandbox::Sandbox(std::unique_ptr<State> state) : state_(std::move(state)) {}

Sandbox::~Sandbox() {
  if (state_ && !state_->reaped && state_->pidfd) {
    sys::pidfd_send_signal(state_->pidfd.get(), SIGKILL);
    state_->cgroup.kill_all();
    siginfo_t info{};
    ::waitid(P_PIDFD, static_cast<id_t>(state_->pidfd.get()), &info, WEXITED | __WALL);
  }
}

pid_t Sandbox::pid() const { return state_->pid; }

std::optional<CpuTime> Sandbox::cpu_used() const {
  const CgroupStats stats = state_->cgroup.read_cpu();
  if (!stats.cpu_user_ns || !stats.cpu_sys_ns) return std::nullopt;
  return CpuTime{*stats.cpu_user_ns, *stats.cpu_sys_ns};
}

Status Sandbox::freeze(bool frozen) const { return state_->cgroup.freeze(frozen); }

std::shared_ptr<WarmCgroupTree> Sandbox::warm_cgroup_tree() const { return state_->cgroup.warm_tree(); }

std::vector<UniqueFd> Sandbox::take_listeners() { return std::move(state_->listeners); }
UniqueFd Sandbox::take_stdin() { return std::move(state_->stdin_w); }
UniqueFd Sandbox::take_stdout() { return std::move(state_->stdout_r); }
UniqueFd Sandbox::take_stderr() {
  if (state_->spec.output_mode != OutputMode::caller) return {};
  return std::move(state_->stderr_r);
}

void Sandbox::kill() {
  std::uint64_t one = 1;
  if (state_->kill_event) (void)!::write(state_->kill_event.get(), &one, sizeof one);
}

Status validate_spec(const Spec& spec) {
  auto bad = [](const std::string& m) { return Error::make("invalid_argument", m); };
  if (spec.argv.empty() || spec.argv.front().empty()) return bad("no command to run");
  for (const auto& a : spec.argv)
    if (a.find('\0') != std::string::npos) return bad("an argument contains a NUL byte");
  for (const auto& [k, v] : spec.env) {
    bool ok = !k.empty() && !std::isdigit(static_cast<unsigned char>(k[0]));
    for (char c : k) ok &= (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) return bad("environment variable name '" + k + "' is not a valid name");
    if (v.find('\0') != std::string::npos) return bad("environment value of " + k + " has a NUL");
  }
  auto workdir = normalize_absolute(spec.workdir);
  if (!workdir) return workdir.error();
  for (const char* reserved : {"/", "/proc", "/dev", "/usr", "/etc"})
    if (*workdir == reserved || (std::string(reserved) != "/" &&
                                 workdir->rfind(std::string(reserved) + "/", 0) == 0))
      return bad("work dir " + *workdir + " would shadow " + reserved);
  const auto& l = spec.limits;
  if (l.wall_time.count() <= 0) return bad("the wall-clock timeout must be positive");
  if (l.setup_time.count() <= 0) return bad("the setup timeout must be positive");
  if (l.cpu_time && l.cpu_time->count() <= 0) return bad("the CPU-time limit must be positive");
  if (l.memory_bytes < (4ULL << 20)) return bad("the memory limit must be at least 4M");
  if (l.pids < 1) return bad("the process limit must be at least 1");
  if (l.disk_bytes < (64ULL << 10)) return bad("the disk limit must be at least 64K");
  if (l.open_files < 8) return bad("the open-file limit must be at least 8");
  if (spec.network.loopback_listeners.size() > 64) return bad("at most 64 listeners");
  for (auto port : spec.network.loopback_listeners)
    if (port == 0) return bad("listener port 0 is not allowed");
  if (spec.hostname.empty() || spec.hostname.size() > 64) return bad("hostname must be 1-64 bytes");
  if (spec.stdin_source.kind == StdinSource::Kind::fd && spec.stdin_source.fd < 0)
    return bad("stdin fd is invalid");
  if (spec.tty) {
    if (spec.output_mode == OutputMode::caller)
      return bad("a terminal cannot be combined with caller-owned stdio");
    if (spec.tty->rows == 0 || spec.tty->columns == 0)
      return bad("the terminal's window size must be at least 1x1");
  }
  if (spec.session_control_fd >= 0 && (spec.warm_template_fd >= 0 || spec.tty))
    return bad("a session is neither a warm template nor a terminal run");
  return {};
}

std::optional<std::string> warm_calls_unsupported() {
  const CgroupSupport& cg = cgroup_support();
  // A warm call's init is not our child: no rusage, so only the cgroup can limit its memory
  // and measure its CPU; without them its verdicts would not be a cold run's.
  if (!cg.limits_memory() || !cg.measures_cpu())
    return "warm calls need a cgroup memory limit and CPU accounting, which this host does not "
           "give us (" + (cg.why_not.empty() ? std::string("cgroup: none") : cg.why_not) + ")";
  if (cg.mode == CgroupMode::v2 && !sys::kHasClone3OnStack)
    return "warm calls on cgroup v2 clone each call's init into its cgroup with clone3 on a "
           "stack of its own, written for x86-64 only";
  return std::nullopt;
}

bool same_sandbox(const Spec& a, const Spec& b) {
  auto same_binds = [](const std::vector<Bind>& x, const std::vector<Bind>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const Bind& p, const Bind& q) {
      return p.source == q.source && p.dest == q.dest && p.writable == q.writable;
    });
  };
  const Limits &la = a.limits, &lb = b.limits;
  return a.argv == b.argv && a.env == b.env && same_binds(a.binds, b.binds) &&
         a.workdir == b.workdir && a.hostname == b.hostname &&
         a.network.loopback_listeners == b.network.loopback_listeners &&
         a.network.tcp_connect_ports == b.network.tcp_connect_ports &&
         a.tty.has_value() == b.tty.has_value() && a.output_mode == b.output_mode &&
         a.warm_template_fd == b.warm_template_fd && la.cpu_time == lb.cpu_time &&
         la.memory_bytes == lb.memory_bytes && la.pids == lb.pids &&
         la.disk_bytes == lb.disk_bytes && la.open_files == lb.open_files;
}

namespace {

// The descriptors between the supervisor and the child, both ends, until clone3 splits them.
struct Channels {
  Pipe in, out, err, errp, status, go;
  UniqueFd control_parent, control_child;
};

Status make_channels(Channels& c) {
  for (Pipe* p : {&c.in, &c.out, &c.err, &c.errp, &c.status, &c.go}) {
    auto pipe = make_pipe();
    if (!pipe) return pipe.error();
    *p = std::move(*pipe);
  }
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
    return setup_errno("socketpair", errno);
  c.control_parent.reset(sp[0]);
  c.control_child.reset(sp[1]);
  return {};
}

void give_child_its_ends(ChildPlan& cp, const Channels& c, bool cgroups_after_clone) {
  cp.stdin_fd = c.in.read.get();
  cp.stdout_fd = c.out.write.get();
  cp.stderr_fd = c.err.write.get();
  cp.error_fd = c.errp.write.get();
  cp.control_fd = c.control_child.get();
  cp.status_fd = c.status.write.get();
  cp.go_fd = c.go.read.get();
  cp.join_cgroups_from_control = cgroups_after_clone;
}

// clone3 into new namespaces (and on v2 straight into the cgroup); the child runs its plan.
Status clone_child(Sandbox::State& st) {
  int pidfd = -1;
  sys::CloneArgs args{};
  // The network namespace comes from the child (child.cpp, join_network_namespace), made
  // while the rest is set up.
  args.flags = sys::kClonePidfd | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC |
               CLONE_NEWUTS;
  if (st.cgroup.clone_into_fd() >= 0) {
    args.flags |= sys::kCloneIntoCgroup;
    args.cgroup = static_cast<std::uint64_t>(st.cgroup.clone_into_fd());
    // A warm template keeps our cgroup namespace: where namespaces are delegation boundaries
    // (nsdelegate, as systemd mounts cgroup2), one rooted at its leaf would forbid it to clone
    // its calls into their leaves beside it. Its calls get namespaces of their own.
    if (!st.cgroup.warm_tree()) args.flags |= CLONE_NEWCGROUP;
  }
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = 0;  // no SIGCHLD: only our pidfd waits for this child (__WALL)
  long pid = sys::clone3(&args);
  if (pid < 0) return setup_errno("clone3 (new user, pid, mount, ipc, uts namespaces)", errno);
  if (pid == 0) child_main(st.plan);
  st.pid = static_cast<pid_t>(pid);
  st.pidfd.reset(pidfd);
  return {};
}

// Keeps our ends; closes our copies of the child's now, so EOFs mean what they should.
void keep_supervisor_ends(Sandbox::State& st, Channels& c) {
  st.stdin_w = std::move(c.in.write);
  st.stdout_r = std::move(c.out.read);
  st.stderr_r = std::move(c.err.read);
  st.status_r = std::move(c.status.read);
  st.control = std::move(c.control_parent);
  c.in.read.reset();
  c.out.write.reset();
  c.err.write.reset();
  c.errp.write.reset();
  c.status.write.reset();
  c.go.read.reset();
  c.control_child.reset();
}

Status write_id_maps(pid_t pid) {
  const HostIds ids = host_ids();
  if (!ids.root_mode && !write_proc_file(pid, "setgroups", "deny"))
    return setup_errno("writing setgroups deny", errno);
  if (!write_proc_file(pid, "uid_map",
                       std::to_string(kSandboxUid) + " " + std::to_string(ids.uid) + " 1\n"))
    return setup_errno("writing uid_map", errno);
  if (!write_proc_file(pid, "gid_map",
                       std::to_string(kSandboxGid) + " " + std::to_string(ids.gid) + " 1\n"))
    return setup_errno("writing gid_map", errno);
  return {};
}

// The child waits on the go pipe until its id maps exist; the run's clock starts here.
Status release_child(Sandbox::State& s, UniqueFd& go_w) {
  char one = 1;
  s.started = Clock::now();
  if (write_without_sigpipe(go_w.get(), &one, 1) != 1)
    return setup_errno("releasing the sandbox", errno);
  s.go_w = std::move(go_w);
  return {};
}

// v1: the cgroups, made while the child builds its root, and sent to it to join. Returns the
// errno of a failed send (0 if none): the child may have died first, and its report says why.
Result<int> hand_over_cgroups(Sandbox::State& s) {
  auto cgroup = SandboxCgroup::create(s.spec.limits);
  if (!cgroup) return cgroup.error();  // ~Sandbox kills the child
  s.cgroup = std::move(*cgroup);
  auto join_fds = s.cgroup.open_join_fds();
  if (!join_fds) return join_fds.error();
  if (join_fds->size() > static_cast<std::size_t>(ChildPlan::kMaxCgroupJoinFds))
    return setup_error("more cgroup hierarchies than the child can join");
  int fds[ChildPlan::kMaxCgroupJoinFds];
  for (std::size_t i = 0; i < join_fds->size(); ++i) fds[i] = (*join_fds)[i].get();
  if (!send_fds(s.control.get(), 'C', fds, join_fds->size())) return errno;
  return 0;
}

// What the child's error pipe said: execve closed it, a failed step's report arrived, or
// neither happened by the deadline.
enum class SetupOutcome { exec_reached, step_failed, timed_out };

// Reads the child's error pipe until execve closes it (EOF) or a whole report has arrived.
SetupOutcome read_setup_report(int error_fd, Clock::time_point deadline, ChildError& report) {
  std::size_t got = 0;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return SetupOutcome::timed_out;
    pollfd pfd{error_fd, POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    ssize_t n = ::read(error_fd, reinterpret_cast<char*>(&report) + got, sizeof report - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
    if (got == sizeof report) break;
  }
  return got == sizeof report ? SetupOutcome::step_failed : SetupOutcome::exec_reached;
}

// Waits for execve, or returns the step the child reported failing.
Status await_exec(const Sandbox::State& s, int error_fd) {
  ChildError report{};
  const auto bound = std::min(s.spec.limits.wall_time, s.spec.limits.setup_time);
  const SetupOutcome outcome = read_setup_report(error_fd, s.started + bound, report);
  if (outcome == SetupOutcome::timed_out)
    return setup_error("the sandbox did not finish setting up within " + std::to_string(bound.count()) +
                       " ms (a step before its program starts hung); it was killed");
  if (outcome == SetupOutcome::exec_reached) return {};
  report.step[sizeof report.step - 1] = '\0';
  std::string step = report.step;
  if (step.rfind("execve ", 0) == 0 && report.err == ENOENT)
    return setup_error("command not found in the sandbox: " + step.substr(7));
  return setup_errno("sandbox setup failed at " + step, report.err);
}

// Descriptors the child sent before exec: listening sockets, then the seccomp listener.
Status receive_descriptors(Sandbox::State& s) {
  for (ReceivedFds record; receive_fds(s.control.get(), record, MSG_DONTWAIT) > 0;) {
    for (std::size_t i = 0; i < record.count; ++i) {
      UniqueFd fd(record.fds[i]);
      if (record.tag == 'L')
        s.listeners.push_back(std::move(fd));
      else if (record.tag == 'S' && i == 0)
        s.notify = std::move(fd);
      else if (record.tag == 'P' && i == 0 && s.warm)
        s.pidfd = std::move(fd);
      else if (record.tag == 'T' && record.count == 2 && s.spec.tty)
        (i == 0 ? s.tty_master : s.tty_slave) = std::move(fd);
    }
  }
  s.control.reset();
  if (s.listeners.size() != s.expected_listeners)
    return setup_error("the sandbox did not hand over its listening sockets");
  return {};
}

// --tty: the program's stdio is the pty slave: the pipes' other ends are gone. The master is
// both its stdin (a second descriptor, so ending the input does not hang the pty up) and
// its stdout.
Status adopt_terminal(Sandbox::State& s) {
  if (!s.tty_master || !s.tty_slave)
    return setup_error("the sandbox did not hand over its terminal");
  s.stdout_r.reset();
  s.stderr_r.reset();
  s.stdin_w.reset(::fcntl(s.tty_master.get(), F_DUPFD_CLOEXEC, 0));
  if (!s.stdin_w) return setup_errno("duplicating the pty master", errno);
  return {};
}

}  // namespace

// The steps in order; each failure is a setup_error naming its step.
Result<std::unique_ptr<Sandbox>> Sandbox::launch(const Spec& spec) {
  if (auto r = validate_spec(spec); !r) return r.error();
  auto st = std::make_unique<State>();
  st->spec = spec;

  // v2: the cgroup exists before clone3, which starts the child in it (CLONE_INTO_CGROUP).
  // v1: we create the cgroups once the child is released, while it builds its root, and it
  // moves itself into them before it starts the program (see join_cgroups in child.cpp).
  const bool cgroups_after_clone = cgroup_support().mode == CgroupMode::v1;
  Spec planned = spec;
  if (!cgroups_after_clone) {
    // v2: a warm template's in a tree its calls' cgroups are made in, which it sees read-only.
    const bool warm_tree = spec.warm_template_fd >= 0 && cgroup_support().mode == CgroupMode::v2;
    auto cgroup = warm_tree ? SandboxCgroup::create_warm_template(spec.limits, host_ids().uid)
                            : SandboxCgroup::create(spec.limits);
    if (!cgroup) return cgroup.error();
    st->cgroup = std::move(*cgroup);
    if (warm_tree) planned.binds.push_back({st->cgroup.warm_tree_dir(), kWarmCgroupTreeInSandbox, false});
  }
  auto plan = make_child_plan(planned, cgroup_support());
  if (!plan) return plan.error();
  st->plan = std::move(*plan);
  st->expected_listeners = st->plan.listeners.size();

  Channels ch;
  if (auto r = make_channels(ch); !r) return r.error();
  st->kill_event.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!st->kill_event) return setup_errno("eventfd", errno);
  give_child_its_ends(st->plan, ch, cgroups_after_clone);
  if (auto r = clone_child(*st); !r) return r.error();
  keep_supervisor_ends(*st, ch);
  auto sandbox = std::unique_ptr<Sandbox>(new Sandbox(std::move(st)));
  State& s = *sandbox->state_;  // from here on, an error return kills the child (~Sandbox)

  if (auto r = write_id_maps(s.pid); !r) return r.error();
  if (auto r = release_child(s, ch.go.write); !r) return r.error();
  int handoff_errno = 0;
  if (cgroups_after_clone) {
    auto sent = hand_over_cgroups(s);
    if (!sent) return sent.error();
    handoff_errno = *sent;
  }
  if (auto r = await_exec(s, ch.errp.read.get()); !r) return r.error();
  if (handoff_errno != 0) return setup_errno("sending the sandbox its cgroups", handoff_errno);
  if (auto r = receive_descriptors(s); !r) return r.error();
  if (s.spec.tty) {
    if (auto r = adopt_terminal(s); !r) return r.error();
  }
  return sandbox;
}

namespace {

// A warm call's descriptors, in the order warm_child.cpp expects them (0-5, then cgroups).
Status send_warm_call(int template_fd, std::mutex& send_mu, const Channels& ch,
                      const std::string& plan_text, const std::vector<UniqueFd>& cgroup_fds) {
  std::vector<int> fds = {ch.in.read.get(),       ch.out.write.get(),    ch.err.write.get(),
                          ch.errp.write.get(),    ch.control_child.get(), ch.status.write.get()};
  for (const auto& fd : cgroup_fds) fds.push_back(fd.get());
  std::lock_guard lock(send_mu);  // the plan and its descriptors are two records, in order
  if (::send(template_fd, plan_text.data(), plan_text.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(plan_text.size()))
    return setup_errno("sending the call to the warm template", errno);
  if (!send_fds(template_fd, 'W', fds.data(), fds.size()))
    return setup_errno("sending the call's descriptors to the warm template", errno);
  return {};
}

}  // namespace

// The cold launch's steps where they apply; what clone3, the id maps and the root do for a
// cold run, the template's child does for itself (warm_child.cpp).
Result<std::unique_ptr<Sandbox>> Sandbox::start_warm_call(
    int template_fd, std::mutex& send_mu, const Spec& spec,
    const std::shared_ptr<WarmCgroupTree>& cgroup_tree) {
  if (auto r = validate_spec(spec); !r) return r.error();
  if (spec.tty) return setup_error("a warm call takes no terminal");
  if (auto why = warm_calls_unsupported()) return setup_error(*why);
  auto st = std::make_unique<State>();
  st->spec = spec;
  st->warm = true;
  // v1: the call's init and tool join through the `tasks` files sent with the call. v2: a leaf
  // of the template's tree, into which the template clones the call's init.
  const bool v2 = cgroup_support().mode == CgroupMode::v2;
  auto cgroup = v2 ? SandboxCgroup::create_warm_call(spec.limits, cgroup_tree)
                   : SandboxCgroup::create(spec.limits);
  if (!cgroup) return cgroup.error();
  st->cgroup = std::move(*cgroup);
  auto join_fds = st->cgroup.open_join_fds();
  if (!join_fds) return join_fds.error();
  auto plan = make_child_plan(spec, cgroup_support());
  if (!plan) return plan.error();
  plan->warm_cgroup = st->cgroup.name_in_warm_tree();
  st->expected_listeners = plan->listeners.size();
  Channels ch;
  if (auto r = make_channels(ch); !r) return r.error();
  st->kill_event.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!st->kill_event) return setup_errno("eventfd", errno);
  if (auto r = send_warm_call(template_fd, send_mu, ch, encode_warm_call_plan(*plan), *join_fds);
      !r)
    return r.error();
  join_fds->clear();
  keep_supervisor_ends(*st, ch);
  st->started = Clock::now();  // the hand-over: the call's limits count from here
  auto sandbox = std::unique_ptr<Sandbox>(new Sandbox(std::move(st)));
  State& s = *sandbox->state_;
  if (auto r = await_exec(s, ch.errp.read.get()); !r) return r.error();
  if (auto r = receive_descriptors(s); !r) return r.error();
  if (!s.pidfd) return setup_error("the warm template's child did not start (no init pidfd)");
  return sandbox;
}

namespace {

// Whether a descriptor has something to say (for a pidfd: the process has ended), now.
bool readable_now(int fd) {
  if (fd < 0) return false;
  pollfd pfd{fd, POLLIN, 0};
  int rc;
  do rc = ::poll(&pfd, 1, 0);
  while (rc < 0 && errno == EINTR);
  return rc != 0;
}

}  // namespace

Status Sandbox::hand_over(const Spec& call) {
  State& s = *state_;
  if (!s.warm || s.handed_over) return setup_error("only a prepared warm call is handed over, once");
  if (!same_sandbox(s.spec, call))
    return setup_error("the call needs another sandbox than the one prepared for it");
  if (auto r = validate_spec(call); !r) return r.error();
  if (readable_now(s.pidfd.get())) return setup_error("the prepared warm call's child has ended");
  // A seccomp notification pending: it did something it may not before it had any input.
  if (readable_now(s.notify.get()))
    return setup_error("the prepared warm call's child tripped its filter while it waited");
  s.spec = call;
  s.cgroup.count_from_now();
  s.started = Clock::now();
  s.handed_over = true;
  return {};
}

namespace {

// stdin: bytes or a host fd, pumped through the pipe (the pty master with --tty); nothing
// means EOF at once.
class StdinPump {
 public:
  StdinPump(UniqueFd& pipe, bool tty, int source_fd)
      : pipe_(pipe), tty_(tty), source_fd_(source_fd) {}

  void start(const StdinSource& source) {
    if (source.kind == StdinSource::Kind::bytes) {
      buffer_ = source.bytes;
    } else if (source.kind == StdinSource::Kind::fd) {
      source_open_ = true;
    }
    set_nonblocking(pipe_.get());
    if (buffer_.empty() && !source_open_) end();
  }
  bool wants_to_write() const { return pipe_ && offset_ < buffer_.size(); }
  bool wants_to_read() const { return pipe_ && offset_ >= buffer_.size() && source_open_; }

  void on_writable() {
    ssize_t w = write_without_sigpipe(pipe_.get(), buffer_.data() + offset_,
                                      buffer_.size() - offset_);
    if (w > 0) {
      offset_ += static_cast<std::size_t>(w);
      partial_line_ = buffer_[offset_ - 1] != '\n';
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      pipe_.reset();  // the program closed its stdin
    } else if (offset_ == buffer_.size() && !source_open_) {
      end();
    }
  }

  void on_source_readable() {
    std::array<char, 65536> buf;
    ssize_t r = ::read(source_fd_, buf.data(), buf.size());
    if (r > 0) {
      buffer_.assign(buf.data(), static_cast<std::size_t>(r));
      offset_ = 0;
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
      source_open_ = false;
      end();
    }
  }

 private:
  // Called once everything is written and the source is done. With a terminal, the input
  // ends with its end-of-file characters, written like any input (the pty may be full).
  void end() {
    if (tty_ && pipe_ && !eof_queued_) {
      eof_queued_ = true;
      buffer_ = terminal_eof(pipe_.get(), partial_line_);
      offset_ = 0;
      if (!buffer_.empty()) return;
    }
    pipe_.reset();
  }

  UniqueFd& pipe_;  // State::stdin_w
  const bool tty_;
  const int source_fd_;
  std::string buffer_;
  std::size_t offset_ = 0;
  bool source_open_ = false;
  bool partial_line_ = false;  // --tty: the input so far does not end with a newline
  bool eof_queued_ = false;    // --tty: the end-of-file characters are the last input
};

// One poll round: the descriptors watched, and where each event source landed.
struct PollSet {
  static constexpr std::size_t kNone = SIZE_MAX;
  std::array<pollfd, 10> fds{};
  std::size_t n = 0;

  std::size_t add_if(bool watch, int fd, short events) {
    if (!watch) return kNone;
    fds[n] = pollfd{fd, events, 0};
    return n++;
  }
  bool ready(std::size_t i) const { return i != kNone && fds[i].revents != 0; }
};

struct Slots {
  std::size_t pid, timer, kill, stop, notify, out, err, in, src, resize;
};

// How the program ended, as its init saw it (absent if init itself was killed).
std::optional<ExitReport> read_exit_report(int status_fd) {
  ExitReport r{};
  set_nonblocking(status_fd);
  if (::read(status_fd, &r, sizeof r) == static_cast<ssize_t>(sizeof r)) return r;
  return std::nullopt;
}

// Usage: cgroup counters where we have them, the init's rusage (which includes every
// process it reaped) otherwise.
void fill_usage(Usage& u, const CgroupStats& stats, const rusage& usage) {
  auto ms = [](const timeval& tv) {
    return static_cast<std::uint64_t>(tv.tv_sec) * 1000 +
           static_cast<std::uint64_t>(tv.tv_usec) / 1000;
  };
  u.cpu_user_ms = stats.cpu_user_ns ? *stats.cpu_user_ns / 1'000'000 : ms(usage.ru_utime);
  u.cpu_sys_ms = stats.cpu_sys_ns ? *stats.cpu_sys_ns / 1'000'000 : ms(usage.ru_stime);
  u.memory_peak_bytes = stats.memory_peak_bytes
                            ? *stats.memory_peak_bytes
                            : static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  u.pids_peak = stats.pids_peak;
  if (stats.pids_refused) u.pids_limit_hit = *stats.pids_refused > 0;
}

// Sandbox::wait, as one handler per event source around a poll loop; the verdict is judge()'s.
class Supervisor {
 public:
  Supervisor(Sandbox::State& s, Outcome& outcome);
  void supervise();
  void finish();

 private:
  void open_output_sinks();
  void start_timer();
  void query_notification_size();
  Slots watch(PollSet& ps) const;
  void dispatch(const PollSet& ps, const Slots& at);
  void kill_all();
  void arm_timer();
  void schedule_cpu_check(std::uint64_t used_ns);
  void enforce_output_limit();
  void on_resize();
  void on_seccomp_notification(short revents);
  void on_stop();
  void on_kill_event();
  void on_timer();
  void on_init_exit();
  void release_sandbox();
  void record_exit(const std::optional<ExitReport>& report);

  Sandbox::State& s_;
  const Spec& spec_;
  Outcome& outcome_;
  RunFacts facts_;
  StreamSink out_, err_;
  StdinPump stdin_;
  UniqueFd timer_;
  Clock::time_point wall_deadline_, next_cpu_check_;
  bool cpu_budgeted_ = false;
  std::uint64_t cpu_budget_ns_ = 0;
  unsigned cpus_ = 1;
  std::uint32_t notif_size_ = 0;
  bool init_exited_ = false;
  bool follow_window_ = false;
  siginfo_t info_{};
  rusage usage_{};
};

Supervisor::Supervisor(Sandbox::State& s, Outcome& outcome)
    : s_(s),
      spec_(s.spec),
      outcome_(outcome),
      stdin_(s.stdin_w, static_cast<bool>(s.tty_master), s.spec.stdin_source.fd) {
  facts_.command = spec_.argv.front();
  open_output_sinks();
  if (spec_.output_mode != OutputMode::caller && s_.stdin_w) stdin_.start(spec_.stdin_source);
  start_timer();
  query_notification_size();
  follow_window_ =
      s_.tty_master && spec_.tty->resize_event_fd >= 0 && spec_.tty->size_source_fd >= 0;
}

void Supervisor::open_output_sinks() {
  if (spec_.output_mode != OutputMode::caller && s_.stdout_r) {
    out_.source = s_.stdout_r.get();
    out_.open = true;
  } else if (s_.tty_master) {
    out_.source = s_.tty_master.get();  // everything the program writes to its terminal
    out_.open = true;
  }
  if (s_.stderr_r) {
    err_.source = s_.stderr_r.get();
    err_.open = true;
  }
  for (auto* sink : {&out_, &err_}) {
    sink->limit = spec_.limits.output_bytes;
    if (sink->open) set_nonblocking(sink->source);
  }
  if (spec_.output_mode == OutputMode::forward) {
    out_.forward_fd = spec_.forward_stdout_fd;
    err_.forward_fd = spec_.forward_stderr_fd;
  } else {
    out_.collected = &outcome_.stdout_data;
    err_.collected = &outcome_.stderr_data;
  }
}

// One timer for the wall-clock deadline and, with cgroup CPU accounting, the CPU checks.
void Supervisor::start_timer() {
  const auto& lim = spec_.limits;
  timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  wall_deadline_ = s_.started + lim.wall_time;
  cpu_budgeted_ = lim.cpu_time && s_.cgroup.cpu_usage_ns().has_value();
  cpu_budget_ns_ = lim.cpu_time ? static_cast<std::uint64_t>(lim.cpu_time->count()) * 1'000'000
                                : 0;
  cpus_ = usable_cpus();
  next_cpu_check_ = s_.started;
  if (cpu_budgeted_) schedule_cpu_check(0);
  arm_timer();
}

void Supervisor::query_notification_size() {
  if (!s_.notify) return;
  seccomp_notif_sizes sizes{};
  if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0)
    notif_size_ = std::max<std::uint32_t>(sizes.seccomp_notif, sizeof(seccomp_notif));
}

void Supervisor::arm_timer() {
  auto when = wall_deadline_;
  if (cpu_budgeted_) when = std::min(when, next_cpu_check_);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
  itimerspec its{};
  its.it_value.tv_sec = ns / 1'000'000'000;
  its.it_value.tv_nsec = ns % 1'000'000'000;
  if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
  ::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
}

// The earliest moment the budget could be spent: the rest of it on every usable CPU.
void Supervisor::schedule_cpu_check(std::uint64_t used_ns) {
  std::uint64_t left = cpu_budget_ns_ > used_ns ? cpu_budget_ns_ - used_ns : 0;
  auto wait = std::chrono::nanoseconds(std::max<std::uint64_t>(left / cpus_, 1'000'000));
  next_cpu_check_ = Clock::now() + wait;
}

void Supervisor::kill_all() {
  sys::pidfd_send_signal(s_.pidfd.get(), SIGKILL);
  s_.cgroup.kill_all();
}

// Until init exits, every source; after, only the output still to drain.
Slots Supervisor::watch(PollSet& ps) const {
  const bool live = !init_exited_;
  Slots at{};
  at.pid = ps.add_if(live, s_.pidfd.get(), POLLIN);
  at.timer = ps.add_if(live, timer_.get(), POLLIN);
  at.kill = ps.add_if(live, s_.kill_event.get(), POLLIN);
  at.stop = ps.add_if(live && spec_.stop_fd >= 0 && !facts_.killed_by_caller, spec_.stop_fd,
                      POLLIN);
  at.notify = ps.add_if(live && s_.notify, s_.notify.get(), POLLIN);
  at.out = ps.add_if(out_.open, out_.source, POLLIN);
  at.err = ps.add_if(err_.open, err_.source, POLLIN);
  at.resize = ps.add_if(live && follow_window_, follow_window_ ? spec_.tty->resize_event_fd : -1,
                        POLLIN);
  at.in = ps.add_if(live && stdin_.wants_to_write(), s_.stdin_w.get(), POLLOUT);
  at.src = ps.add_if(live && stdin_.wants_to_read(), spec_.stdin_source.fd, POLLIN);
  return at;
}

void Supervisor::supervise() {
  while (!init_exited_ || out_.open || err_.open) {
    PollSet ps;
    const Slots at = watch(ps);
    if (::poll(ps.fds.data(), ps.n, -1) < 0) {
      if (errno == EINTR) continue;
      kill_all();  // cannot supervise any more: fail closed
      break;
    }
    dispatch(ps, at);
  }
}

// In this order: output before the limits it may hit, the exit last.
void Supervisor::dispatch(const PollSet& ps, const Slots& at) {
  if (ps.ready(at.out) && !out_.drain()) out_.open = false;
  if (ps.ready(at.err) && !err_.drain()) err_.open = false;
  enforce_output_limit();
  if (ps.ready(at.in)) stdin_.on_writable();
  if (ps.ready(at.src)) stdin_.on_source_readable();
  if (ps.ready(at.resize)) on_resize();
  if (ps.ready(at.notify)) on_seccomp_notification(ps.fds[at.notify].revents);
  if (ps.ready(at.stop)) on_stop();
  if (ps.ready(at.kill)) on_kill_event();
  if (ps.ready(at.timer)) on_timer();
  if (ps.ready(at.pid)) on_init_exit();
}

void Supervisor::enforce_output_limit() {
  if (spec_.kill_on_output_limit && !facts_.output_killed && (out_.discarded || err_.discarded)) {
    facts_.output_killed = true;
    kill_all();
  }
}

// --tty: the host terminal changed size; so does the sandbox's.
void Supervisor::on_resize() {
  std::array<char, 64> events;
  ssize_t r = ::read(spec_.tty->resize_event_fd, events.data(), events.size());
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) follow_window_ = false;
  winsize size{};
  if (::ioctl(spec_.tty->size_source_fd, TIOCGWINSZ, &size) == 0 && size.ws_row > 0 &&
      size.ws_col > 0)
    (void)::ioctl(s_.tty_master.get(), TIOCSWINSZ, &size);
}

// A forbidden syscall: the first one names the violation, and the run ends.
void Supervisor::on_seccomp_notification(short revents) {
  if (!(revents & POLLIN)) {
    s_.notify.reset();  // every process under the filter is gone
    return;
  }
  std::vector<char> buf(notif_size_ ? notif_size_ : sizeof(seccomp_notif), 0);
  auto* notif = reinterpret_cast<seccomp_notif*>(buf.data());
  if (::ioctl(s_.notify.get(), SECCOMP_IOCTL_NOTIF_RECV, notif) == 0 && !facts_.violation) {
    facts_.violation = syscall_name(notif->data.arch, notif->data.nr);
    kill_all();
  }
}

void Supervisor::on_stop() {
  facts_.killed_by_caller = true;
  kill_all();
}

void Supervisor::on_kill_event() {
  std::uint64_t v;
  (void)!::read(s_.kill_event.get(), &v, sizeof v);
  facts_.killed_by_caller = true;
  kill_all();
}

void Supervisor::on_timer() {
  std::uint64_t expirations;
  (void)!::read(timer_.get(), &expirations, sizeof expirations);
  auto now = Clock::now();
  if (now >= wall_deadline_ && !facts_.timed_out) {
    facts_.timed_out = true;
    kill_all();
  } else if (cpu_budgeted_ && now >= next_cpu_check_ && !facts_.cpu_exceeded) {
    std::uint64_t used = s_.cgroup.cpu_usage_ns().value_or(0);
    if (used >= cpu_budget_ns_) {
      facts_.cpu_exceeded = true;
      kill_all();
    } else {
      schedule_cpu_check(used);
    }
  }
  if (!facts_.timed_out) arm_timer();
}

// The sandbox's init has exited: the kernel has ended every other process in it.
void Supervisor::on_init_exit() {
  // A warm call's init is the template's grandchild: its pidfd's POLLIN says it has exited,
  // and its status comes only from the exit report (usage from the cgroup).
  if (::syscall(SYS_waitid, P_PIDFD, s_.pidfd.get(), &info_, WEXITED | __WALL, &usage_) != 0 &&
      !(s_.warm && errno == ECHILD))
    return;
  init_exited_ = true;
  s_.reaped = true;
  // Every process is gone. With our slave open the master never reports an end, so
  // take what the program wrote (the read flushes the pty's pending input) and stop.
  if (s_.tty_master && out_.open) {
    (void)out_.drain();
    out_.open = false;
  }
  outcome_.usage.wall_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - s_.started).count());
}

void Supervisor::release_sandbox() {
  s_.listeners.clear();
  s_.notify.reset();
  s_.stdin_w.reset();
  s_.tty_master.reset();
  s_.tty_slave.reset();
  (void)s_.cgroup.remove();
}

void Supervisor::record_exit(const std::optional<ExitReport>& report) {
  if (report) {
    if (report->exited) facts_.exit_code = report->code;
    else facts_.signal = report->code;
  } else if (info_.si_code == CLD_KILLED || info_.si_code == CLD_DUMPED) {
    facts_.signal = info_.si_status;
  }
}

// After the loop: what the sandbox left behind, the usage, and the verdict on the facts.
void Supervisor::finish() {
  const std::optional<ExitReport> report = read_exit_report(s_.status_r.get());
  const CgroupStats stats = s_.cgroup.read_stats();
  release_sandbox();
  fill_usage(outcome_.usage, stats, usage_);

  outcome_.stdout_truncated = out_.discarded > 0;
  outcome_.stderr_truncated = err_.discarded > 0;
  outcome_.stdout_discarded_bytes = out_.discarded;
  outcome_.stderr_discarded_bytes = err_.discarded;
  record_exit(report);
  facts_.oom_kills = stats.oom_kills;
  facts_.cpu_used_ns = (outcome_.usage.cpu_user_ms + outcome_.usage.cpu_sys_ms) * 1'000'000;
  facts_.stdout_truncated = outcome_.stdout_truncated;
  facts_.stderr_truncated = outcome_.stderr_truncated;
  facts_.pids_refused = stats.pids_refused.value_or(0);

  Judgement j = judge(facts_, spec_.limits);
  outcome_.verdict = j.verdict;
  outcome_.message = std::move(j.message);
  outcome_.exit_code = j.exit_code;
  outcome_.signal = j.signal;
  if (j.syscall) outcome_.syscall = std::move(j.syscall);
}

}  // namespace

Outcome Sandbox::wait() {
  Outcome outcome;
  Supervisor supervisor(*state_, outcome);
  supervisor.supervise();
  supervisor.finish();
  return outcome;
}

Outcome run(const Spec& spec) {
  // Nobody here would accept on them: egress is backend::run_local()'s, with its proxy.
  if (!spec.network.loopback_listeners.empty()) {
    Outcome outcome;
    outcome.verdict = Verdict::setup_error;
    outcome.message = "loopback listeners need the egress proxy: run the spec with "
                      "backend::run_local()";
    return outcome;
  }
  auto sandbox = Sandbox::launch(spec);
  if (!sandbox) {
    Outcome outcome;
    outcome.verdict = Verdict::setup_error;
    outcome.message = sandbox.error().message;
    return outcome;
  }
  return (*sandbox)->wait();
}

}  // namespace airlock::sandbox
