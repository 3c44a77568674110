#include "netrules/host_port.hpp"

#include <charconv>

namespace airlock::netrules {

Result<HostPort> split_host_port(std::string_view text) {
  auto bad = [&](const char* why) {
    return Error::make("invalid_argument", "'" + std::string(text) + "': " + why);
  };
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return bad("missing ']'");
    HostPort hp{std::string(text.substr(1, close - 1)), std::nullopt, true};
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return bad("expected ':' after ']'");
      hp.port = std::string(text.substr(close + 2));
    }
    return hp;
  }
  auto first = text.find(':'), last = text.rfind(':');
  // None, or more than one: a name or a bare IPv6 literal, without a port.
  if (first == std::string_view::npos || first != last)
    return HostPort{std::string(text), std::nullopt, false};
  return HostPort{std::string(text.substr(0, last)), std::string(text.substr(last + 1)), false};
}

std::optional<std::uint16_t> parse_port(std::string_view text) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0 || v > 65535)
    return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

}  // namespace airlock::netrules
