#include "dlp/json_strings.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/hex.hpp"

namespace airlock::dlp::detail {
namespace {

// Four hex digits at data[at], or -1.
long read_hex4(std::string_view data, std::size_t at) {
  if (at + 4 > data.size()) return -1;
  long value = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    int digit = hex_digit_value(data[at + i]);
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

void append_utf8(unsigned long code_point, std::string& out) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

// Decodes one escape at data[at] == '\\'; appends the bytes and returns the escape's length.
std::size_t decode_escape(std::string_view data, std::size_t at, std::string& out) {
  if (at + 1 >= data.size()) {
    out.push_back('\\');
    return 1;
  }
  char c = data[at + 1];
  switch (c) {
    case '"': case '\\': case '/': out.push_back(c); return 2;
    case 'b': out.push_back('\b'); return 2;
    case 'f': out.push_back('\f'); return 2;
    case 'n': out.push_back('\n'); return 2;
    case 'r': out.push_back('\r'); return 2;
    case 't': out.push_back('\t'); return 2;
    case 'u': {
      long unit = read_hex4(data, at + 2);
      if (unit < 0) break;
      if (unit >= 0xD800 && unit <= 0xDBFF && data.substr(at + 6, 2) == "\\u") {
        long low = read_hex4(data, at + 8);
        if (low >= 0xDC00 && low <= 0xDFFF) {
          append_utf8(0x10000 + ((static_cast<unsigned long>(unit) - 0xD800) << 10) +
                          (static_cast<unsigned long>(low) - 0xDC00),
                      out);
          return 12;
        }
      }
      if (unit >= 0xD800 && unit <= 0xDFFF) unit = 0xFFFD;  // a lone surrogate
      append_utf8(static_cast<unsigned long>(unit), out);
      return 6;
    }
    default: break;
  }
  out.push_back('\\');  // not an escape: keep the bytes
  return 1;
}

}  // namespace

bool looks_like_json(std::string_view data) {
  auto first = data.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (data[first] == '{' || data[first] == '[');
}

Span DecodedStrings::origin_of(std::size_t i) const {
  // The last piece that starts at or before i.
  auto after = std::upper_bound(pieces.begin(), pieces.end(), i,
                                [](std::size_t at, const Piece& p) { return at < p.decoded; });
  const Piece& piece = *(after - 1);
  if (!piece.plain) return {piece.original, piece.original + piece.length};
  std::size_t at = piece.original + (i - piece.decoded);
  return {at, at + 1};
}

namespace {

// The end of the plain run at data[at...]: the next quote or backslash, eight bytes at a time
// (SWAR: a byte equal to c leaves a zero byte in block ^ c, whose high bit the test sets).
std::size_t plain_run_end(std::string_view data, std::size_t at) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  auto has_zero_byte = [](std::uint64_t x) { return ((x - kOnes) & ~x & kHighs) != 0; };
  for (; at + 8 <= data.size(); at += 8) {
    std::uint64_t block;
    std::memcpy(&block, data.data() + at, 8);
    if (has_zero_byte(block ^ ('"' * kOnes)) || has_zero_byte(block ^ ('\\' * kOnes))) break;
  }
  while (at < data.size() && data[at] != '"' && data[at] != '\\') ++at;
  return at;
}

void append_plain(std::string_view data, std::size_t from, std::size_t to, DecodedStrings& out) {
  if (to == from) return;
  out.pieces.push_back({out.text.size(), from, to - from, true});
  out.text.append(data.substr(from, to - from));
}

// Decodes a string's contents from data[at] (a backslash) to its closing quote into `out`;
// returns the offset of that quote (or data.size()).
std::size_t decode_contents(std::string_view data, std::size_t at, DecodedStrings& out) {
  while (at < data.size() && data[at] != '"') {
    if (data[at] == '\\') {
      const std::size_t decoded = out.text.size();
      const std::size_t length = decode_escape(data, at, out.text);
      out.pieces.push_back({decoded, at, length, false});
      at += length;
      continue;
    }
    const std::size_t end = plain_run_end(data, at);
    append_plain(data, at, end, out);
    at = end;
  }
  return at;
}

}  // namespace

DecodedStrings decode_strings_in_place(std::string_view data) {
  DecodedStrings out;
  std::size_t copied = 0;  // data[0, copied) is in out.text
  for (std::size_t i = data.find('"'); i < data.size(); i = data.find('"', i)) {
    const std::size_t first_special = plain_run_end(data, i + 1);
    if (first_special >= data.size()) break;  // unterminated, no escape
    if (data[first_special] == '"') {         // no escape: it reads the same as it is
      i = first_special + 1;
      continue;
    }
    append_plain(data, copied, first_special, out);
    copied = decode_contents(data, first_special, out);  // the closing quote is copied next
    i = copied + 1;
  }
  if (out.pieces.empty()) return out;  // nothing to decode: scan the document itself
  append_plain(data, copied, data.size(), out);
  return out;
}

}  // namespace airlock::dlp::detail
