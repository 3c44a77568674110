// "host[:port]" as rules, URLs, Host headers and CONNECT targets write it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock::netrules {

struct HostPort {
  std::string host;                 // the brackets of "[v6]" removed
  std::optional<std::string> port;  // the text after the ':' that ends the host, if any
  bool bracketed = false;           // written as "[...]"
};

// Splits "host", "host:port", "[v6]", "[v6]:port", or a bare IPv6 literal (two or more
// ':' and no brackets: all host, no port). Fails on a '[' without ']' or text after ']'
// that is not ":port". The port is not checked here (see parse_port).
Result<HostPort> split_host_port(std::string_view text);

// 1-65535 in decimal digits, nothing else.
std::optional<std::uint16_t> parse_port(std::string_view text);

}  // namespace airlock::netrules
