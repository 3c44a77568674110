// Hexadecimal: the one encoder and digit decoder every layer uses (digests, audit hashes and
// keys, DLP's encoded literals and JSON \u escapes).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace airlock {

// Two digits per byte, lower case unless `upper`.
std::string hex_encode(const unsigned char* data, std::size_t size, bool upper = false);
inline std::string hex_encode(std::string_view bytes, bool upper = false) {
  return hex_encode(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), upper);
}

// The value of one hex digit (either case), or -1.
inline int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace airlock
