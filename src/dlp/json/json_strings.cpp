#include "dlp/json/json_strings.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Writes the UTF-8 form of a code point at w; returns the end.
char* put_utf8(unsigned long code_point, char* w) {
  if (code_point < 0x80) {
    *w++ = static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    *w++ = static_cast<char>(0xC0 | (code_point >> 6));
    *w++ = static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    *w++ = static_cast<char>(0xE0 | (code_point >> 12));
    *w++ = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    *w++ = static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    *w++ = static_cast<char>(0xF0 | (code_point >> 18));
    *w++ = static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    *w++ = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    *w++ = static_cast<char>(0x80 | (code_point & 0x3F));
  }
  return w;
}

// Decodes one escape at data[at] == '\\', writing its bytes at w (never more than the escape's
// own length); returns the escape's length.
std::size_t decode_escape(std::string_view data, std::size_t at, char*& w) {
  if (at + 1 >= data.size()) {
    *w++ = '\\';
    return 1;
  }
  char c = data[at + 1];
  switch (c) {
    case '"': case '\\': case '/': *w++ = c; return 2;
    case 'b': *w++ = '\b'; return 2;
    case 'f': *w++ = '\f'; return 2;
    case 'n': *w++ = '\n'; return 2;
    case 'r': *w++ = '\r'; return 2;
    case 't': *w++ = '\t'; return 2;
    case 'u': {
      long unit = read_hex4(data, at + 2);
      if (unit < 0) break;
      if (unit >= 0xD800 && unit <= 0xDBFF && data.substr(at + 6, 2) == "\\u") {
        long low = read_hex4(data, at + 8);
        if (low >= 0xDC00 && low <= 0xDFFF) {
          w = put_utf8(0x10000 + ((static_cast<unsigned long>(unit) - 0xD800) << 10) +
                           (static_cast<unsigned long>(low) - 0xDC00),
                       w);
          return 12;
        }
      }
      if (unit >= 0xD800 && unit <= 0xDFFF) unit = 0xFFFD;  // a lone surrogate
      w = put_utf8(static_cast<unsigned long>(unit), w);
      return 6;
    }
    default: break;
  }
  *w++ = '\\';  // not an escape: keep the bytes
  return 1;
}

constexpr std::string_view kJsonBlank = " \t\r\n";

// The end of the run at data[at...] a JSON string holds as it is: the next quote or backslash
// (and with kControls, the next control character, which a valid string never holds raw), 16
// bytes at a time.
template <bool kControls>
std::size_t run_end(std::string_view data, std::size_t at) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x1F);
  for (; at + 16 <= data.size(); at += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data.data() + at));
    __m128i special = _mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash));
    if constexpr (kControls) special = _mm_or_si128(special, _mm_cmpeq_epi8(_mm_min_epu8(block, space), block));
    const int found = _mm_movemask_epi8(special);
    if (found != 0) return at + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(found)));
  }
#endif
  while (at < data.size() && data[at] != '"' && data[at] != '\\' &&
         (!kControls || static_cast<unsigned char>(data[at]) >= 0x20))
    ++at;
  return at;
}

// The length of the JSON escape at data[at] == '\\', or 0 when it is not one JSON has.
std::size_t escape_length(std::string_view data, std::size_t at) {
  if (at + 1 >= data.size()) return 0;
  switch (data[at + 1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return 2;
    case 'u': return read_hex4(data, at + 2) >= 0 ? 6 : 0;
    default: return 0;
  }
}

}  // namespace

bool looks_like_json(std::string_view data) {
  auto first = data.find_first_not_of(kJsonBlank);
  if (first == std::string_view::npos) return false;
  return data[first] == '{' || data[first] == '[' || (data[first] == '"' && is_json_string(data));
}

bool is_json_string(std::string_view data) {
  const auto first = data.find_first_not_of(kJsonBlank), last = data.find_last_not_of(kJsonBlank);
  if (first == std::string_view::npos || last == first || data[first] != '"' || data[last] != '"') return false;
  const std::string_view contents = data.substr(first + 1, last - first - 1);
  for (std::size_t at = run_end<true>(contents, 0); at < contents.size(); at = run_end<true>(contents, at)) {
    const std::size_t length = contents[at] == '\\' ? escape_length(contents, at) : 0;
    if (length == 0) return false;  // a quote, a control character, or not an escape
    at += length;
  }
  return true;
}

Span DecodedStrings::origin_of(std::size_t i) const {
  // The last escape that starts at or before i.
  auto after = std::upper_bound(escapes.begin(), escapes.end(), i,
                                [](std::size_t at, const Escape& e) { return at < e.decoded; });
  if (after == escapes.begin()) return {i, i + 1};  // before the first escape: byte for byte
  const Escape& escape = *(after - 1);
  const std::size_t past = escape.decoded + escape.decoded_length;
  if (i < past) return {escape.original, escape.original + escape.length};
  const std::size_t at = escape.original + escape.length + (i - past);
  return {at, at + 1};
}

namespace {

// Decodes a string's contents from data[at] (a backslash) to its closing quote, writing at w;
// returns the offset of that quote (or data.size()).
std::size_t decode_contents(std::string_view data, std::size_t at, DecodedStrings& out, char*& w) {
  char* const text = out.text.data();
  while (at < data.size() && data[at] != '"') {
    if (data[at] == '\\') {
      char* const decoded = w;
      const std::size_t length = decode_escape(data, at, w);
      out.escapes.push_back({static_cast<std::size_t>(decoded - text), at, static_cast<std::uint8_t>(length),
                             static_cast<std::uint8_t>(w - decoded)});
      at += length;
      continue;
    }
    const std::size_t end = run_end<false>(data, at);
    std::memcpy(w, data.data() + at, end - at);
    w += end - at;
    at = end;
  }
  return at;
}

// 16 bytes at a time (std::count went a byte at a time, and took longer than the decoding).
std::size_t count_backslashes(std::string_view data, std::size_t at) {
  std::size_t count = 0;
#if defined(__SSE2__)
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; at + 16 <= data.size(); at += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data.data() + at));
    count += static_cast<std::size_t>(
        __builtin_popcount(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, backslash)))));
  }
#endif
  for (; at < data.size(); ++at) count += data[at] == '\\';
  return count;
}

// Room for the decoded text (never longer than the original) and an entry per backslash from
// `from` on: growing them by copying was most of the decoding's time. The text is written
// through a pointer and cut to its length at the end.
char* prepare(std::string_view data, std::size_t from, DecodedStrings& out) {
  out.text.resize(data.size());
  out.escapes.reserve(count_backslashes(data, from));
  return out.text.data();
}

char* copy(std::string_view data, std::size_t from, std::size_t to, char* w) {
  std::memcpy(w, data.data() + from, to - from);
  return w + (to - from);
}

}  // namespace

DecodedStrings decode_strings_in_place(std::string_view data) {
  DecodedStrings out;
  char* w = nullptr;       // where the next decoded byte goes
  std::size_t copied = 0;  // data[0, copied) is in out.text
  for (std::size_t i = data.find('"'); i < data.size(); i = data.find('"', i)) {
    const std::size_t first_special = run_end<false>(data, i + 1);
    if (first_special >= data.size()) break;  // unterminated, no escape
    if (data[first_special] == '"') {         // no escape: it reads the same as it is
      i = first_special + 1;
      continue;
    }
    if (!w) w = prepare(data, first_special, out);
    w = copy(data, copied, first_special, w);
    copied = decode_contents(data, first_special, out, w);  // the closing quote is copied next
    i = copied + 1;
  }
  if (!w) return out;  // nothing to decode: scan the document itself
  w = copy(data, copied, data.size(), w);
  out.text.resize(static_cast<std::size_t>(w - out.text.data()));
  return out;
}

}  // namespace airlock::dlp::detail
