// Host rules, as egress enforces them and the validator checks code against them.
//
//   api.example.com   that name exactly (case-insensitive, trailing dot ignored, IDNA to
//                     punycode: "bücher.example" is "xn--bcher-kva.example")
//   *.example.com     any name strictly below example.com, not example.com itself
//   203.0.113.7       that address (standard form; IPv6 likewise)
//   10.0.0.0/8        any address in the block (IPv4 or IPv6)
// each with an optional port (nullopt: any). A name matches name rules only; an IP literal,
// however it is spelled (2130706433, 0x7f.1, ::ffff:127.0.0.1), matches IP and CIDR rules
// only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "netrules/address.hpp"

namespace airlock::netrules {

struct HostRule {
  enum class Kind { name, wildcard, ip, cidr } kind = Kind::name;
  std::string name;  // normalized; for wildcards the suffix without "*."
  Cidr network;      // ip (full-length prefix) and cidr
  std::optional<std::uint16_t> port;  // nullopt: any
  std::string text;  // "host:port" or "host:*", as written, for records and messages

  bool is_address_rule() const { return kind == Kind::ip || kind == Kind::cidr; }
  bool matches_port(std::uint16_t p) const { return !port || *port == p; }
};

// The host of a rule (brackets already removed) and its port. The error says what is wrong
// with the host, without naming it (callers say which rule or entry).
Result<HostRule> compile_host_rule(std::string_view host, std::optional<std::uint16_t> port);

// A rule written "HOST[:PORT]" ("[v6]:PORT"; PORT 1-65535 or "*" for any): the host as
// written and the port, `default_port` when none is written.
struct RuleText {
  std::string host;
  std::optional<std::uint16_t> port;
};
Result<RuleText> parse_rule_text(std::string_view text, std::optional<std::uint16_t> default_port);

// A host as a connection (or code) names it: an IP literal in any spelling a resolver takes,
// else a host name, normalized. Brackets around an IPv6 literal are removed.
struct Destination {
  std::string host;                  // the normalized name, or the address in standard form
  std::optional<IpAddress> address;  // set for an IP literal
};
// Fails, with normalize_host_name's message, for what is neither.
Result<Destination> classify_destination(std::string_view host);

// Whether the rule's host matches (name rules for names, IP/CIDR rules for addresses).
bool matches_host(const HostRule& rule, const Destination& d);
// ...and its port; `port` nullopt when the caller cannot know it (the host alone decides).
bool matches(const HostRule& rule, const Destination& d, std::optional<std::uint16_t> port);

}  // namespace airlock::netrules
