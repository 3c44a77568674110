#include "common/units.hpp"

#include <array>
#include <cctype>
#include <limits>

namespace airlock {
namespace {

// Reads a decimal number with an optional fraction. Returns false on no digits.
bool read_number(std::string_view& s, long double& out) {
  std::size_t i = 0;
  long double value = 0;
  bool digits = false;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    value = value * 10 + (s[i] - '0');
    digits = true;
    ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    long double scale = 0.1L;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      value += (s[i] - '0') * scale;
      scale /= 10;
      digits = true;
      ++i;
    }
  }
  s.remove_prefix(i);
  out = value;
  return digits;
}

std::string_view read_unit(std::string_view& s) {
  std::size_t i = 0;
  while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
  auto unit = s.substr(0, i);
  s.remove_prefix(i);
  return unit;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

Result<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  const std::string original(text);
  if (text.empty()) return Error::make("invalid_argument", "empty duration");
  struct Unit {
    std::string_view name;
    long double ns;
  };
  static constexpr std::array<Unit, 7> kUnits{{{"ns", 1},
                                               {"us", 1e3L},
                                               {"ms", 1e6L},
                                               {"s", 1e9L},
                                               {"m", 60e9L},
                                               {"h", 3600e9L},
                                               {"d", 86400e9L}}};
  long double total = 0;
  while (!text.empty()) {
    long double number = 0;
    if (!read_number(text, number))
      return Error::make("invalid_argument", "duration '" + original + "': expected a number");
    auto unit = read_unit(text);
    long double scale = 0;
    if (unit.empty()) {
      if (!text.empty() || total != 0)
        return Error::make("invalid_argument", "duration '" + original + "': missing unit");
      scale = 1e9L;  // a bare number is seconds
    }
    for (const auto& u : kUnits)
      if (unit == u.name) scale = u.ns;
    if (scale == 0)
      return Error::make("invalid_argument", "duration '" + original + "': unknown unit '" +
                                                 std::string(unit) + "' (use ns, us, ms, s, m, h)");
    total += number * scale;
  }
  if (total > static_cast<long double>(std::numeric_limits<std::int64_t>::max()))
    return Error::make("invalid_argument", "duration '" + original + "' is too large");
  return std::chrono::nanoseconds(static_cast<std::int64_t>(total));
}

Result<std::uint64_t> parse_size(std::string_view text) {
  const std::string original(text);
  long double number = 0;
  if (!read_number(text, number))
    return Error::make("invalid_argument", "size '" + original + "': expected a number");
  auto unit = read_unit(text);
  if (!text.empty())
    return Error::make("invalid_argument", "size '" + original + "': unexpected '" +
                                               std::string(text) + "'");
  struct Unit {
    std::string_view name;
    long double bytes;
  };
  static constexpr std::array<Unit, 17> kUnits{{{"", 1},
                                                {"b", 1},
                                                {"k", 1024.0L},
                                                {"ki", 1024.0L},
                                                {"mi", 1048576.0L},
                                                {"gi", 1073741824.0L},
                                                {"ti", 1099511627776.0L},
                                                {"kib", 1024.0L},
                                                {"kb", 1e3L},
                                                {"m", 1048576.0L},
                                                {"mib", 1048576.0L},
                                                {"mb", 1e6L},
                                                {"g", 1073741824.0L},
                                                {"gib", 1073741824.0L},
                                                {"gb", 1e9L},
                                                {"t", 1099511627776.0L},
                                                {"tib", 1099511627776.0L}}};
  for (const auto& u : kUnits) {
    if (iequals(unit, u.name)) {
      long double bytes = number * u.bytes;
      if (bytes > static_cast<long double>(std::numeric_limits<std::uint64_t>::max() / 2))
        return Error::make("invalid_argument", "size '" + original + "' is too large");
      return static_cast<std::uint64_t>(bytes);
    }
  }
  return Error::make("invalid_argument", "size '" + original + "': unknown unit '" +
                                             std::string(unit) + "' (use K, M, G, T, Ki, Mi, Gi or KB, MB, GB)");
}

std::string format_duration(std::chrono::nanoseconds d) {
  auto ns = d.count();
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

std::string format_size(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> kSuffix{"", "K", "M", "G", "T"};
  std::size_t i = 0;
  while (i + 1 < kSuffix.size() && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++i;
  }
  return std::to_string(bytes) + kSuffix[i];
}

}  // namespace airlock
