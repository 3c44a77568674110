// Host matching for network destinations, with the semantics the egress layer uses:
//   "api.example.com"   that name exactly (case-insensitive, a trailing dot ignored)
//   "*.example.com"     any name below example.com, not example.com itself
//   "203.0.113.7"       that IPv4 address; "2001:db8::1" that IPv6 address
//   "10.0.0.0/8"        any address in the CIDR block (IPv4 or IPv6)
// A name never matches an address entry and an address never matches a name entry. Numeric
// forms that resolvers accept (`2130706433`, `0x7f.1`, `127.1`) are read as the address they
// mean. Anything else that is not a plain DNS name (userinfo, spaces, non-ASCII) matches
// nothing.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace airlock::validate {

class HostAllowlist {
 public:
  HostAllowlist() = default;
  // Each entry as above; an entry that is none of those forms is an error naming it.
  static Result<HostAllowlist> parse(const std::vector<std::string>& entries);

  bool allows(std::string_view host) const;
  bool empty() const { return names_.empty() && suffixes_.empty() && networks_.empty(); }
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  struct Network {
    std::array<std::uint8_t, 16> address{};  // IPv4 as ::ffff:a.b.c.d
    int prefix_bits = 128;
  };
  std::vector<std::string> entries_;
  std::vector<std::string> names_;     // lower-case, no trailing dot
  std::vector<std::string> suffixes_;  // ".example.com"
  std::vector<Network> networks_;
};

}  // namespace airlock::validate
