#include "dlp/json_strings.hpp"

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

DecodedStrings decode_escaped_strings(std::string_view data) {
  DecodedStrings out;
  std::string decoded;
  std::vector<Span> origin;
  std::size_t i = 0;
  while (i < data.size()) {
    if (data[i] != '"') {
      ++i;
      continue;
    }
    // A string literal: decode it, keep it only if it had an escape.
    std::size_t at = i + 1;
    bool escaped = false;
    decoded.clear();
    origin.clear();
    while (at < data.size() && data[at] != '"') {
      std::size_t before = decoded.size();
      std::size_t length = 1;
      if (data[at] == '\\') {
        length = decode_escape(data, at, decoded);
        escaped = true;
      } else {
        decoded.push_back(data[at]);
      }
      for (std::size_t k = before; k < decoded.size(); ++k) origin.push_back({at, at + length});
      at += length;
    }
    if (escaped) {
      out.text += decoded;
      out.origin.insert(out.origin.end(), origin.begin(), origin.end());
      out.text.push_back('\n');
      out.origin.push_back({at, at});
    }
    i = at + 1;
  }
  return out;
}

}  // namespace airlock::dlp::detail
