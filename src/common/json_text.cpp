#include "common/json_text.hpp"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/utf8.hpp"

namespace airlock {

void append_json_escape(unsigned char c, std::string& out) {
  switch (c) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out.append(escape, sizeof escape);
    }
  }
}

namespace {

// Each byte's escape as dump_compact writes it (length 0: the byte is written as it is).
struct EscapeTable {
  char text[256][6];
  std::uint8_t length[256];
};

const EscapeTable& escapes() {
  static const EscapeTable table = [] {
    EscapeTable t{};
    for (unsigned c = 0; c < 256; ++c) {
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      std::string escape;
      append_json_escape(static_cast<unsigned char>(c), escape);
      std::memcpy(t.text[c], escape.data(), escape.size());
      t.length[c] = static_cast<std::uint8_t>(escape.size());
    }
    return t;
  }();
  return table;
}

#if defined(__SSE2__)
// Bit i set: block byte i is a quote, a backslash or below 0x20.
unsigned escape_mask(__m128i block) {
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i below = _mm_cmpeq_epi8(_mm_min_epu8(block, _mm_set1_epi8(0x1F)), block);
  return static_cast<unsigned>(_mm_movemask_epi8(
      _mm_or_si128(below, _mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)))));
}
#endif

char* write_escape(const EscapeTable& t, unsigned char c, char* w) {
  std::memcpy(w, t.text[c], sizeof t.text[c]);  // the room has 6 bytes to spare (see below)
  return w + t.length[c];
}

// A string with its escapes, written through a pointer into room sized once: 16 bytes are
// stored at a time and the pointer moves past the plain ones (an escape every few bytes, as in
// a string of log lines, made the appends of a run and an escape most of the time).
void append_string(const std::string& s, std::string& out) {
  if (!is_valid_utf8(s)) {  // nlohmann's replacement of each bad sequence with U+FFFD
    out += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  constexpr std::size_t kSlack = 16;  // a block store or an escape's 6 bytes past the end
  const std::size_t at = out.size();
  out.resize(at + s.size() + json_escape_extra(s) + 2 + kSlack);
  const EscapeTable& t = escapes();
  char* w = out.data() + at;
  *w++ = '"';
  const char* p = s.data();
  const char* const end = p + s.size();
#if defined(__SSE2__)
  while (end - p >= 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(w), block);
    const unsigned mask = escape_mask(block);
    if (mask == 0) {
      p += 16, w += 16;
      continue;
    }
    const auto plain = static_cast<std::size_t>(__builtin_ctz(mask));
    p += plain, w += plain;
    w = write_escape(t, static_cast<unsigned char>(*p++), w);
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (t.length[c] != 0) w = write_escape(t, c, w);
    else *w++ = static_cast<char>(c);
  }
  *w++ = '"';
  out.resize(static_cast<std::size_t>(w - out.data()));
}

void append_value(const nlohmann::json& value, std::string& out) {
  switch (value.type()) {
    case nlohmann::json::value_t::string: append_string(value.get_ref<const std::string&>(), out); return;
    case nlohmann::json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& item : value) {
        if (!first) out.push_back(',');
        first = false;
        append_value(item, out);
      }
      out.push_back(']');
      return;
    }
    case nlohmann::json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, item] : value.get_ref<const nlohmann::json::object_t&>()) {
        if (!first) out.push_back(',');
        first = false;
        append_string(key, out);
        out.push_back(':');
        append_value(item, out);
      }
      out.push_back('}');
      return;
    }
    default: append_compact_scalar(value, out);
  }
}

}  // namespace

void append_compact_scalar(const nlohmann::json& value, std::string& out) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: out += "null"; return;
    case nlohmann::json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case nlohmann::json::value_t::number_integer: out += std::to_string(value.get<std::int64_t>()); return;
    case nlohmann::json::value_t::number_unsigned: out += std::to_string(value.get<std::uint64_t>()); return;
    default:  // number_float (nlohmann's shortest form), binary, discarded
      out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

std::string dump_compact(const nlohmann::json& value) {
  std::string out;
  append_value(value, out);
  return out;
}

std::size_t json_escape_extra(std::string_view bytes) {
  const EscapeTable& t = escapes();
  std::size_t extra = 0, i = 0;
#if defined(__SSE2__)
  // Every escape is one byte more, and \u00XX four more again: the control characters without
  // a short form (DumpCompact's test writes every byte both ways).
  auto equals = [](__m128i block, char c) { return _mm_cmpeq_epi8(block, _mm_set1_epi8(c)); };
  for (; i + 16 <= bytes.size(); i += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes.data() + i));
    const unsigned escaped = escape_mask(block);
    if (escaped == 0) continue;
    const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(block, _mm_set1_epi8(0x1F)), block);
    const __m128i short_form = _mm_or_si128(
        _mm_or_si128(equals(block, '\b'), equals(block, '\f')),
        _mm_or_si128(equals(block, '\n'), _mm_or_si128(equals(block, '\r'), equals(block, '\t'))));
    const auto long_form = static_cast<unsigned>(_mm_movemask_epi8(_mm_andnot_si128(short_form, control)));
    extra += static_cast<std::size_t>(__builtin_popcount(escaped) + 4 * __builtin_popcount(long_form));
  }
#endif
  for (; i < bytes.size(); ++i) {
    const std::uint8_t length = t.length[static_cast<unsigned char>(bytes[i])];
    extra += length == 0 ? 0 : length - 1u;
  }
  return extra;
}

}  // namespace airlock
