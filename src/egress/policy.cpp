#include "egress/policy.hpp"

#include <charconv>

#include "egress/host_name.hpp"

namespace airlock::egress {
namespace {

Error bad(const std::string& what) { return Error::make("invalid_argument", what); }

std::optional<std::uint16_t> parse_port(std::string_view s) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v == 0 || v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

// Splits "host:port", "[v6]:port", "[v6]", "v6" or "host".
struct HostPort {
  std::string host;
  std::optional<std::string> port;
};
Result<HostPort> split_host_port(const std::string& text) {
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos) return bad("'" + text + "': missing ']'");
    HostPort hp{text.substr(1, close - 1), std::nullopt};
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return bad("'" + text + "': expected ':' after ']'");
      hp.port = text.substr(close + 2);
    }
    return hp;
  }
  auto first = text.find(':'), last = text.rfind(':');
  if (first == std::string::npos) return HostPort{text, std::nullopt};
  if (first != last) return HostPort{text, std::nullopt};  // bare IPv6, no port
  return HostPort{text.substr(0, last), text.substr(last + 1)};
}

Result<CompiledRule> compile_rule(const sandbox::EgressRule& r) {
  CompiledRule c;
  c.port = r.port;
  c.text = r.host + ":" + (r.port ? std::to_string(*r.port) : "*");
  const std::string& h = r.host;
  if (h.empty() || h == "*") return bad("rule '" + h + "': too broad (name a host, a *.domain, an IP or a CIDR)");
  if (auto slash = h.find('/'); slash != std::string::npos) {
    auto ip = parse_ip_strict(h.substr(0, slash));
    int prefix = -1;
    auto p = std::string_view(h).substr(slash + 1);
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), prefix);
    if (!ip || ec != std::errc() || end != p.data() + p.size() || prefix < 0 ||
        prefix > (ip->v6 ? 128 : 32))
      return bad("rule '" + h + "': not a CIDR");
    c.kind = CompiledRule::Kind::cidr;
    c.network = Cidr{*ip, prefix};
    return c;
  }
  if (auto ip = parse_ip_strict(h)) {
    c.kind = CompiledRule::Kind::ip;
    c.network = Cidr{*ip, ip->v6 ? 128 : 32};
    return c;
  }
  if (h.rfind("*.", 0) == 0) {
    auto name = normalize_host_name(h.substr(2));
    if (!name) return bad("rule '" + h + "': " + name.error().message);
    c.kind = CompiledRule::Kind::wildcard;
    c.name = *name;
    return c;
  }
  if (h.find('*') != std::string::npos)
    return bad("rule '" + h + "': '*' is allowed only as the first label ('*.example.com')");
  if (parse_ip_literal(h))
    return bad("rule '" + h + "': write IP rules in standard form (e.g. 127.0.0.1)");
  auto name = normalize_host_name(h);
  if (!name) return bad("rule '" + h + "': " + name.error().message);
  c.kind = CompiledRule::Kind::name;
  c.name = *name;
  return c;
}

bool name_matches(const CompiledRule& r, const std::string& name) {
  if (r.kind == CompiledRule::Kind::name) return r.name == name;
  if (r.kind != CompiledRule::Kind::wildcard) return false;
  return name.size() > r.name.size() + 1 &&
         name.compare(name.size() - r.name.size(), r.name.size(), r.name) == 0 &&
         name[name.size() - r.name.size() - 1] == '.';
}

}  // namespace

Result<sandbox::EgressRule> parse_allow_rule(const std::string& text) {
  auto hp = split_host_port(text);
  if (!hp) return hp.error();
  sandbox::EgressRule rule;
  rule.host = hp->host;
  if (hp->port) {
    if (*hp->port == "*") {
      rule.port.reset();
    } else if (auto p = parse_port(*hp->port)) {
      rule.port = *p;
    } else {
      return bad("'" + text + "': port must be 1-65535 or *");
    }
  }
  if (auto c = compile_rule(rule); !c) return c.error();
  return rule;
}

Result<sandbox::PortForward> parse_forward(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos) return bad("--forward '" + text + "': expected LPORT=HOST:PORT");
  auto lport = parse_port(text.substr(0, eq));
  auto hp = split_host_port(text.substr(eq + 1));
  if (!lport) return bad("--forward '" + text + "': bad local port");
  if (!hp || !hp->port) return bad("--forward '" + text + "': expected HOST:PORT after '='");
  auto port = parse_port(*hp->port);
  if (!port) return bad("--forward '" + text + "': bad target port");
  return sandbox::PortForward{*lport, hp->host, *port};
}

Result<std::pair<std::string, std::string>> parse_resolve(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos) return bad("--resolve '" + text + "': expected NAME=IP");
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

Result<EgressPolicy> EgressPolicy::compile(const sandbox::NetworkPolicy& network) {
  EgressPolicy p;
  p.limits_ = network.limits;
  for (const auto& r : network.allow) {
    auto c = compile_rule(r);
    if (!c) return c.error();
    p.rules_.push_back(*c);
  }
  for (const auto& f : network.forwards) {
    auto c = compile_rule({f.host, f.port});
    if (!c) return bad("--forward " + std::to_string(f.listen_port) + ": " + c.error().message);
    p.forward_rules_.push_back(*c);
  }
  for (const auto& [name, ip] : network.resolve) {
    auto n = normalize_host_name(name);
    if (!n) return bad("--resolve " + name + ": " + n.error().message);
    auto a = parse_ip_strict(ip);
    if (!a) return bad("--resolve " + name + "=" + ip + ": not an IP address");
    p.pinned_[*n] = *a;
  }
  return p;
}

EgressPolicy::Decision EgressPolicy::decide(std::string_view host, std::uint16_t port) const {
  return decide_with(host, port, rules_);
}

EgressPolicy::Decision EgressPolicy::decide_forward(const sandbox::PortForward& f) const {
  for (const auto& r : forward_rules_)
    if (r.text == f.host + ":" + std::to_string(f.port)) return decide_with(f.host, f.port, {r});
  Decision d;
  d.reason = "no such forward";
  return d;
}

EgressPolicy::Decision EgressPolicy::decide_with(std::string_view raw, std::uint16_t port,
                                                 const std::vector<CompiledRule>& rules) const {
  Decision d;
  std::string host(raw);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port == 0) {
    d.reason = "port 0";
    return d;
  }
  if (auto ip = parse_ip_literal(host)) {
    d.host = ip->to_string();
    for (const auto& r : rules) {
      bool ip_rule = r.kind == CompiledRule::Kind::ip || r.kind == CompiledRule::Kind::cidr;
      if (ip_rule && r.network.contains(*ip) && r.matches_port(port)) {
        d.allowed = true;
        d.rule = r.text;
        d.address = ip;
        d.explicit_address = true;
        break;
      }
    }
    if (!d.allowed)
      d.reason = "the IP literal " + host + " (" + d.host + ") matches no IP or CIDR rule for port " +
                 std::to_string(port);
  } else {
    auto name = normalize_host_name(host);
    if (!name) {
      d.reason = name.error().message;
      return d;
    }
    d.host = *name;
    for (const auto& r : rules) {
      if (name_matches(r, *name) && r.matches_port(port)) {
        d.allowed = true;
        d.rule = r.text;
        break;
      }
    }
    if (!d.allowed) {
      d.reason = "no rule allows " + *name + ":" + std::to_string(port);
      return d;
    }
    if (auto pin = pinned_.find(*name); pin != pinned_.end()) {
      d.address = pin->second;
      d.explicit_address = true;  // the operator's explicit choice
    }
  }
  if (d.allowed && d.address) {
    if (auto why = refuse_endpoint(*d.address, port)) {
      d.allowed = false;
      d.reason = *why;
    }
  }
  return d;
}

std::vector<IpAddress> EgressPolicy::admissible(const Decision& d,
                                                const std::vector<IpAddress>& resolved,
                                                std::uint16_t port, std::string* why_not) const {
  std::vector<IpAddress> ok;
  std::string last_reason = "it has no address";
  for (const auto& a : resolved) {
    if (auto why = refuse_endpoint(a, port)) {
      last_reason = *why;
      continue;
    }
    if (auto special = special_purpose(a)) {
      bool named = false;  // an IP or CIDR rule that names this address explicitly
      for (const auto& r : rules_)
        named |= (r.kind == CompiledRule::Kind::ip || r.kind == CompiledRule::Kind::cidr) &&
                 r.network.contains(a) && r.matches_port(port);
      if (!named) {
        last_reason = d.host + " resolves to " + a.to_string() + ", a " + *special + " address";
        continue;
      }
    }
    ok.push_back(a);
  }
  if (ok.empty() && why_not) *why_not = last_reason;
  return ok;
}

std::optional<std::string> EgressPolicy::refuse_endpoint(const IpAddress& a, std::uint16_t port) const {
  for (const auto& f : forbidden_)
    if (f.address == a && f.port == port)
      return a.to_string() + ":" + std::to_string(port) + " is one of airlock's own endpoints";
  return std::nullopt;
}

std::string EgressPolicy::describe_rules() const {
  if (rules_.empty()) return "none";
  std::string out;
  for (const auto& r : rules_) out += (out.empty() ? "" : ", ") + r.text;
  return out;
}

}  // namespace airlock::egress
