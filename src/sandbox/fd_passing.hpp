// Descriptors passed over the control socket between the supervisor and the sandbox's child
// (SOCK_SEQPACKET): one record per message, a one-byte tag and up to kMaxPassedFds
// descriptors (SCM_RIGHTS). Nothing here allocates: the child calls it between clone3 and
// execve.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace airlock::sandbox {

inline constexpr std::size_t kMaxPassedFds = 64;

// Sends `count` (at most kMaxPassedFds) descriptors in one record tagged `tag`. Returns false
// with errno set.
bool send_fds(int socket, char tag, const int* fds, std::size_t count);
// The same with `size` bytes of `data` as the record (its first byte is its tag): a session's
// exec request (session/session_protocol.hpp).
bool send_message(int socket, const void* data, std::size_t size, const int* fds, std::size_t count);

struct ReceivedFds {
  char tag = 0;
  int fds[kMaxPassedFds] = {};
  std::size_t count = 0;
  bool truncated = false;  // the sender passed more than fit; the kernel closed the rest
  bool data_truncated = false;  // receive_message: the record was longer than the buffer
};

// Receives one record into `out`; the descriptors are close-on-exec. Returns what recvmsg
// returned: 1 for a record, 0 when the peer has gone, -1 with errno set.
ssize_t receive_fds(int socket, ReceivedFds& out, int flags);
// The same with the record's bytes into `data` (at most `size`; out.tag is the first): returns
// how many arrived.
ssize_t receive_message(int socket, void* data, std::size_t size, ReceivedFds& out, int flags);

}  // namespace airlock::sandbox
