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
#include "sandbox/seccomp_policy.hpp"
#include "sandbox/syscalls.hpp"

namespace airlock::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

// How far below the budget a SIGXCPU death may measure and still count as the budget.
// Without cgroup CPU accounting the budget is RLIMIT_CPU, which the kernel checks against the
// scheduler's runtime, while the usage we report comes from rusage; on a busy host the two
// disagree by up to 15% (853 ms measured for a 1 s limit with 6 test binaries on 2 cores).
// SIGXCPU has no other sender but the program itself, so half the budget is the bar.
std::uint64_t cpu_slack_ns(std::chrono::milliseconds budget) {
  return static_cast<std::uint64_t>(budget.count()) * 500'000;
}

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

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = write_without_sigpipe(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
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
        if (forward_fd >= 0) (void)write_all(forward_fd, buf.data(), take);
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
  Clock::time_point started;
  bool reaped = false;
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

std::vector<UniqueFd> Sandbox::take_listeners() { return std::move(state_->listeners); }
UniqueFd Sandbox::take_stdin() { return std::move(state_->stdin_w); }
UniqueFd Sandbox::take_stdout() { return std::move(state_->stdout_r); }

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
  return {};
}

Result<std::unique_ptr<Sandbox>> Sandbox::launch(const Spec& spec) {
  if (auto s = validate_spec(spec); !s) return s.error();
  auto st = std::make_unique<State>();
  st->spec = spec;

  // v2: the cgroup exists before clone3, which starts the child in it (CLONE_INTO_CGROUP).
  // v1: we create the cgroups once the child is released, while it builds its root, and it
  // moves itself into them before it starts the program (see join_cgroups in child.cpp).
  const bool cgroups_after_clone = cgroup_support().mode == CgroupMode::v1;
  if (!cgroups_after_clone) {
    auto cgroup = SandboxCgroup::create(spec.limits);
    if (!cgroup) return cgroup.error();
    st->cgroup = std::move(*cgroup);
  }

  auto plan = make_child_plan(spec, cgroup_support());
  if (!plan) return plan.error();
  st->plan = std::move(*plan);

  auto in = make_pipe(), out = make_pipe(), err = make_pipe(), errp = make_pipe(),
       status = make_pipe(), go = make_pipe();
  for (auto* p : {&in, &out, &err, &errp, &status, &go})
    if (!*p) return p->error();
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
    return setup_errno("socketpair", errno);
  UniqueFd control_parent(sp[0]), control_child(sp[1]);
  st->kill_event.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!st->kill_event) return setup_errno("eventfd", errno);

  ChildPlan& cp = st->plan;
  cp.stdin_fd = in->read.get();
  cp.stdout_fd = out->write.get();
  cp.stderr_fd = err->write.get();
  cp.error_fd = errp->write.get();
  cp.control_fd = control_child.get();
  cp.status_fd = status->write.get();
  cp.go_fd = go->read.get();
  cp.join_cgroups_from_control = cgroups_after_clone;

  int pidfd = -1;
  sys::CloneArgs args{};
  // The network namespace comes from the child (child.cpp, join_network_namespace), made
  // while the rest is set up.
  args.flags = sys::kClonePidfd | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC |
               CLONE_NEWUTS;
  if (st->cgroup.clone_into_fd() >= 0) {
    args.flags |= sys::kCloneIntoCgroup | CLONE_NEWCGROUP;
    args.cgroup = static_cast<std::uint64_t>(st->cgroup.clone_into_fd());
  }
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = 0;  // no SIGCHLD: only our pidfd waits for this child (__WALL)
  long pid = sys::clone3(&args);
  if (pid < 0) return setup_errno("clone3 (new user, pid, mount, ipc, uts namespaces)", errno);
  if (pid == 0) child_main(cp);

  st->pid = static_cast<pid_t>(pid);
  st->pidfd.reset(pidfd);
  st->stdin_w = std::move(in->write);
  st->stdout_r = std::move(out->read);
  st->stderr_r = std::move(err->read);
  st->status_r = std::move(status->read);
  st->control = std::move(control_parent);
  // Close our copies of the child's ends now, so EOFs mean what they should.
  in->read.reset();
  out->write.reset();
  err->write.reset();
  errp->write.reset();
  status->write.reset();
  go->read.reset();
  control_child.reset();
  auto sandbox = std::unique_ptr<Sandbox>(new Sandbox(std::move(st)));
  State& s = *sandbox->state_;

  const HostIds ids = host_ids();
  if (!ids.root_mode && !write_proc_file(s.pid, "setgroups", "deny"))
    return setup_errno("writing setgroups deny", errno);
  if (!write_proc_file(s.pid, "uid_map",
                       std::to_string(kSandboxUid) + " " + std::to_string(ids.uid) + " 1\n"))
    return setup_errno("writing uid_map", errno);
  if (!write_proc_file(s.pid, "gid_map",
                       std::to_string(kSandboxGid) + " " + std::to_string(ids.gid) + " 1\n"))
    return setup_errno("writing gid_map", errno);

  char one = 1;
  s.started = Clock::now();
  if (write_without_sigpipe(go->write.get(), &one, 1) != 1)
    return setup_errno("releasing the sandbox", errno);
  s.go_w = std::move(go->write);

  int handoff_errno = 0;  // the child died before it took its cgroups: its report says why
  if (cgroups_after_clone) {
    auto cgroup = SandboxCgroup::create(spec.limits);
    if (!cgroup) return cgroup.error();  // ~Sandbox kills the child
    s.cgroup = std::move(*cgroup);
    auto join_fds = s.cgroup.open_join_fds();
    if (!join_fds) return join_fds.error();
    if (join_fds->size() > static_cast<std::size_t>(ChildPlan::kMaxCgroupJoinFds))
      return setup_error("more cgroup hierarchies than the child can join");
    int fds[ChildPlan::kMaxCgroupJoinFds];
    for (std::size_t i = 0; i < join_fds->size(); ++i) fds[i] = (*join_fds)[i].get();
    if (!send_fds(s.control.get(), 'C', fds, join_fds->size())) handoff_errno = errno;
  }

  // Wait for execve (EOF on the error pipe) or a report of what failed.
  const auto deadline = s.started + s.spec.limits.wall_time;
  ChildError report{};
  std::size_t got = 0;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return setup_error("the sandbox did not finish setting up in time");
    pollfd pfd{errp->read.get(), POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    ssize_t n = ::read(errp->read.get(), reinterpret_cast<char*>(&report) + got,
                       sizeof report - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
    if (got == sizeof report) break;
  }
  if (got == sizeof report) {
    report.step[sizeof report.step - 1] = '\0';
    std::string step = report.step;
    if (step.rfind("execve ", 0) == 0 && report.err == ENOENT)
      return setup_error("command not found in the sandbox: " + step.substr(7));
    return setup_errno("sandbox setup failed at " + step, report.err);
  }
  if (handoff_errno != 0) return setup_errno("sending the sandbox its cgroups", handoff_errno);

  // Descriptors the child sent before exec: listening sockets, then the seccomp listener.
  for (ReceivedFds record; receive_fds(s.control.get(), record, MSG_DONTWAIT) > 0;) {
    for (std::size_t i = 0; i < record.count; ++i) {
      UniqueFd fd(record.fds[i]);
      if (record.tag == 'L')
        s.listeners.push_back(std::move(fd));
      else if (record.tag == 'S' && i == 0)
        s.notify = std::move(fd);
      else if (record.tag == 'T' && record.count == 2 && s.spec.tty)
        (i == 0 ? s.tty_master : s.tty_slave) = std::move(fd);
    }
  }
  s.control.reset();
  if (s.listeners.size() != s.spec.network.loopback_listeners.size() &&
      !s.spec.network.loopback_listeners.empty())
    return setup_error("the sandbox did not hand over its listening sockets");
  if (s.spec.tty) {
    // The program's stdio is the pty slave: the pipes' other ends are gone. The master is
    // both its stdin (a second descriptor, so ending the input does not hang the pty up) and
    // its stdout.
    if (!s.tty_master || !s.tty_slave)
      return setup_error("the sandbox did not hand over its terminal");
    s.stdout_r.reset();
    s.stderr_r.reset();
    s.stdin_w.reset(::fcntl(s.tty_master.get(), F_DUPFD_CLOEXEC, 0));
    if (!s.stdin_w) return setup_errno("duplicating the pty master", errno);
  }
  return sandbox;
}

Outcome Sandbox::wait() {
  State& s = *state_;
  const Spec& spec = s.spec;
  Outcome outcome;

  StreamSink out, err;
  bool caller_mode = spec.output_mode == OutputMode::caller;
  if (!caller_mode && s.stdout_r) {
    out.source = s.stdout_r.get();
    out.open = true;
  } else if (s.tty_master) {
    out.source = s.tty_master.get();  // everything the program writes to its terminal
    out.open = true;
  }
  if (s.stderr_r) {
    err.source = s.stderr_r.get();
    err.open = true;
  }
  for (auto* sink : {&out, &err}) {
    sink->limit = spec.limits.output_bytes;
    if (sink->open) set_nonblocking(sink->source);
  }
  if (spec.output_mode == OutputMode::forward) {
    out.forward_fd = spec.forward_stdout_fd;
    err.forward_fd = spec.forward_stderr_fd;
  } else {
    out.collected = &outcome.stdout_data;
    err.collected = &outcome.stderr_data;
  }

  // stdin: bytes or a host fd, pumped through the pipe; nothing means EOF at once.
  std::string stdin_buffer;
  std::size_t stdin_offset = 0;
  bool stdin_source_open = false;
  bool partial_line = false;  // --tty: the input so far does not end with a newline
  bool eof_queued = false;    // --tty: the end-of-file characters are the last input
  // Called once everything is written and the source is done. With a terminal, the input
  // ends with its end-of-file characters, written like any input (the pty may be full).
  auto end_stdin = [&] {
    if (s.tty_master && s.stdin_w && !eof_queued) {
      eof_queued = true;
      stdin_buffer = terminal_eof(s.stdin_w.get(), partial_line);
      stdin_offset = 0;
      if (!stdin_buffer.empty()) return;
    }
    s.stdin_w.reset();
  };
  if (!caller_mode && s.stdin_w) {
    if (spec.stdin_source.kind == StdinSource::Kind::bytes) {
      stdin_buffer = spec.stdin_source.bytes;
    } else if (spec.stdin_source.kind == StdinSource::Kind::fd) {
      stdin_source_open = true;
    }
    set_nonblocking(s.stdin_w.get());
    if (stdin_buffer.empty() && !stdin_source_open) end_stdin();
  }

  UniqueFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  const auto wall_deadline = s.started + spec.limits.wall_time;
  const bool cpu_budgeted = spec.limits.cpu_time && s.cgroup.cpu_usage_ns().has_value();
  const std::uint64_t cpu_budget_ns =
      spec.limits.cpu_time ? static_cast<std::uint64_t>(spec.limits.cpu_time->count()) * 1'000'000
                           : 0;
  const unsigned cpus = usable_cpus();
  auto next_cpu_check = s.started;
  auto arm_timer = [&] {
    auto when = wall_deadline;
    if (cpu_budgeted) when = std::min(when, next_cpu_check);
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
    itimerspec its{};
    its.it_value.tv_sec = ns / 1'000'000'000;
    its.it_value.tv_nsec = ns % 1'000'000'000;
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    ::timerfd_settime(timer.get(), TFD_TIMER_ABSTIME, &its, nullptr);
  };
  // The earliest moment the budget could be spent: the rest of it on every usable CPU.
  auto schedule_cpu_check = [&](std::uint64_t used_ns) {
    std::uint64_t left = cpu_budget_ns > used_ns ? cpu_budget_ns - used_ns : 0;
    auto wait = std::chrono::nanoseconds(std::max<std::uint64_t>(left / cpus, 1'000'000));
    next_cpu_check = Clock::now() + wait;
  };
  if (cpu_budgeted) schedule_cpu_check(0);
  arm_timer();

  bool timed_out = false, cpu_exceeded = false, killed_by_caller = false, output_killed = false;
  std::optional<std::string> violation;
  bool init_exited = false;
  auto kill_all = [&] {
    sys::pidfd_send_signal(s.pidfd.get(), SIGKILL);
    s.cgroup.kill_all();
  };
  std::uint32_t notif_size = 0, resp_size = 0;
  if (s.notify) {
    seccomp_notif_sizes sizes{};
    if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0) {
      notif_size = std::max<std::uint32_t>(sizes.seccomp_notif, sizeof(seccomp_notif));
      resp_size = sizes.seccomp_notif_resp;
    }
  }
  (void)resp_size;

  siginfo_t info{};
  rusage usage{};
  bool follow_window =
      s.tty_master && spec.tty->resize_event_fd >= 0 && spec.tty->size_source_fd >= 0;
  while (!init_exited || out.open || err.open) {
    std::array<pollfd, 10> pfds{};
    std::size_t n = 0;
    auto add = [&](int fd, short events) {
      pfds[n++] = pollfd{fd, events, 0};
      return n - 1;
    };
    std::size_t i_pid = init_exited ? SIZE_MAX : add(s.pidfd.get(), POLLIN);
    std::size_t i_timer = init_exited ? SIZE_MAX : add(timer.get(), POLLIN);
    std::size_t i_kill = init_exited ? SIZE_MAX : add(s.kill_event.get(), POLLIN);
    bool watch_stop = spec.stop_fd >= 0 && !killed_by_caller && !init_exited;
    std::size_t i_stop = watch_stop ? add(spec.stop_fd, POLLIN) : SIZE_MAX;
    std::size_t i_notify = (s.notify && !init_exited) ? add(s.notify.get(), POLLIN) : SIZE_MAX;
    std::size_t i_out = out.open ? add(out.source, POLLIN) : SIZE_MAX;
    std::size_t i_err = err.open ? add(err.source, POLLIN) : SIZE_MAX;
    std::size_t i_in = SIZE_MAX, i_src = SIZE_MAX;
    std::size_t i_resize =
        (follow_window && !init_exited) ? add(spec.tty->resize_event_fd, POLLIN) : SIZE_MAX;
    if (s.stdin_w && !init_exited) {
      if (stdin_offset < stdin_buffer.size())
        i_in = add(s.stdin_w.get(), POLLOUT);
      else if (stdin_source_open)
        i_src = add(spec.stdin_source.fd, POLLIN);
    }
    int rc = ::poll(pfds.data(), n, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      kill_all();  // cannot supervise any more: fail closed
      break;
    }
    auto ready = [&](std::size_t i) { return i != SIZE_MAX && pfds[i].revents != 0; };

    if (ready(i_out) && !out.drain()) out.open = false;
    if (ready(i_err) && !err.drain()) err.open = false;
    if (spec.kill_on_output_limit && !output_killed && (out.discarded || err.discarded)) {
      output_killed = true;
      kill_all();
    }
    if (ready(i_in)) {
      ssize_t w = write_without_sigpipe(s.stdin_w.get(), stdin_buffer.data() + stdin_offset,
                                        stdin_buffer.size() - stdin_offset);
      if (w > 0) {
        stdin_offset += static_cast<std::size_t>(w);
        partial_line = stdin_buffer[stdin_offset - 1] != '\n';
      }
      if (w < 0 && errno != EAGAIN && errno != EINTR) {
        s.stdin_w.reset();  // the program closed its stdin
      } else if (stdin_offset == stdin_buffer.size() && !stdin_source_open) {
        end_stdin();
      }
    }
    if (ready(i_src)) {
      std::array<char, 65536> buf;
      ssize_t r = ::read(spec.stdin_source.fd, buf.data(), buf.size());
      if (r > 0) {
        stdin_buffer.assign(buf.data(), static_cast<std::size_t>(r));
        stdin_offset = 0;
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        stdin_source_open = false;
        end_stdin();
      }
    }
    if (ready(i_resize)) {
      std::array<char, 64> events;
      ssize_t r = ::read(spec.tty->resize_event_fd, events.data(), events.size());
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) follow_window = false;
      winsize size{};
      if (::ioctl(spec.tty->size_source_fd, TIOCGWINSZ, &size) == 0 && size.ws_row > 0 &&
          size.ws_col > 0)
        (void)::ioctl(s.tty_master.get(), TIOCSWINSZ, &size);
    }
    if (ready(i_notify)) {
      if (pfds[i_notify].revents & POLLIN) {
        std::vector<char> buf(notif_size ? notif_size : sizeof(seccomp_notif), 0);
        auto* notif = reinterpret_cast<seccomp_notif*>(buf.data());
        if (::ioctl(s.notify.get(), SECCOMP_IOCTL_NOTIF_RECV, notif) == 0 && !violation) {
          violation = syscall_name(notif->data.arch, notif->data.nr);
          kill_all();
        }
      } else {
        s.notify.reset();  // every process under the filter is gone
      }
    }
    if (ready(i_stop)) {
      killed_by_caller = true;
      kill_all();
    }
    if (ready(i_kill)) {
      std::uint64_t v;
      (void)!::read(s.kill_event.get(), &v, sizeof v);
      killed_by_caller = true;
      kill_all();
    }
    if (ready(i_timer)) {
      std::uint64_t expirations;
      (void)!::read(timer.get(), &expirations, sizeof expirations);
      auto now = Clock::now();
      if (now >= wall_deadline && !timed_out) {
        timed_out = true;
        kill_all();
      } else if (cpu_budgeted && now >= next_cpu_check && !cpu_exceeded) {
        std::uint64_t used = s.cgroup.cpu_usage_ns().value_or(0);
        if (used >= cpu_budget_ns) {
          cpu_exceeded = true;
          kill_all();
        } else {
          schedule_cpu_check(used);
        }
      }
      if (!timed_out) arm_timer();
    }
    if (ready(i_pid)) {
      // The sandbox's init has exited: the kernel has ended every other process in it.
      long r = ::syscall(SYS_waitid, P_PIDFD, s.pidfd.get(), &info, WEXITED | __WALL, &usage);
      if (r == 0) {
        init_exited = true;
        s.reaped = true;
        // Every process is gone. With our slave open the master never reports an end, so
        // take what the program wrote (the read flushes the pty's pending input) and stop.
        if (s.tty_master && out.open) {
          (void)out.drain();
          out.open = false;
        }
        outcome.usage.wall_ms = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - s.started).count());
      }
    }
  }

  // How the program ended, as its init saw it (absent if init itself was killed).
  std::optional<ExitReport> report;
  {
    ExitReport r{};
    set_nonblocking(s.status_r.get());
    if (::read(s.status_r.get(), &r, sizeof r) == static_cast<ssize_t>(sizeof r)) report = r;
  }
  CgroupStats stats = s.cgroup.read_stats();
  s.listeners.clear();
  s.notify.reset();
  s.stdin_w.reset();
  s.tty_master.reset();
  s.tty_slave.reset();
  (void)s.cgroup.remove();

  // Usage: cgroup counters where we have them, the init's rusage (which includes every
  // process it reaped) otherwise.
  auto ms = [](const timeval& tv) {
    return static_cast<std::uint64_t>(tv.tv_sec) * 1000 + static_cast<std::uint64_t>(tv.tv_usec) / 1000;
  };
  outcome.usage.cpu_user_ms = stats.cpu_user_ns ? *stats.cpu_user_ns / 1'000'000 : ms(usage.ru_utime);
  outcome.usage.cpu_sys_ms = stats.cpu_sys_ns ? *stats.cpu_sys_ns / 1'000'000 : ms(usage.ru_stime);
  outcome.usage.memory_peak_bytes =
      stats.memory_peak_bytes ? *stats.memory_peak_bytes
                              : static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  outcome.usage.pids_peak = stats.pids_peak;
  if (stats.pids_refused) outcome.usage.pids_limit_hit = *stats.pids_refused > 0;

  outcome.stdout_truncated = out.discarded > 0;
  outcome.stderr_truncated = err.discarded > 0;
  outcome.stdout_discarded_bytes = out.discarded;
  outcome.stderr_discarded_bytes = err.discarded;
  if (report) {
    if (report->exited) outcome.exit_code = report->code;
    else outcome.signal = report->code;
  } else if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
    outcome.signal = info.si_status;
  }

  const auto& lim = spec.limits;
  const std::uint64_t cpu_used_ns =
      (outcome.usage.cpu_user_ms + outcome.usage.cpu_sys_ms) * 1'000'000;
  const bool cpu_signal = outcome.signal && (*outcome.signal == SIGXCPU || *outcome.signal == SIGKILL);
  const std::string cmd = spec.argv.front();
  if (timed_out) {
    outcome.verdict = Verdict::timeout;
    outcome.exit_code.reset();
    outcome.signal = SIGKILL;
    outcome.message = cmd + " ran past the " + format_duration(lim.wall_time) +
                      " wall-clock limit and was killed";
  } else if (violation) {
    outcome.verdict = Verdict::seccomp_violation;
    outcome.syscall = *violation;
    outcome.exit_code.reset();
    outcome.signal = SIGSYS;
    outcome.message = cmd + " called " + *violation +
                      ", which the sandbox's syscall policy forbids, and was killed";
  } else if (stats.oom_kills > 0) {
    outcome.verdict = Verdict::memory_limit;
    outcome.message = cmd + " reached the " + format_size(lim.memory_bytes) +
                      " memory limit and the kernel's OOM killer ended " +
                      (stats.oom_kills == 1 ? std::string("a process")
                                            : std::to_string(stats.oom_kills) + " processes");
  } else if (cpu_exceeded || (lim.cpu_time && cpu_signal &&
                              cpu_used_ns + cpu_slack_ns(*lim.cpu_time) >=
                                  static_cast<std::uint64_t>(lim.cpu_time->count()) * 1'000'000)) {
    outcome.verdict = Verdict::cpu_time_limit;
    if (cpu_exceeded) {
      outcome.exit_code.reset();
      outcome.signal = SIGKILL;
    }
    outcome.message = cmd + " used up its " + format_duration(*lim.cpu_time) +
                      " CPU-time budget and was killed";
  } else if (outcome.stdout_truncated || outcome.stderr_truncated) {
    outcome.verdict = Verdict::output_limit;
    std::string which = outcome.stdout_truncated && outcome.stderr_truncated ? "stdout and stderr"
                        : outcome.stdout_truncated                            ? "stdout"
                                                                              : "stderr";
    outcome.message = cmd + " wrote more than the " + format_size(lim.output_bytes) +
                      " output limit on " + which + "; the rest was discarded" +
                      (output_killed ? " and the run was stopped" : "");
  } else if (killed_by_caller) {
    outcome.verdict = Verdict::signaled;
    outcome.exit_code.reset();
    outcome.signal = SIGKILL;
    outcome.message = cmd + " was stopped by its supervisor";
  } else if (outcome.signal) {
    outcome.verdict = Verdict::signaled;
    outcome.message = cmd + " was killed by " + signal_name(*outcome.signal);
  } else if (outcome.exit_code && *outcome.exit_code != 0) {
    outcome.verdict = Verdict::exit_nonzero;
    outcome.message = cmd + " exited with status " + std::to_string(*outcome.exit_code);
  } else if (outcome.exit_code) {
    outcome.verdict = Verdict::ok;
    outcome.message = cmd + " exited with status 0";
  } else {
    outcome.verdict = Verdict::signaled;
    outcome.message = cmd + "'s sandbox ended without reporting how the program exited";
  }
  if (stats.pids_refused && *stats.pids_refused > 0)
    outcome.message += "; it hit the " + std::to_string(lim.pids) + "-process limit (" +
                       std::to_string(*stats.pids_refused) + " fork or clone call" +
                       (*stats.pids_refused == 1 ? " was" : "s were") + " refused)";
  return outcome;
}

Outcome run(const Spec& spec) {
  if (spec.network.has_egress()) {
    Outcome outcome;
    outcome.verdict = Verdict::setup_error;
    outcome.message = "egress rules need the egress proxy: run the spec with backend::run_local()";
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
