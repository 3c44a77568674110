#include "common/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace airlock {

std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char c = s[i];
  if (c < 0x80) return 1;
  std::size_t length;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) length = 2;
  else if (c == 0xE0) length = 3, low = 0xA0;         // not overlong
  else if (c == 0xED) length = 3, high = 0x9F;        // not a UTF-16 surrogate
  else if (c >= 0xE1 && c <= 0xEF) length = 3;
  else if (c == 0xF0) length = 4, low = 0x90;         // not overlong
  else if (c == 0xF4) length = 4, high = 0x8F;        // not past U+10FFFF
  else if (c >= 0xF1 && c <= 0xF3) length = 4;
  else return 0;
  if (text.size() - i < length || s[i + 1] < low || s[i + 1] > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if ((s[i + k] & 0xC0) != 0x80) return 0;
  return length;
}

bool is_valid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t size = text.size();
  std::size_t i = 0;
  while (i < size) {
    if (i + 8 <= size) {  // the usual case: eight ASCII bytes at once
      std::uint64_t block;
      std::memcpy(&block, s + i, 8);
      if ((block & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::size_t count_utf8_characters(std::string_view text) {
  std::size_t continuations = 0, i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t block;
    std::memcpy(&block, text.data() + i, 8);
    // 10xxxxxx: the high bit set and the next one clear.
    continuations += static_cast<std::size_t>(__builtin_popcountll(block & ~(block << 1) & 0x8080808080808080ull));
  }
  for (; i < text.size(); ++i) continuations += (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  return text.size() - continuations;
}

}  // namespace airlock
