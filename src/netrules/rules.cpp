#include "netrules/rules.hpp"

#include <charconv>

#include "netrules/host_name.hpp"
#include "netrules/host_port.hpp"

namespace airlock::netrules {
namespace {

Error bad(const std::string& what) { return Error::make("invalid_argument", what); }

std::optional<Cidr> parse_cidr(std::string_view text) {
  auto slash = text.find('/');
  auto ip = parse_ip_strict(text.substr(0, slash));
  auto bits = text.substr(slash + 1);
  int prefix = -1;
  auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
  if (!ip || ec != std::errc() || end != bits.data() + bits.size() || prefix < 0 ||
      prefix > (ip->v6 ? 128 : 32))
    return std::nullopt;
  return Cidr{*ip, prefix};
}

Result<HostRule> compile_host(std::string_view h) {
  HostRule c;
  if (h.empty() || h == "*") return bad("too broad (name a host, a *.domain, an IP or a CIDR)");
  if (h.find('/') != std::string_view::npos) {
    auto network = parse_cidr(h);
    if (!network) return bad("not a CIDR");
    c.kind = HostRule::Kind::cidr;
    c.network = *network;
    return c;
  }
  if (auto ip = parse_ip_strict(h)) {
    c.kind = HostRule::Kind::ip;
    c.network = Cidr{*ip, ip->v6 ? 128 : 32};
    return c;
  }
  bool wildcard = h.substr(0, 2) == "*.";
  if (!wildcard && h.find('*') != std::string_view::npos)
    return bad("'*' is allowed only as the first label ('*.example.com')");
  // A numeric spelling resolvers read as an address is not a name; as a rule it would be
  // a second, unobvious way to write an IP rule.
  if (!wildcard && parse_ip_literal(h))
    return bad("write IP rules in standard form (e.g. 127.0.0.1)");
  auto name = normalize_host_name(wildcard ? h.substr(2) : h);
  if (!name) return bad(name.error().message);
  c.kind = wildcard ? HostRule::Kind::wildcard : HostRule::Kind::name;
  c.name = *name;
  return c;
}

bool name_matches(const HostRule& r, const std::string& name) {
  if (r.kind == HostRule::Kind::name) return r.name == name;
  if (r.kind != HostRule::Kind::wildcard) return false;
  return name.size() > r.name.size() + 1 &&
         name.compare(name.size() - r.name.size(), r.name.size(), r.name) == 0 &&
         name[name.size() - r.name.size() - 1] == '.';
}

}  // namespace

Result<HostRule> compile_host_rule(std::string_view host, std::optional<std::uint16_t> port) {
  auto c = compile_host(host);
  if (!c) return c.error();
  c->port = port;
  c->text = std::string(host) + ":" + (port ? std::to_string(*port) : "*");
  return c;
}

Result<RuleText> parse_rule_text(std::string_view text, std::optional<std::uint16_t> default_port) {
  auto hp = split_host_port(text);
  if (!hp) return hp.error();
  RuleText rule{hp->host, default_port};
  if (hp->port) {
    if (*hp->port == "*") {
      rule.port.reset();
    } else if (auto p = parse_port(*hp->port)) {
      rule.port = *p;
    } else {
      return bad("'" + std::string(text) + "': port must be 1-65535 or *");
    }
  }
  return rule;
}

Result<Destination> classify_destination(std::string_view raw) {
  std::string host(raw);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (auto ip = parse_ip_literal(host)) return Destination{ip->to_string(), ip};
  auto name = normalize_host_name(host);
  if (!name) return name.error();
  return Destination{*name, std::nullopt};
}

bool matches_host(const HostRule& rule, const Destination& d) {
  if (d.address) return rule.is_address_rule() && rule.network.contains(*d.address);
  return name_matches(rule, d.host);
}

bool matches(const HostRule& rule, const Destination& d, std::optional<std::uint16_t> port) {
  return matches_host(rule, d) && (!port || rule.matches_port(*port));
}

}  // namespace airlock::netrules
