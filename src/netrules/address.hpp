// IP addresses as egress and the validator see them: parsed from any spelling a client uses,
// compared by value, classified (loopback, private, ...) for the SSRF guard.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::netrules {

struct IpAddress {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};  // v4 in the first 4

  std::string to_string() const;
  bool operator==(const IpAddress&) const = default;
};

// Any spelling libc accepts: dotted quad, decimal (2130706433), octal (0177.0.0.1), hex
// (0x7f.1), short forms (127.1), IPv6 (brackets stripped by the caller). IPv4-mapped IPv6
// (::ffff:127.0.0.1) is returned as the IPv4 address it maps. Zone ids and anything with
// whitespace are not IP literals.
std::optional<IpAddress> parse_ip_literal(std::string_view text);

// Only the standard forms (inet_pton): what operators write in rules.
std::optional<IpAddress> parse_ip_strict(std::string_view text);

struct Cidr {
  IpAddress network;
  int prefix = 0;
  bool contains(const IpAddress& a) const;
};

// Why an address must not be reached through a name (SSRF guard): "loopback", "private",
// "link-local", "CGNAT", "multicast", "unspecified", "reserved", ...; nullopt for a public
// unicast address. IPv6 forms that embed an IPv4 address (NAT64, 6to4) are judged by it.
std::optional<std::string> special_purpose(const IpAddress& a);

}  // namespace airlock::netrules
