// write() to a pipe whose reader may be gone, without SIGPIPE. A library must neither kill its
// host process nor depend on it ignoring SIGPIPE: a sandboxed program that exits without
// reading its stdin would otherwise take the daemon (or a test binary) down with it.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <string_view>

namespace airlock {

// Like ::write, but a write to a pipe without readers only fails with EPIPE.
ssize_t write_without_sigpipe(int fd, const void* data, std::size_t size);

// Writes all of `data` (short writes continued, EINTR retried), without SIGPIPE. False when a
// write fails, with errno saying why (EIO for a write that wrote nothing).
bool write_all(int fd, std::string_view data);

}  // namespace airlock
