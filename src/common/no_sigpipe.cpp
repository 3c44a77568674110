#include "common/no_sigpipe.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace airlock {

ssize_t write_without_sigpipe(int fd, const void* data, std::size_t size) {
  // The kernel sends SIGPIPE to the writing thread. Block it here for the call and, if this
  // write raised it, take it off the thread's pending set before unblocking.
  sigset_t pipe_only, previous, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigemptyset(&pending);
  ::sigpending(&pending);
  const bool already_pending = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
  const ssize_t n = ::write(fd, data, size);
  const int saved = errno;
  // A write the reader left during returns what it wrote before, and still raises SIGPIPE.
  sigemptyset(&pending);
  ::sigpending(&pending);
  if (!already_pending && sigismember(&pending, SIGPIPE) == 1) {
    const timespec now{};
    while (::sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = saved;
  return n;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write_without_sigpipe(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace airlock
