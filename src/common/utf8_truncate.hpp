// Cutting text to a size in bytes without cutting a UTF-8 character in two (a half character
// makes the text invalid UTF-8, which JSON output refuses).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace airlock {

// At most `max` bytes of `text`, ending before a character that does not fit whole.
inline std::string truncate_utf8(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  std::size_t end = max;
  // Back to the first byte of the character that does not fit (not a continuation byte).
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

}  // namespace airlock
