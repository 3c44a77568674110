#include "egress/policy.hpp"

#include <algorithm>
#include <cctype>

#include "netrules/host_name.hpp"
#include "netrules/host_port.hpp"

namespace airlock::egress {
namespace {

using netrules::HostRule;

Error bad(const std::string& what) { return Error::make("invalid_argument", what); }

Result<HostRule> compile_rule(const EgressRule& r) {
  auto c = netrules::compile_host_rule(r.host, r.port);
  if (!c) return bad("rule '" + r.host + "': " + c.error().message);
  return c;
}

// An HTTP token (RFC 9110 5.6.2): what a header name may be.
bool is_token(std::string_view s) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           kSpecials.find(c) != std::string_view::npos;
  });
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The injection with its host normalized. Messages name the host and header, never the value.
Result<HeaderInjection> compile_injection(const HeaderInjection& in) {
  const std::string what = "inject for " + in.host + ":" + std::to_string(in.port);
  auto host = netrules::normalize_host_name(in.host);
  if (!host || parse_ip_strict(in.host)) return bad(what + ": the host must be a DNS name");
  if (in.port == 0) return bad(what + ": port 0");
  if (!is_token(in.header)) return bad(what + ": '" + in.header + "' is not a header name");
  // A line break or NUL would end the header and let the value write others.
  if (in.value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
    return bad(what + ": the value of " + in.header + " has a line break or NUL");
  HeaderInjection out = in;
  out.host = *host;
  return out;
}

}  // namespace

Result<EgressRule> parse_allow_rule(const std::string& text) {
  auto parsed = netrules::parse_rule_text(text, 443);
  if (!parsed) return bad(parsed.error().message);
  EgressRule rule{parsed->host, parsed->port};
  if (auto c = compile_rule(rule); !c) return c.error();
  return rule;
}

Result<PortForward> parse_forward(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos) return bad("--forward '" + text + "': expected LPORT=HOST:PORT");
  auto lport = netrules::parse_port(std::string_view(text).substr(0, eq));
  auto hp = netrules::split_host_port(std::string_view(text).substr(eq + 1));
  if (!lport) return bad("--forward '" + text + "': bad local port");
  if (!hp || !hp->port) return bad("--forward '" + text + "': expected HOST:PORT after '='");
  auto port = netrules::parse_port(*hp->port);
  if (!port) return bad("--forward '" + text + "': bad target port");
  return PortForward{*lport, hp->host, *port};
}

Result<std::pair<std::string, std::string>> parse_resolve(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos) return bad("--resolve '" + text + "': expected NAME=IP");
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

Result<EgressPolicy> EgressPolicy::compile(const EgressRules& network) {
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
    auto n = netrules::normalize_host_name(name);
    if (!n) return bad("--resolve " + name + ": " + n.error().message);
    auto a = parse_ip_strict(ip);
    if (!a) return bad("--resolve " + name + "=" + ip + ": not an IP address");
    p.pinned_[*n] = *a;
  }
  for (const auto& in : network.inject) {
    auto c = compile_injection(in);
    if (!c) return c.error();
    for (const auto& other : p.injections_)
      if (other.host == c->host && other.port == c->port && iequals(other.header, c->header))
        return bad("inject for " + in.host + ":" + std::to_string(in.port) + ": " + in.header +
                   " is injected twice");
    p.injections_.push_back(std::move(*c));
  }
  return p;
}

EgressPolicy::Decision EgressPolicy::decide(std::string_view host, std::uint16_t port) const {
  return decide_with(host, port, rules_);
}

EgressPolicy::Decision EgressPolicy::decide_forward(const PortForward& f) const {
  for (const auto& r : forward_rules_)
    if (r.text == f.host + ":" + std::to_string(f.port)) return decide_with(f.host, f.port, {r});
  Decision d;
  d.reason = "no such forward";
  return d;
}

EgressPolicy::Decision EgressPolicy::decide_with(std::string_view raw, std::uint16_t port,
                                                 const std::vector<HostRule>& rules) const {
  Decision d;
  if (port == 0) {
    d.reason = "port 0";
    return d;
  }
  auto destination = netrules::classify_destination(raw);
  if (!destination) {
    d.reason = destination.error().message;
    return d;
  }
  d.host = destination->host;
  for (const auto& r : rules) {
    if (netrules::matches(r, *destination, port)) {
      d.allowed = true;
      d.rule = r.text;
      break;
    }
  }
  if (destination->address) {
    if (d.allowed) {
      d.address = destination->address;
      d.explicit_address = true;  // named by an IP or CIDR rule
    } else {
      d.reason = "the IP literal " + std::string(raw) + " (" + d.host +
                 ") matches no IP or CIDR rule for port " + std::to_string(port);
    }
  } else if (!d.allowed) {
    d.reason = "no rule allows " + d.host + ":" + std::to_string(port);
    return d;
  } else if (auto pin = pinned_.find(d.host); pin != pinned_.end()) {
    d.address = pin->second;
    d.explicit_address = true;  // the operator's explicit choice
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
    if (auto special = netrules::special_purpose(a)) {
      bool named = false;  // an IP or CIDR rule that names this address explicitly
      for (const auto& r : rules_)
        named |= r.is_address_rule() && r.network.contains(a) && r.matches_port(port);
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

std::vector<const HeaderInjection*> EgressPolicy::injections_for(const Decision& d,
                                                                 std::uint16_t port) const {
  std::vector<const HeaderInjection*> out;
  if (!d.allowed || d.host.empty()) return out;
  for (const auto& in : injections_)
    if (in.port == port && in.host == d.host) out.push_back(&in);
  return out;
}

std::string EgressPolicy::describe_rules() const {
  if (rules_.empty()) return "none";
  std::string out;
  for (const auto& r : rules_) out += (out.empty() ? "" : ", ") + r.text;
  return out;
}

}  // namespace airlock::egress
