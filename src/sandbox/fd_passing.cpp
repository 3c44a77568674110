#include "sandbox/fd_passing.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace airlock::sandbox {

bool send_fds(int socket, char tag, const int* fds, std::size_t count) {
  return send_message(socket, &tag, 1, fds, count);
}

bool send_message(int socket, const void* data, std::size_t size, const int* fds, std::size_t count) {
  if (count > kMaxPassedFds) {
    errno = EINVAL;
    return false;
  }
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (count > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * count);
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * count);
    std::memcpy(CMSG_DATA(cm), fds, sizeof(int) * count);
  }
  ssize_t n;
  do n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(size);
}

ssize_t receive_fds(int socket, ReceivedFds& out, int flags) {
  char tag = 0;
  return receive_message(socket, &tag, 1, out, flags);
}

ssize_t receive_message(int socket, void* data, std::size_t size, ReceivedFds& out, int flags) {
  out = ReceivedFds{};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  iovec iov{data, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(socket, &msg, flags | MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return n;
  out.tag = static_cast<const char*>(data)[0];
  out.truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
  out.data_truncated = (msg.msg_flags & MSG_TRUNC) != 0;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count && out.count < kMaxPassedFds; ++i)
      std::memcpy(&out.fds[out.count++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
  }
  return n;
}

}  // namespace airlock::sandbox
