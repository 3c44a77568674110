// The last bytes a sandboxed program wrote on its stderr, in a bounded ring, read from its
// pipe on a thread of the caller's (LocalSession, GvisorStdioSession): a long-lived program's
// log is kept only as far as the ring reaches, and marks say what was written since.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/unique_fd.hpp"

namespace airlock::backend {

class StderrRing {
 public:
  explicit StderrRing(std::size_t capacity) : capacity_(capacity) {}

  // Until every process that holds the pipe has gone (the sandbox's end).
  void read_until_eof(UniqueFd fd) {
    std::array<char, 16384> buf;
    for (;;) {
      const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      append(buf.data(), static_cast<std::size_t>(n));
    }
  }

  void append(const char* data, std::size_t n) {
    std::lock_guard lock(mu_);
    total_ += n;
    ring_.append(data, n);
    if (ring_.size() > capacity_) ring_.erase(0, ring_.size() - capacity_);
  }

  std::uint64_t mark() const {
    std::lock_guard lock(mu_);
    return total_;
  }

  // What is still in the ring of the bytes after `mark`, the last `max_bytes` of it.
  std::string since(std::uint64_t mark, std::size_t max_bytes) const {
    std::lock_guard lock(mu_);
    const std::uint64_t ring_start = total_ - ring_.size();
    const std::uint64_t from = std::max(mark, ring_start);
    std::string text = ring_.substr(static_cast<std::size_t>(from - ring_start));
    if (text.size() > max_bytes) text.erase(0, text.size() - max_bytes);
    return text;
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::string ring_;         // the last capacity_ bytes
  std::uint64_t total_ = 0;  // every byte so far; the ring ends here
};

}  // namespace airlock::backend
