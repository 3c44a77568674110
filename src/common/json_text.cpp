#include "common/json_text.hpp"

#include <cstdint>
#include <cstring>

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

constexpr std::uint64_t kOnes = 0x0101010101010101ull;
constexpr std::uint64_t kHighs = 0x8080808080808080ull;

// Some byte of `block` is below 0x20, a quote or a backslash (SWAR: each test sets a byte's high
// bit where it holds; a byte that is >= 0x80 is never a match, hence the ~block).
bool needs_escape(std::uint64_t block) {
  auto zero_byte = [](std::uint64_t x) { return (x - kOnes) & ~x & kHighs; };
  std::uint64_t control = (block - 0x20 * kOnes) & ~block & kHighs;
  return (control | zero_byte(block ^ ('"' * kOnes)) | zero_byte(block ^ ('\\' * kOnes))) != 0;
}

bool is_escaped(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

void append_string(const std::string& s, std::string& out) {
  if (!is_valid_utf8(s)) {  // nlohmann's replacement of each bad sequence with U+FFFD
    out += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out.push_back('"');
  std::size_t plain_from = 0, i = 0;
  while (i < s.size()) {
    if (i + 8 <= s.size()) {
      std::uint64_t block;
      std::memcpy(&block, s.data() + i, 8);
      if (!needs_escape(block)) {
        i += 8;
        continue;
      }
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (is_escaped(c)) {
      out.append(s, plain_from, i - plain_from);
      append_json_escape(c, out);
      plain_from = i + 1;
    }
    ++i;
  }
  out.append(s, plain_from, s.size() - plain_from);
  out.push_back('"');
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

}  // namespace airlock
