#include "netrules/address.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace airlock::netrules {
namespace {

IpAddress v4(std::uint32_t host_order) {
  IpAddress a;
  a.bytes[0] = static_cast<std::uint8_t>(host_order >> 24);
  a.bytes[1] = static_cast<std::uint8_t>(host_order >> 16);
  a.bytes[2] = static_cast<std::uint8_t>(host_order >> 8);
  a.bytes[3] = static_cast<std::uint8_t>(host_order);
  return a;
}

std::uint32_t v4_value(const IpAddress& a) {
  return (std::uint32_t{a.bytes[0]} << 24) | (std::uint32_t{a.bytes[1]} << 16) |
         (std::uint32_t{a.bytes[2]} << 8) | a.bytes[3];
}

bool v4_in(const IpAddress& a, std::uint32_t network, int prefix) {
  std::uint32_t mask = prefix == 0 ? 0 : ~0U << (32 - prefix);
  return (v4_value(a) & mask) == (network & mask);
}

bool v6_prefix(const IpAddress& a, std::initializer_list<std::uint8_t> prefix, int bits) {
  std::array<std::uint8_t, 16> p{};
  std::copy(prefix.begin(), prefix.end(), p.begin());
  Cidr c{IpAddress{true, p}, bits};
  return c.contains(a);
}

IpAddress embedded_v4(const IpAddress& a, int offset) {
  IpAddress out;
  std::memcpy(out.bytes.data(), a.bytes.data() + offset, 4);
  return out;
}

std::optional<IpAddress> from_v6_bytes(const in6_addr& addr) {
  IpAddress a;
  a.v6 = true;
  std::memcpy(a.bytes.data(), addr.s6_addr, 16);
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(a.bytes.data(), kMapped, 12) == 0) return embedded_v4(a, 12);
  return a;
}

}  // namespace

std::string IpAddress::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof buf);
  return buf;
}

std::optional<IpAddress> parse_ip_literal(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  std::string s(text);
  if (s.find_first_of(" \t\r\n%") != std::string::npos) return std::nullopt;
  if (s.find(':') != std::string::npos) {
    in6_addr addr{};
    if (inet_pton(AF_INET6, s.c_str(), &addr) != 1) return std::nullopt;
    return from_v6_bytes(addr);
  }
  // inet_aton accepts every BSD spelling; only hex digits, 'x' and dots can be one.
  if (s.find_first_not_of("0123456789abcdefABCDEFxX.") != std::string::npos) return std::nullopt;
  in_addr addr{};
  if (inet_aton(s.c_str(), &addr) == 0) return std::nullopt;
  return v4(ntohl(addr.s_addr));
}

std::optional<IpAddress> parse_ip_strict(std::string_view text) {
  std::string s(text);
  in_addr a4{};
  if (inet_pton(AF_INET, s.c_str(), &a4) == 1) return v4(ntohl(a4.s_addr));
  in6_addr a6{};
  if (inet_pton(AF_INET6, s.c_str(), &a6) == 1) return from_v6_bytes(a6);
  return std::nullopt;
}

bool Cidr::contains(const IpAddress& a) const {
  if (a.v6 != network.v6) return false;
  int full = prefix / 8, rest = prefix % 8;
  if (std::memcmp(a.bytes.data(), network.bytes.data(), static_cast<std::size_t>(full)) != 0)
    return false;
  if (rest == 0) return true;
  std::uint8_t mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a.bytes[static_cast<std::size_t>(full)] & mask) ==
         (network.bytes[static_cast<std::size_t>(full)] & mask);
}

std::optional<std::string> special_purpose(const IpAddress& a) {
  if (!a.v6) {
    struct Range {
      std::uint32_t network;
      int prefix;
      const char* why;
    };
    static constexpr Range kRanges[] = {
        {0x00000000, 8, "unspecified"},        {0x0a000000, 8, "private"},
        {0x64400000, 10, "CGNAT"},             {0x7f000000, 8, "loopback"},
        {0xa9fe0000, 16, "link-local"},        {0xac100000, 12, "private"},
        {0xc0000000, 24, "reserved"},          {0xc0000200, 24, "documentation"},
        {0xc0586300, 24, "reserved"},          {0xc0a80000, 16, "private"},
        {0xc6120000, 15, "benchmarking"},      {0xc6336400, 24, "documentation"},
        {0xcb007100, 24, "documentation"},     {0xe0000000, 4, "multicast"},
        {0xf0000000, 4, "reserved"},
    };
    for (const auto& r : kRanges)
      if (v4_in(a, r.network, r.prefix)) return std::string(r.why);
    return std::nullopt;
  }
  static constexpr std::array<std::uint8_t, 16> kZero{};
  if (a.bytes == kZero) return "unspecified";
  std::array<std::uint8_t, 16> loopback{};
  loopback[15] = 1;
  if (a.bytes == loopback) return "loopback";
  if (v6_prefix(a, {}, 96)) return "reserved";  // IPv4-compatible (deprecated)
  if (v6_prefix(a, {0x00, 0x64, 0xff, 0x9b}, 96)) {  // NAT64: judged by the IPv4 inside
    if (auto why = special_purpose(embedded_v4(a, 12))) return *why + " (via NAT64)";
    return std::nullopt;
  }
  if (v6_prefix(a, {0x20, 0x02}, 16)) {  // 6to4
    if (auto why = special_purpose(embedded_v4(a, 2))) return *why + " (via 6to4)";
    return std::nullopt;
  }
  if (v6_prefix(a, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48)) return "private";
  if (v6_prefix(a, {0x01, 0x00}, 64)) return "reserved";
  if (v6_prefix(a, {0x20, 0x01, 0x0d, 0xb8}, 32)) return "documentation";
  if (v6_prefix(a, {0x20, 0x01}, 23)) return "reserved";
  if (v6_prefix(a, {0xfc}, 7)) return "private";
  if (v6_prefix(a, {0xfe, 0x80}, 10)) return "link-local";
  if (v6_prefix(a, {0xfe, 0xc0}, 10)) return "private";
  if (v6_prefix(a, {0xff}, 8)) return "multicast";
  return std::nullopt;
}

}  // namespace airlock::netrules
