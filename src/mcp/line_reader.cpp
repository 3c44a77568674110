#include "mcp/line_reader.hpp"

#include <poll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace airlock::mcp {

Status LineReader::fill() {
  std::array<pollfd, 2> fds{pollfd{fd_, POLLIN, 0}, pollfd{wake_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) >= 0) break;
    if (errno != EINTR) return Error::make("read_failed", std::string("poll: ") + std::strerror(errno));
  }
  if (fds[1].revents != 0) {
    eof_ = true;  // woken: the owner is stopping
    return {};
  }
  std::array<char, 65536> chunk;
  for (;;) {
    ssize_t n = ::read(fd_, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return {};
    if (n < 0) return Error::make("read_failed", std::string("read: ") + std::strerror(errno));
    if (n == 0) eof_ = true;
    buf_.append(chunk.data(), static_cast<std::size_t>(n));
    return {};
  }
}

Result<std::optional<std::string>> LineReader::next() {
  for (;;) {
    const auto nl = buf_.find('\n', scanned_);
    const std::size_t line_length = nl == std::string::npos ? buf_.size() : nl;
    if (line_length > max_)
      return Error::make("line_too_long", "a line longer than " + std::to_string(max_) +
                                              " bytes");
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      scanned_ = 0;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return std::optional<std::string>(std::move(line));
    }
    scanned_ = buf_.size();
    if (eof_) return std::optional<std::string>();  // a partial last line is dropped
    if (auto r = fill(); !r) return r.error();
  }
}

}  // namespace airlock::mcp
