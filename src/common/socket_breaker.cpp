#include "common/socket_breaker.hpp"

#include <sys/socket.h>

namespace airlock {

void SocketBreaker::attach(int fd) {
  fd_ = fd;
  if (broken_) ::shutdown(fd, SHUT_RDWR);
}

void SocketBreaker::detach() { fd_ = -1; }

void SocketBreaker::break_now() {
  broken_ = true;
  const int fd = fd_.load();
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);  // the blocked call returns; the owner closes
}

}  // namespace airlock
