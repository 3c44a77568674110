#include "backend/runsc_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace airlock::backend {
namespace {

constexpr std::size_t kMaxOutput = 64 * 1024;

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> RunscInvocation::global_args(const std::string& state_root) const {
  std::vector<std::string> args = {runsc, "--root=" + state_root, "--platform=" + platform,
                                   "--ignore-cgroups"};
  if (rootless) args.push_back("--rootless");
  return args;
}

bool read_output_until(int fd, std::chrono::steady_clock::time_point deadline, std::string& out) {
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r == 0;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (out.size() < kMaxOutput) out.append(buf, static_cast<std::size_t>(n));
  }
}

CommandResult run_bounded(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CommandResult result;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return result;
  auto args = c_argv(argv);
  const char* env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: a timeout kills everything it started
    int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execve(args[0], args.data(), const_cast<char* const*>(env));
    ::_exit(127);
  }
  ::close(out[1]);
  if (pid < 0) {
    ::close(out[0]);
    return result;
  }
  ::setpgid(pid, pid);  // also here: no race with the kill below
  result.started = true;
  result.timed_out = read_output_until(out[0], std::chrono::steady_clock::now() + timeout, result.output);
  ::close(out[0]);
  if (result.timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

CommandResult force_delete(const RunscInvocation& runsc, const std::string& state_root,
                           const std::string& container_id) {
  auto argv = runsc.global_args(state_root);
  argv.insert(argv.end(), {"delete", "--force", container_id});
  return run_bounded(argv, std::chrono::seconds(10));
}

}  // namespace airlock::backend
