#include "backend/gvisor_run.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/fd_passing.hpp"
#include "sandbox/loopback.hpp"
#include "sandbox/verdict.hpp"

namespace airlock::backend {
namespace {

constexpr char kListenersTag = 'L';
constexpr std::chrono::milliseconds kCpuCheckInterval{50};

// What the child reports when a step before execve fails.
struct ChildFailure {
  int err = 0;
  char step[64] = {};
};

// Everything the child needs, prepared before fork: after it only syscalls run (the daemon
// is multithreaded, so the child may not allocate).
struct ChildArgs {
  std::vector<std::string> argv_strings;
  std::vector<char*> argv;
  std::vector<int> cgroup_procs;  // write "0" to join
  bool own_user_namespace = false;
  std::string uid_map, gid_map;
  std::vector<std::uint16_t> ports;
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1, control = -1, report = -1;
};

[[noreturn]] void child_fail(const ChildArgs& a, const char* step) {
  ChildFailure f;
  f.err = errno;
  std::strncpy(f.step, step, sizeof f.step - 1);
  (void)!::write(a.report, &f, sizeof f);
  ::_exit(127);
}

bool write_proc(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

int listen_on_loopback(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0)
    return -1;
  return fd;
}

// The network namespace (and, not root, its user namespace), loopback and the listeners.
void enter_network_namespace(const ChildArgs& a) {
  if (a.own_user_namespace) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) child_fail(a, "unshare(user, net)");
    if (!write_proc("/proc/self/setgroups", "deny") ||
        !write_proc("/proc/self/uid_map", a.uid_map) ||
        !write_proc("/proc/self/gid_map", a.gid_map))
      child_fail(a, "write the user namespace's id maps");
  } else if (::unshare(CLONE_NEWNET) != 0) {
    child_fail(a, "unshare(net)");
  }
  if (sandbox::bring_up_loopback().err != 0) child_fail(a, "bring up loopback");
  int fds[sandbox::kMaxPassedFds];
  std::size_t n = 0;
  for (auto port : a.ports) {
    fds[n] = listen_on_loopback(port);
    if (fds[n] < 0) child_fail(a, "listen on 127.0.0.1 in the run's namespace");
    ++n;
  }
  if (!sandbox::send_fds(a.control, kListenersTag, fds, n)) child_fail(a, "pass the listeners");
  for (std::size_t i = 0; i < n; ++i) ::close(fds[i]);
}

[[noreturn]] void child_main(const ChildArgs& a) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // runsc (and, through the cgroup kill, all) ends with us
  for (int fd : a.cgroup_procs)
    if (::write(fd, "0", 1) != 1) child_fail(a, "join the run's cgroup");
  enter_network_namespace(a);
  if (::dup2(a.stdin_fd, 0) < 0 || ::dup2(a.stdout_fd, 1) < 0 || ::dup2(a.stderr_fd, 2) < 0)
    child_fail(a, "dup2 the standard streams");
  static const char* const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", nullptr};
  ::execve(a.argv[0], a.argv.data(), const_cast<char* const*>(env));
  child_fail(a, "execve runsc");
}

Result<std::vector<UniqueFd>> open_cgroup_procs(const sandbox::SandboxCgroup& cgroup) {
  std::vector<UniqueFd> out;
  for (const auto& path : cgroup.procs_files()) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::make("setup_error", "gvisor: open " + path + ": " + std::strerror(errno));
    out.push_back(std::move(fd));
  }
  return out;
}

std::string setup_failure_text(const ChildFailure& f) {
  return "gvisor: " + std::string(f.step) + ": " + std::strerror(f.err);
}

}  // namespace

GvisorRun::GvisorRun(const sandbox::Spec& spec, const sandbox::SandboxCgroup& cgroup)
    : spec_(spec), cgroup_(cgroup) {}

GvisorRun::~GvisorRun() {
  if (pid_ > 0 && !reaped_) {
    kill_everything();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

Result<std::unique_ptr<GvisorRun>> GvisorRun::launch(const RunscInvocation& runsc,
                                                     const GvisorRunPaths& paths,
                                                     const sandbox::Spec& spec,
                                                     const sandbox::SandboxCgroup& cgroup,
                                                     const GvisorLaunch& how) {
  std::unique_ptr<GvisorRun> run(new GvisorRun(spec, cgroup));
  auto fail = [](const std::string& what) {
    return Error::make("setup_error", "gvisor: " + what + ": " + std::strerror(errno));
  };
  UniqueFd stdin_fd, out_w, err_w;
  if (auto s = run->open_stdio(paths, stdin_fd, out_w, err_w); !s) return s.error();
  int control[2], report[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) != 0) return fail("socketpair");
  UniqueFd control_r(control[0]), control_w(control[1]);
  if (::pipe2(report, O_CLOEXEC) != 0) return fail("pipe");
  UniqueFd report_r(report[0]), report_w(report[1]);
  auto procs = open_cgroup_procs(cgroup);
  if (!procs) return procs.error();
  run->wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!run->wake_) return fail("eventfd");

  ChildArgs a;
  a.argv_strings = runsc.global_args(paths.state_root);
  a.argv_strings.push_back(how.network_none ? "--network=none" : "--network=host");
  if (how.restore_image.empty()) a.argv_strings.push_back("run");
  else a.argv_strings.insert(a.argv_strings.end(), {"restore", "--image-path=" + how.restore_image});
  a.argv_strings.insert(a.argv_strings.end(), {"--bundle", paths.bundle, paths.container_id});
  for (auto& s : a.argv_strings) a.argv.push_back(s.data());
  a.argv.push_back(nullptr);
  for (auto& fd : *procs) a.cgroup_procs.push_back(fd.get());
  a.own_user_namespace = ::geteuid() != 0;
  a.uid_map = "0 " + std::to_string(::geteuid()) + " 1\n";
  a.gid_map = "0 " + std::to_string(::getegid()) + " 1\n";
  a.ports = spec.network.loopback_listeners;
  a.stdin_fd = stdin_fd.get();
  a.stdout_fd = out_w.get();
  a.stderr_fd = err_w.get();
  a.control = control_w.get();
  a.report = report_w.get();

  run->started_ = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) return fail("fork");
  if (pid == 0) child_main(a);
  run->pid_ = pid;
  run->pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  control_w.reset();
  report_w.reset();
  out_w.reset();
  err_w.reset();

  sandbox::ReceivedFds received;
  ssize_t got = sandbox::receive_fds(control_r.get(), received, 0);
  if (got == 1 && received.tag == kListenersTag)
    for (std::size_t i = 0; i < received.count; ++i) run->listeners_.emplace_back(received.fds[i]);
  ChildFailure failure;
  ssize_t n = ::read(report_r.get(), &failure, sizeof failure);  // EOF: execve worked
  if (n == static_cast<ssize_t>(sizeof failure))
    return Error::make("setup_error", setup_failure_text(failure));
  if (got != 1 || received.count != spec.network.loopback_listeners.size())
    return Error::make("setup_error", "gvisor: the runsc launcher sent no listeners");
  if (!run->pidfd_) return fail("pidfd_open");
  return run;
}

// The program's standard streams: the ends runsc gets, and ours (out_, err_, stdin_w_).
Status GvisorRun::open_stdio(const GvisorRunPaths& paths, UniqueFd& in_r, UniqueFd& out_w, UniqueFd& err_w) {
  auto fail = [](const std::string& what) {
    return Error::make("setup_error", "gvisor: " + what + ": " + std::strerror(errno));
  };
  const bool caller = spec_.output_mode == sandbox::OutputMode::caller;
  int p[2];
  if (caller) {
    if (::pipe2(p, O_CLOEXEC) != 0) return fail("pipe");
    in_r.reset(p[0]);
    stdin_w_.reset(p[1]);
  } else {
    in_r.reset(::open(paths.stdin_file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in_r) return fail("open " + paths.stdin_file);
  }
  for (auto [stream, write_end] : {std::pair{&out_, &out_w}, std::pair{&err_, &err_w}}) {
    if (::pipe2(p, O_CLOEXEC) != 0) return fail("pipe");
    stream->fd.reset(p[0]);
    write_end->reset(p[1]);
    stream->open = !caller;  // the caller's to read: wait() does not
  }
  return {};
}

std::vector<UniqueFd> GvisorRun::take_listeners() { return std::move(listeners_); }

void GvisorRun::kill() {
  killed_by_caller_ = true;
  std::uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
}

// Every process of the run is in its cgroup (runsc, its gofer, the Sentry and, on ptrace,
// the stubs of the program's address spaces): SIGKILL to all of them.
void GvisorRun::kill_everything() {
  cgroup_.kill_all();
  cgroup_.kill_listed();
  if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
}

bool GvisorRun::over_cpu_budget() const {
  if (!spec_.limits.cpu_time) return false;
  auto used = cgroup_.cpu_usage_ns();
  return used && *used >= static_cast<std::uint64_t>(spec_.limits.cpu_time->count()) * 1'000'000;
}

void GvisorRun::read_stream(Stream& s) {
  char buf[65536];
  ssize_t n = ::read(s.fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    s.open = false;
    return;
  }
  const std::uint64_t cap = spec_.limits.output_bytes;
  const std::uint64_t room = s.data.size() < cap ? cap - s.data.size() : 0;
  const std::uint64_t take = std::min<std::uint64_t>(room, static_cast<std::uint64_t>(n));
  s.data.append(buf, take);
  s.discarded += static_cast<std::uint64_t>(n) - take;
}

sandbox::Outcome GvisorRun::wait() {
  const auto deadline = started_ + spec_.limits.wall_time;
  bool stopping = false;
  int status = 0;
  while (!reaped_) {
    auto now = std::chrono::steady_clock::now();
    if (!stopping) {
      // The first reason found stops the run; the caller's kill needs no other.
      if (now >= deadline) timed_out_ = true;
      else if (!killed_by_caller_ && over_cpu_budget()) cpu_exceeded_ = true;
      else if (!killed_by_caller_ && spec_.kill_on_output_limit && (out_.discarded || err_.discarded))
        output_killed_ = true;
      if (timed_out_ || cpu_exceeded_ || output_killed_ || killed_by_caller_) {
        stopping = true;
        kill_everything();
      }
    }
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (spec_.limits.cpu_time) wait_ms = std::min(wait_ms, kCpuCheckInterval);
    pollfd p[4] = {{pidfd_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0},
                   {out_.open ? out_.fd.get() : -1, POLLIN, 0},
                   {err_.open ? err_.fd.get() : -1, POLLIN, 0}};
    int r = ::poll(p, 4, stopping ? 100 : static_cast<int>(std::max<long>(1, wait_ms.count())));
    if (r < 0 && errno != EINTR) break;
    if (p[2].revents) read_stream(out_);
    if (p[3].revents) read_stream(err_);
    if (p[0].revents && ::waitpid(pid_, &status, WNOHANG) == pid_) reaped_ = true;
  }
  // What is still in the pipes (a killed run's sandbox may hold them open: not waited for).
  for (Stream* s : {&out_, &err_}) {
    ::fcntl(s->fd.get(), F_SETFL, O_NONBLOCK);
    for (int i = 0; s->open && i < 1024; ++i) {
      std::size_t before = s->data.size() + s->discarded;
      read_stream(*s);
      if (s->data.size() + s->discarded == before) break;
    }
  }
  return judge_outcome(status);
}

sandbox::Outcome GvisorRun::judge_outcome(int wait_status) {
  const sandbox::CgroupStats stats = cgroup_.read_stats();
  sandbox::RunFacts facts;
  facts.command = spec_.argv.front();
  facts.timed_out = timed_out_;
  facts.oom_kills = stats.oom_kills;
  facts.cpu_exceeded = cpu_exceeded_;
  facts.cpu_used_ns = stats.cpu_user_ns.value_or(0) + stats.cpu_sys_ns.value_or(0);
  facts.stdout_truncated = out_.discarded > 0;
  facts.stderr_truncated = err_.discarded > 0;
  facts.output_killed = output_killed_;
  facts.killed_by_caller = killed_by_caller_;
  facts.pids_refused = stats.pids_refused.value_or(0);
  if (WIFSIGNALED(wait_status)) {
    facts.signal = WTERMSIG(wait_status);
  } else if (WIFEXITED(wait_status)) {
    // runsc reports a program killed by signal N as exit 128+N, the shell's convention.
    const int code = WEXITSTATUS(wait_status);
    if (code > 128 && code <= 128 + 64) facts.signal = code - 128;
    else facts.exit_code = code;
  }
  const sandbox::Judgement j = sandbox::judge(facts, spec_.limits);
  sandbox::Outcome o;
  o.verdict = j.verdict;
  o.message = j.message;
  o.exit_code = j.exit_code;
  o.signal = j.signal;
  o.stdout_data = std::move(out_.data);
  o.stderr_data = std::move(err_.data);
  o.stdout_truncated = facts.stdout_truncated;
  o.stderr_truncated = facts.stderr_truncated;
  o.stdout_discarded_bytes = out_.discarded;
  o.stderr_discarded_bytes = err_.discarded;
  o.usage.wall_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                   std::chrono::steady_clock::now() - started_)
                                                   .count());
  o.usage.cpu_user_ms = stats.cpu_user_ns.value_or(0) / 1'000'000;
  o.usage.cpu_sys_ms = stats.cpu_sys_ns.value_or(0) / 1'000'000;
  o.usage.memory_peak_bytes = stats.memory_peak_bytes;
  o.usage.pids_peak = stats.pids_peak;
  if (stats.pids_refused) o.usage.pids_limit_hit = *stats.pids_refused > 0;
  return o;
}

}  // namespace airlock::backend
