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

// RFC 8785 3.2.3: members sorted by their names' UTF-16 code units.
void utf16_order(std::vector<const std::string*>& names) {
  std::vector<std::pair<std::u16string, const std::string*>> keyed;
  keyed.reserve(names.size());
  for (const auto* name : names) keyed.emplace_back(utf16_units(*name), name);
  std::sort(keyed.begin(), keyed.end());
  for (std::size_t i = 0; i < keyed.size(); ++i) names[i] = keyed[i].second;
}

Status append_number(const nlohmann::json& value, std::string& out) {
  const double v = value.get<double>();
  if (!std::isfinite(v)) return invalid("a number is not finite");
  out += jcs_number(v);
  return {};
}

const CanonicalForm kJcsForm{"invalid_json", &append_number, &utf16_order};

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
  if (auto s = append_in_form(value, kJcsForm, out); !s) return s.error();
  return out;
}

}  // namespace airlock::audit
