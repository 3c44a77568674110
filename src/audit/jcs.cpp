#include "audit/jcs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/canonical_json.hpp"

namespace airlock::audit {
namespace {

Error invalid(const std::string& why) { return Error::make("invalid_json", why); }

// A member name as UTF-16 code units: RFC 8785 sorts by them (UTF-8 byte order differs for
// characters past U+FFFF against U+E000-U+FFFF).
std::u16string utf16_units(const std::string& utf8) {
  std::u16string out;
  for (std::size_t i = 0; i < utf8.size();) {
    const auto b = static_cast<unsigned char>(utf8[i]);
    const std::size_t length = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = length == 1 ? b : b & (0x3F >> (length - 1));
    for (std::size_t k = 1; k < length && i + k < utf8.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(utf8[i + k]) & 0x3F);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out += static_cast<char16_t>(0xD800 + (cp >> 10));
      out += static_cast<char16_t>(0xDC00 + (cp & 0x3FF));
    } else {
      out += static_cast<char16_t>(cp);
    }
    i += length;
  }
  return out;
}

Status append(const nlohmann::json& value, std::string& out);

Status append_object(const nlohmann::json& value, std::string& out) {
  std::vector<std::pair<std::u16string, const std::string*>> keys;
  for (const auto& [key, member] : value.items()) {
    (void)member;
    keys.emplace_back(utf16_units(key), &key);
  }
  std::sort(keys.begin(), keys.end());
  out += '{';
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) out += ',';
    if (!append_canonical_string(*keys[i].second, out)) return invalid("a member name is not valid UTF-8");
    out += ':';
    if (auto s = append(value.at(*keys[i].second), out); !s) return s;
  }
  out += '}';
  return {};
}

Status append(const nlohmann::json& value, std::string& out) {
  using Type = nlohmann::json::value_t;
  switch (value.type()) {
    case Type::null: out += "null"; return {};
    case Type::boolean: out += value.get<bool>() ? "true" : "false"; return {};
    // Integers with all their digits (within 2^53 the same text as the double's).
    case Type::number_integer: out += std::to_string(value.get<std::int64_t>()); return {};
    case Type::number_unsigned: out += std::to_string(value.get<std::uint64_t>()); return {};
    case Type::number_float: {
      const double v = value.get<double>();
      if (!std::isfinite(v)) return invalid("a number is not finite");
      out += jcs_number(v);
      return {};
    }
    case Type::string:
      if (!append_canonical_string(value.get_ref<const std::string&>(), out)) return invalid("a string is not valid UTF-8");
      return {};
    case Type::array: {
      out += '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i > 0) out += ',';
        if (auto s = append(value[i], out); !s) return s;
      }
      out += ']';
      return {};
    }
    case Type::object: return append_object(value, out);
    case Type::binary:
    case Type::discarded: break;
  }
  return invalid("JSON has no form for binary values");
}

}  // namespace

std::string jcs_number(double value) {
  if (value == 0) return "0";  // also -0
  // The shortest round-trip digits, in scientific form: d[.ddd]e<exp>.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string sci(buf, ec == std::errc() ? end : buf);
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const auto e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int k = static_cast<int>(digits.size());
  const int n = std::atoi(sci.c_str() + e + 1) + 1;  // value = 0.digits x 10^n
  std::string out;
  if (k <= n && n <= 21) {
    out = digits + std::string(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out = digits.substr(0, static_cast<std::size_t>(n)) + "." + digits.substr(static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out = "0." + std::string(static_cast<std::size_t>(-n), '0') + digits;
  } else {
    const int exponent = n - 1;
    out = digits.substr(0, 1) + (k > 1 ? "." + digits.substr(1) : "") + "e" + (exponent < 0 ? "-" : "+") +
          std::to_string(std::abs(exponent));
  }
  return sign + out;
}

Result<std::string> jcs(const nlohmann::json& value) {
  std::string out;
  if (auto s = append(value, out); !s) return s.error();
  return out;
}

}  // namespace airlock::audit
