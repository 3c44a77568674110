#include "backend/gvisor_session_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sandbox/session/session_init_files.hpp"

namespace airlock::backend::gvisor_session {
namespace {

using sandbox::session_protocol::Reply;

Error failed(const std::string& step) {
  return Error::make("setup_error", "gvisor session: " + step + ": " + std::strerror(errno));
}

// Everything the child needs, prepared before fork (the daemon is multithreaded).
struct SpawnArgs {
  std::vector<char*> argv;
  int user_ns = -1, net_ns = -1;
  int stdio[3] = {-1, -1, -1};
  bool terminal = false;
};

[[noreturn]] void spawn_child(const SpawnArgs& a) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (a.user_ns >= 0 && ::setns(a.user_ns, CLONE_NEWUSER) != 0) ::_exit(126);
  if (::setns(a.net_ns, CLONE_NEWNET) != 0) ::_exit(126);
  ::setsid();
  int high[3];
  for (int i = 0; i < 3; ++i) high[i] = ::fcntl(a.stdio[i], F_DUPFD, 3);
  for (int i = 0; i < 3; ++i)
    if (high[i] < 0 || ::dup2(high[i], i) != i) ::_exit(126);
  if (a.terminal) ::ioctl(0, TIOCSCTTY, 0);
  ::close_range(3, ~0U, 0);
  static const char* const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", nullptr};
  ::execve(a.argv[0], a.argv.data(), const_cast<char* const*>(env));
  ::_exit(127);
}

// Every descriptor but `a` and `b` (either may be -1): a fork holds copies of the daemon's,
// among them the write end of the pipe its own copier reads to EOF.
void close_all_but(int a, int b) {
  const unsigned lo = static_cast<unsigned>(std::min(a, b) < 0 ? std::max(a, b) : std::min(a, b));
  const unsigned hi = static_cast<unsigned>(std::max(a, b));
  ::close_range(3, lo - 1, 0);
  if (hi > lo + 1) ::close_range(lo + 1, hi - 1, 0);
  ::close_range(hi + 1, ~0U, 0);
}

// The copier's stack (the helper is a fork: this is its own copy).
alignas(16) char g_copier_stack[256 * 1024];

[[noreturn]] void file_helper(const std::string& workspace, unsigned owner, std::string& message, int fd,
                              int reply_w) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  close_all_but(fd, reply_w);
  // Entered before the user changes: the daemon's data directory may be closed to that user.
  if (::chdir(workspace.c_str()) != 0) ::_exit(126);
  if (::geteuid() == 0 &&
      (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, owner, owner, owner) != 0 ||
       ::syscall(SYS_setresuid, owner, owner, owner) != 0))
    ::_exit(126);
  if (!sandbox::session_files::open_workspace(".")) ::_exit(126);
  pid_t copier = 0;
  const int fds[1] = {fd};
  const Reply r = sandbox::session_files::serve(message.data(), message.size(), fds, fd >= 0 ? 1 : 0,
                                                g_copier_stack + sizeof g_copier_stack, &copier);
  if (::write(reply_w, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) ::_exit(126);
  ::close(reply_w);
  if (fd >= 0) ::close(fd);  // the copier holds its own: its end is the stream's
  if (copier <= 0) ::_exit(0);
  int status = 0;
  while (::waitpid(copier, &status, 0) < 0 && errno == EINTR) {
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : EIO);
}

}  // namespace

Result<Namespaces> open_namespaces(pid_t runsc_pid, bool user) {
  Namespaces ns;
  const std::string base = "/proc/" + std::to_string(runsc_pid) + "/ns/";
  ns.net.reset(::open((base + "net").c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns.net) return failed("open " + base + "net");
  if (user) {
    ns.user.reset(::open((base + "user").c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.user) return failed("open " + base + "user");
  }
  return ns;
}

Result<pid_t> spawn(const Namespaces& ns, const std::vector<std::string>& argv, const int (&stdio)[3],
                    bool terminal) {
  SpawnArgs a;
  for (const auto& s : argv) a.argv.push_back(const_cast<char*>(s.c_str()));
  a.argv.push_back(nullptr);
  a.user_ns = ns.user.get();
  a.net_ns = ns.net.get();
  for (int i = 0; i < 3; ++i) a.stdio[i] = stdio[i];
  a.terminal = terminal;
  const pid_t pid = ::fork();
  if (pid < 0) return failed("fork");
  if (pid == 0) spawn_child(a);
  return pid;
}

CommandResult run_in(const Namespaces& ns, const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CommandResult result;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return result;
  UniqueFd out_r(out[0]), out_w(out[1]);
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int stdio[3] = {null.get(), out_w.get(), out_w.get()};
  auto pid = spawn(ns, argv, stdio, false);
  out_w.reset();
  if (!pid) return result;
  result.started = true;
  result.timed_out = read_output_until(out_r.get(), std::chrono::steady_clock::now() + timeout, result.output);
  if (result.timed_out) ::kill(-*pid, SIGKILL);  // its own session and group
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

Result<Reply> file_operation(const std::string& workspace, unsigned owner, const std::string& message, int fd,
                             pid_t* helper) {
  *helper = 0;
  int reply[2];
  if (::pipe2(reply, O_CLOEXEC) != 0) return failed("pipe");
  UniqueFd reply_r(reply[0]), reply_w(reply[1]);
  std::string copy = message;  // serve() may change it: the helper's own copy
  const pid_t pid = ::fork();
  if (pid < 0) return failed("fork the file helper");
  if (pid == 0) file_helper(workspace, owner, copy, fd, reply_w.get());
  reply_w.reset();
  Reply r{};
  ssize_t n;
  while ((n = ::read(reply_r.get(), &r, sizeof r)) < 0 && errno == EINTR) {
  }
  const bool streams = n == static_cast<ssize_t>(sizeof r) && r.err == 0 && fd >= 0;
  if (streams) {
    *helper = pid;
    return r;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof r))
    return Error::make("file_error", "the workspace's file helper failed before it answered");
  return r;
}

}  // namespace airlock::backend::gvisor_session
