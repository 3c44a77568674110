#include "backend/gvisor_session_checkpoint.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/unique_fd.hpp"
#include "sandbox/landlock.hpp"

namespace airlock::backend::gvisor_session {
namespace {

Error unpack_error(const std::string& step, int err) {
  return Error::make("snapshot_failed", "unpacking the workspace: " + step + (err ? std::string(": ") + std::strerror(err) : ""));
}

// What tar may touch: read (and run) anything, write only beneath the workspace. A second
// layer under the session's user and tar's own refusal of members that lead out: the archive
// was made inside the session, by whatever runs there.
sandbox::LandlockPlan tar_landlock(const std::string& workspace) {
  sandbox::LandlockPlan plan;
  plan.paths = {{"/", sandbox::landlock::kReadOnly, true}, {workspace, sandbox::landlock::kReadWrite, true}};
  sandbox::finish_landlock_plan(plan, sandbox::landlock_abi());
  return plan;
}

// The child: in the workspace (entered while root: the daemon's directories above it need
// not be open to the session's user), the archive as stdin, its stderr into `err`, Landlock
// (applied while root, which may still open the workspace by its path), the session's user,
// then tar.
[[noreturn]] void tar_child(int workspace, int archive, int err, unsigned uid, unsigned gid, char* const argv[],
                            const sandbox::LandlockPlan& landlock) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::fchdir(workspace) != 0 || ::dup2(archive, 0) < 0 || ::dup2(err, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(126);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(126);
  const char* step = nullptr;
  if (landlock.abi > 0 && sandbox::apply_landlock(landlock, &step) != 0) ::_exit(125);
  if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(126);
  static const char* const env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", nullptr};
  ::execve(argv[0], argv, const_cast<char* const*>(env));
  ::_exit(127);
}

}  // namespace

Status unpack_workspace(const std::string& archive, const std::string& workspace, unsigned uid, unsigned gid,
                        std::chrono::milliseconds timeout) {
  UniqueFd in(::open(archive.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return unpack_error("open " + archive, errno);
  UniqueFd dir(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return unpack_error("open " + workspace, errno);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return unpack_error("pipe", errno);
  UniqueFd err_r(p[0]), err_w(p[1]);
  std::vector<std::string> args = {"/usr/bin/tar", "--extract", "--file=-", "--directory=.",
                                   "--no-same-owner", "--no-overwrite-dir"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const sandbox::LandlockPlan landlock = tar_landlock(workspace);
  const pid_t pid = ::fork();  // after it, the child only makes syscalls (the daemon has threads)
  if (pid < 0) return unpack_error("fork", errno);
  if (pid == 0) tar_child(dir.get(), in.get(), err_w.get(), uid, gid, argv.data(), landlock);
  err_w.reset();
  std::string said;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (bool open = true; open;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd f{err_r.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&f, 1, static_cast<int>(left.count())) == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const ssize_t n = ::read(err_r.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) open = false;
    else if (said.size() < 4096) said.append(buf, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return unpack_error("tar did not finish in " + std::to_string(timeout.count() / 1000) + " s", 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return unpack_error("tar failed (status " + std::to_string(status) + ")" + (said.empty() ? "" : ": " + said), 0);
  return {};
}

}  // namespace airlock::backend::gvisor_session
