#include "validate/host_allowlist.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <cstring>
#include <optional>

namespace airlock::validate {
namespace {

std::string lower_without_trailing_dot(std::string_view host) {
  std::string out;
  for (char c : host) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

bool is_dns_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
    if (++label > 63) return false;
  }
  return label > 0;
}

// Any textual address a resolver would accept, as 16 bytes (IPv4 mapped into ::ffff:0:0/96).
std::optional<std::array<std::uint8_t, 16>> parse_address(std::string_view text) {
  std::string s(text);
  if (!s.empty() && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  std::array<std::uint8_t, 16> out{};
  in6_addr v6{};
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, 16);
    return out;
  }
  // inet_aton takes the legacy forms too: 2130706433, 0x7f.1, 127.1, 0177.0.0.1.
  in_addr v4{};
  if (!s.empty() && std::isdigit(static_cast<unsigned char>(s.front())) &&
      inet_aton(s.c_str(), &v4) == 1) {
    out[10] = 0xff;
    out[11] = 0xff;
    std::memcpy(out.data() + 12, &v4, 4);
    return out;
  }
  return std::nullopt;
}

bool in_network(const std::array<std::uint8_t, 16>& address,
                const std::array<std::uint8_t, 16>& network, int prefix_bits) {
  for (int bit = 0; bit < prefix_bits; ++bit) {
    int byte = bit / 8, shift = 7 - bit % 8;
    if (((address[byte] >> shift) & 1) != ((network[byte] >> shift) & 1)) return false;
  }
  return true;
}

bool looks_numeric(std::string_view host) {
  // Names whose last label is all digits (or hex) are read as addresses by resolvers.
  auto last = host.substr(host.rfind('.') == std::string_view::npos ? 0 : host.rfind('.') + 1);
  if (last.empty()) return false;
  if (last.size() > 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) return true;
  for (char c : last)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

Result<HostAllowlist> HostAllowlist::parse(const std::vector<std::string>& entries) {
  HostAllowlist list;
  for (const auto& raw : entries) {
    std::string entry = lower_without_trailing_dot(raw);
    list.entries_.push_back(raw);
    if (auto slash = entry.find('/'); slash != std::string::npos) {
      auto address = parse_address(entry.substr(0, slash));
      std::string bits = entry.substr(slash + 1);
      bool digits = !bits.empty() && bits.size() <= 3 &&
                    bits.find_first_not_of("0123456789") == std::string::npos;
      if (!address || !digits)
        return Error::make("invalid_argument", "host entry \"" + raw + "\": not an address/prefix");
      int prefix = std::stoi(bits);
      bool v4 = entry.find(':') == std::string::npos;
      if (prefix > (v4 ? 32 : 128))
        return Error::make("invalid_argument", "host entry \"" + raw + "\": prefix too long");
      list.networks_.push_back({*address, v4 ? prefix + 96 : prefix});
      continue;
    }
    if (auto address = parse_address(entry)) {
      list.networks_.push_back({*address, 128});
      continue;
    }
    if (entry.rfind("*.", 0) == 0 && is_dns_name(entry.substr(2))) {
      list.suffixes_.push_back(entry.substr(1));
      continue;
    }
    if (is_dns_name(entry) && !looks_numeric(entry)) {
      list.names_.push_back(entry);
      continue;
    }
    return Error::make("invalid_argument",
                       "host entry \"" + raw +
                           "\": expected a host name, *.domain, an IP address or a CIDR block");
  }
  return list;
}

bool HostAllowlist::allows(std::string_view host) const {
  if (host.empty()) return false;
  if (auto address = parse_address(host)) {
    for (const auto& network : networks_)
      if (in_network(*address, network.address, network.prefix_bits)) return true;
    return false;
  }
  std::string name = lower_without_trailing_dot(host);
  if (!is_dns_name(name) || looks_numeric(name)) return false;
  for (const auto& exact : names_)
    if (name == exact) return true;
  for (const auto& suffix : suffixes_)
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

}  // namespace airlock::validate
