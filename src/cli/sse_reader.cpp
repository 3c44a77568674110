#include "cli/sse_reader.hpp"

namespace airlock::cli {

Result<std::vector<SseEvent>> SseReader::feed(std::string_view bytes) {
  std::vector<SseEvent> out;
  for (char c : bytes) {
    if (c == '\n' && after_cr_) {  // the LF of a CRLF: the line already ended at the CR
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      take_line(line_, out);
      line_.clear();
      continue;
    }
    line_.push_back(c);
    if (line_.size() + data_.size() > max_event_bytes_)
      return Error::make("sse", "an event of the stream is larger than " + std::to_string(max_event_bytes_) + " bytes");
  }
  return out;
}

// One line of the stream: a field, a comment (":..."), or the blank line that ends an event.
void SseReader::take_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    if (has_data_) {
      if (!data_.empty() && data_.back() == '\n') data_.pop_back();
      out.push_back(SseEvent{std::move(data_), std::move(type_), last_id_});
    }
    data_.clear();
    type_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;
  const auto colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    data_.append(value);
    data_.push_back('\n');
    has_data_ = true;
  } else if (field == "event") {
    type_ = value;
  } else if (field == "id" && value.find('\0') == std::string_view::npos) {
    last_id_ = value;
  }  // retry and unknown fields: ignored, as the standard says
}

}  // namespace airlock::cli
