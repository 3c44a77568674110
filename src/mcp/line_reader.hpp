// Newline-delimited input from a peer that is not trusted (an MCP server's stdout): lines up to
// a bound, a longer one is an error rather than a growing buffer. Blocks in poll() on the
// descriptor and on a wake descriptor, so its owner can stop it from another thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/result.hpp"

namespace airlock::mcp {

class LineReader {
 public:
  // Neither descriptor is owned. `wake_fd` readable: next() returns nullopt (as at EOF).
  LineReader(int fd, int wake_fd, std::size_t max_line_bytes)
      : fd_(fd), wake_fd_(wake_fd), max_(max_line_bytes) {}

  // The next line without its "\n" (and a "\r" before it); nullopt at EOF or when woken.
  // Errors: "line_too_long" (the message names the bound), "read_failed".
  Result<std::optional<std::string>> next();

 private:
  Status fill();  // one read; sets eof_

  int fd_, wake_fd_;
  std::size_t max_;
  std::string buf_;
  std::size_t scanned_ = 0;  // no newline in buf_[0, scanned_)
  bool eof_ = false;
};

}  // namespace airlock::mcp
