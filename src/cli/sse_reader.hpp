// Server-Sent Events (the WHATWG HTML "event stream" format) as a client reads them: the bytes
// of a text/event-stream body, fed in the pieces they arrive in, become whole events. The MCP
// bridge (mcp_bridge.cpp) reads the daemon's POST answers and its GET stream with it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace airlock::cli {

struct SseEvent {
  std::string data;   // the data lines, joined with "\n"
  std::string type;   // the event field ("" means "message")
  std::string id;     // the last id field seen so far in the stream (for Last-Event-ID)
};

class SseReader {
 public:
  explicit SseReader(std::size_t max_event_bytes = 64 * 1024 * 1024) : max_event_bytes_(max_event_bytes) {}

  // The events `bytes` completes, in order. An event larger than the limit is an error
  // (code "sse"); the reader is then unusable.
  Result<std::vector<SseEvent>> feed(std::string_view bytes);
  const std::string& last_event_id() const { return last_id_; }

 private:
  void take_line(std::string_view line, std::vector<SseEvent>& out);

  std::size_t max_event_bytes_;
  std::string line_;          // the line being read
  bool after_cr_ = false;     // the last byte was CR: a following LF ends no second line
  std::string data_, type_, last_id_;
  bool has_data_ = false;
};

}  // namespace airlock::cli
