// A session's pid 1: instead of one program, it starts each exec the supervisor asks for as
// its own child, inside every layer the init itself is already in (namespaces, the root,
// cgroups, no capabilities, Landlock, seccomp), and reports when each has ended. Nothing
// enters the sandbox from outside. Only syscalls and static memory here, as in child.cpp:
// the init is a raw clone of a possibly multi-threaded process.
#include "sandbox/session/session_init.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/fd_passing.hpp"
#include "sandbox/seccomp/syscalls.hpp"
#include "sandbox/session/session_init_files.hpp"
#include "sandbox/session/session_protocol.hpp"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

namespace airlock::sandbox {
namespace {

using namespace session_protocol;

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// One exec being started: what the child needs, and what it reports back (CLONE_VM: the
// init waits, CLONE_VFORK, until the child has exec'd or died, then reads `err`).
struct ExecJob {
  const char* cwd = nullptr;
  char* argv[kMaxArgs + 1] = {};
  char* envp[kMaxArgs + 1] = {};
  int fds[3] = {-1, -1, -1};
  bool terminal = false;  // fds are a pty's slave: it becomes the controlling terminal
  int err = 0;  // set by the child when nothing could run
  char path[4096] = {};
};

struct Running {
  std::uint32_t id = 0;
  pid_t pid = 0;  // 0: a free slot
};

// Static: the init's own copy of memory (it was cloned without CLONE_VM), never the heap.
char g_message[kMaxMessageBytes + 1];
ExecJob g_job;
Running g_running[kMaxRunning];

void reply(const Reply& r) { (void)::send(kChildInheritedFd, &r, sizeof r, MSG_NOSIGNAL); }

// Fills job.path with dir/name; false when it does not fit.
bool join_path(ExecJob& job, const char* dir, std::size_t dir_len, const char* name) {
  const std::size_t name_len = std::strlen(name);
  if (dir_len + 1 + name_len + 1 > sizeof job.path) return false;
  std::memcpy(job.path, dir, dir_len);
  job.path[dir_len] = '/';
  std::memcpy(job.path + dir_len + 1, name, name_len + 1);
  return true;
}

// execve of argv[0], or of each PATH entry's argv[0] when it has no '/'. Returns the most
// telling errno (ENOENT unless something else went wrong).
int exec_over_path(ExecJob& job) {
  const char* name = job.argv[0];
  if (std::strchr(name, '/')) {
    ::execve(name, job.argv, job.envp);
    return errno;
  }
  const char* path = kDefaultPath;
  for (char** e = job.envp; *e; ++e)
    if (std::strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  int best = ENOENT;
  for (const char* dir = path;;) {
    const char* end = std::strchr(dir, ':');
    const std::size_t len = end ? static_cast<std::size_t>(end - dir) : std::strlen(dir);
    if (len > 0 && join_path(job, dir, len, name)) {
      ::execve(job.path, job.argv, job.envp);
      if (errno != ENOENT && errno != ENOTDIR) best = errno;
    }
    if (!end) break;
    dir = end + 1;
  }
  return best;
}

// The exec's child: a session and process group of its own (a Signal reaches everything it
// starts), the three descriptors as 0-2 and nothing else, the working directory, exec.
int start_exec(void* arg) {
  auto& job = *static_cast<ExecJob*>(arg);
  ::setsid();
  int high[3];
  for (int i = 0; i < 3; ++i) {  // above 0-2 first: a received descriptor may be one of them
    high[i] = ::fcntl(job.fds[i], F_DUPFD, 16);
    if (high[i] < 0) {
      job.err = errno;
      sys::raw_exit(127);
    }
  }
  for (int i = 0; i < 3; ++i)
    if (::dup2(high[i], i) != i) {
      job.err = errno;
      sys::raw_exit(127);
    }
  (void)::close_range(3, ~0U, 0);
  if (job.terminal && ::ioctl(0, TIOCSCTTY, 0) != 0) {  // its session's terminal, in the foreground
    job.err = errno;
    sys::raw_exit(127);
  }
  if (::chdir(job.cwd) != 0) {
    job.err = errno;
    sys::raw_exit(127);
  }
  sigset_t none;
  sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::umask(022);
  job.err = exec_over_path(job);
  sys::raw_exit(127);
}

Running* slot_of_id(std::uint32_t id) {
  for (auto& r : g_running)
    if (r.pid != 0 && r.id == id) return &r;
  return nullptr;
}

Running* free_slot() {
  for (auto& r : g_running)
    if (r.pid == 0) return &r;
  return nullptr;
}

// Splits `count` NUL-terminated strings starting at `*cursor` into `out`; false when the
// message ends first.
bool take_strings(char** cursor, const char* end, std::uint32_t count, char** out) {
  for (std::uint32_t i = 0; i < count; ++i) {
    char* s = *cursor;
    auto* nul = static_cast<char*>(std::memchr(s, '\0', static_cast<std::size_t>(end - s)));
    if (!nul) return false;
    out[i] = s;
    *cursor = nul + 1;
  }
  out[count] = nullptr;
  return true;
}

// A terminal exec's pty, from the session's own devpts instance: the master (for the
// supervisor) and the slave (the exec's 0-2), with the window size set. Returns 0 or the errno.
int open_pty(const ChildPlan& plan, const ExecHeader& h, int* master, int* slave) {
  *master = ::open(plan.tty_ptmx.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*master < 0) return errno;
  int unlock = 0;
  winsize size{};
  size.ws_row = h.rows;
  size.ws_col = h.columns;
  if (::ioctl(*master, TIOCSPTLCK, &unlock) == 0 && ::ioctl(*master, TIOCSWINSZ, &size) == 0) {
    *slave = ::ioctl(*master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*slave >= 0) return 0;
  }
  const int err = errno;
  ::close(*master);
  *master = -1;
  return err;
}

void close_received(const int* fds, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (fds[i] >= 0) ::close(fds[i]);
}

// The exec's descriptors: the three it was sent, or a new pty's slave three times (its
// master in *master). Returns 0 or the errno.
int exec_descriptors(const ExecHeader& h, const int* fds, std::size_t nfds, const ChildPlan& plan, int* master,
                     int* slave) {
  if (h.rows == 0) {
    if (nfds != 3 || h.columns != 0) return EINVAL;
    for (int i = 0; i < 3; ++i) g_job.fds[i] = fds[i];
    return 0;
  }
  if (nfds != 0 || h.columns == 0) return EINVAL;
  if (int err = open_pty(plan, h, master, slave)) return err;
  g_job.fds[0] = g_job.fds[1] = g_job.fds[2] = *slave;
  g_job.terminal = true;
  return 0;
}

void start(std::size_t size, const int* fds, std::size_t nfds, const ChildPlan& plan) {
  ExecHeader h;
  std::memcpy(&h, g_message, sizeof h);
  Reply r{};
  r.tag = 'F';
  r.id = h.id;
  char* cursor = g_message + sizeof h;
  const char* end = g_message + size;
  g_job = ExecJob{};
  Running* slot = free_slot();
  int master = -1, slave = -1;
  if (h.argc == 0 || h.argc > kMaxArgs || h.envc > kMaxArgs || slot_of_id(h.id)) {
    r.err = EINVAL;
  } else if (!slot) {
    r.err = EAGAIN;  // kMaxRunning execs alive already
  } else if ((r.err = exec_descriptors(h, fds, nfds, plan, &master, &slave)) == 0) {
    g_job.cwd = cursor;
    char* after_cwd = static_cast<char*>(std::memchr(cursor, '\0', static_cast<std::size_t>(end - cursor)));
    cursor = after_cwd ? after_cwd + 1 : cursor;
    if (!after_cwd || !take_strings(&cursor, end, h.argc, g_job.argv) ||
        !take_strings(&cursor, end, h.envc, g_job.envp)) {
      r.err = EINVAL;
    } else {
      pid_t pid = ::clone(start_exec, plan.program_stack_top(), CLONE_VM | CLONE_VFORK | SIGCHLD, &g_job);
      if (pid < 0) {
        r.err = errno;
      } else if (g_job.err != 0) {
        r.err = g_job.err;  // it has exited; reaped below as nobody's
      } else {
        *slot = Running{h.id, pid};
        r.tag = 'S';
        r.pid = pid;
      }
    }
  }
  close_received(fds, nfds);
  if (slave >= 0) ::close(slave);
  if (r.tag == 'S' && master >= 0) (void)send_message(kChildInheritedFd, &r, sizeof r, &master, 1);
  else reply(r);
  if (master >= 0) ::close(master);
}

// A File request: served by session_init_files.cpp; a copier it starts is tracked as the
// request's id, so its end is reported as an exec's.
void file_request(std::size_t size, const int* fds, std::size_t nfds, const ChildPlan& plan) {
  FileHeader h;
  std::memcpy(&h, g_message, sizeof h);
  Running* slot = free_slot();
  Reply r{};
  pid_t copier = 0;
  if (!slot || slot_of_id(h.id)) {
    r.tag = 'R';
    r.id = h.id;
    r.err = slot ? EINVAL : EAGAIN;
  } else {
    r = session_files::serve(g_message, size, fds, nfds, plan.program_stack_top(), &copier);
    if (copier > 0) *slot = Running{h.id, copier};
  }
  close_received(fds, nfds);
  reply(r);
}

void signal_exec(std::size_t size) {
  SignalMessage m;
  if (size < sizeof m) return;
  std::memcpy(&m, g_message, sizeof m);
  if (Running* r = slot_of_id(m.id)) (void)::kill(-r->pid, m.signal);
}

std::uint64_t micros(const timeval& t) {
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000 + static_cast<std::uint64_t>(t.tv_usec);
}

// Every ended child: an exec's end is reported; orphans (what an exec left in the background
// and then lost its parent) are only reaped.
void reap() {
  for (;;) {
    int status = 0;
    rusage usage{};
    pid_t pid = ::wait4(-1, &status, WNOHANG | __WALL, &usage);
    if (pid <= 0) return;
    for (auto& r : g_running) {
      if (r.pid != pid) continue;
      Reply x{};
      x.tag = 'X';
      x.id = r.id;
      x.pid = pid;
      x.exited = WIFEXITED(status) ? 1 : 0;
      x.code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
      x.user_us = micros(usage.ru_utime);
      x.sys_us = micros(usage.ru_stime);
      x.max_rss_kb = static_cast<std::uint64_t>(usage.ru_maxrss);
      r = Running{};
      reply(x);
    }
  }
}

// One message from the supervisor; false when it has gone (the session ends).
bool receive(const ChildPlan& plan) {
  ReceivedFds fds;
  const ssize_t n = receive_message(kChildInheritedFd, g_message, kMaxMessageBytes, fds, 0);
  if (n <= 0) return n < 0 && errno == EAGAIN;
  const bool whole = !fds.truncated && !fds.data_truncated;
  if (whole && fds.tag == 'E' && static_cast<std::size_t>(n) >= sizeof(ExecHeader)) {
    start(static_cast<std::size_t>(n), fds.fds, fds.count, plan);  // closes what it was given
    return true;
  }
  if (whole && fds.tag == 'P' && static_cast<std::size_t>(n) >= sizeof(FileHeader)) {
    g_message[n] = '\0';
    file_request(static_cast<std::size_t>(n), fds.fds, fds.count, plan);  // closes them too
    return true;
  }
  close_received(fds.fds, fds.count);
  if (whole && fds.tag == 'K') signal_exec(static_cast<std::size_t>(n));
  return true;
}

// The session is over: init reports a clean end as it would a program's, and exits, which
// ends the pid namespace and whatever still runs in it.
[[noreturn]] void end_session() {
  ExitReport report{1, 0};
  (void)!::write(kChildStatusFd, &report, sizeof report);
  sys::raw_exit(0);
}

}  // namespace

void serve_session(const ChildPlan& plan) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  (void)::sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int children = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (children < 0) sys::raw_exit(125);
  ::close(0);
  ::close(1);
  ::close(2);
  (void)::prctl(PR_SET_NAME, "airlock-init", 0, 0, 0);
  (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // the session's processes may not read our fds
  if (!session_files::open_workspace(plan.workdir.c_str())) sys::raw_exit(125);
  ::close(kChildErrorFd);  // EOF: the supervisor's launch() returns, the session is ready
  for (;;) {
    pollfd p[2] = {{kChildInheritedFd, POLLIN, 0}, {children, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      sys::raw_exit(125);
    }
    if (p[1].revents) {
      signalfd_siginfo info;
      while (::read(children, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      }
      reap();
    }
    if (p[0].revents & POLLIN) {
      if (!receive(plan)) end_session();  // the supervisor has gone
    } else if (p[0].revents & (POLLHUP | POLLERR)) {
      end_session();
    }
  }
}

}  // namespace airlock::sandbox
