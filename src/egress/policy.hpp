// Egress rules compiled for matching, and the decision for one connection attempt.
//
// Deny unless a rule matches host:port. A name matches name rules only (exact, or
// "*.example.com" for strict subdomains); an IP literal, however it is spelled, matches IP
// and CIDR rules only. A name is then resolved by the proxy (or taken from --resolve), and
// addresses that are loopback, private, link-local, CGNAT, multicast, unspecified or
// otherwise special are refused unless an IP/CIDR rule names them or the name was pinned.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "netrules/address.hpp"
#include "netrules/rules.hpp"
#include "egress/rules.hpp"

namespace airlock::egress {

// The address types are netrules' (shared with the validator); egress names them unqualified.
using netrules::IpAddress;
using netrules::parse_ip_strict;

// "HOST[:PORT]" as given to --allow (syntax in netrules/rules.hpp): PORT defaults to 443, "*"
// is any port; IPv6 in brackets.
Result<EgressRule> parse_allow_rule(const std::string& text);
// "LPORT=HOST:PORT" as given to --forward.
Result<PortForward> parse_forward(const std::string& text);
// "NAME=IP" as given to --resolve.
Result<std::pair<std::string, std::string>> parse_resolve(const std::string& text);

struct Endpoint {
  IpAddress address;
  std::uint16_t port;
};

class EgressPolicy {
 public:
  // Fails with a message naming the bad rule.
  static Result<EgressPolicy> compile(const EgressRules& network);

  // Endpoints never to connect to, whatever the rules say (the daemon's own API, ...).
  void forbid(Endpoint e) { forbidden_.push_back(e); }

  // Step 1, before any lookup.
  struct Decision {
    bool allowed = false;
    std::string rule;    // the matching rule, as written (allowed)
    std::string reason;  // why not (denied)
    std::string host;    // normalized name, or the IP literal in standard form
    std::optional<IpAddress> address;  // known without DNS: an IP literal or a pinned name
    bool explicit_address = false;     // the SSRF guard does not apply (IP rule or pin)
  };
  Decision decide(std::string_view host, std::uint16_t port) const;
  // The implicit rule of a forward (same checks, its own target).
  Decision decide_forward(const PortForward& forward) const;

  // Step 2, after resolving a name: the addresses that may be connected to, in order.
  // `why_not` gets the reason when none may.
  std::vector<IpAddress> admissible(const Decision& d, const std::vector<IpAddress>& resolved,
                                    std::uint16_t port, std::string* why_not) const;
  // Final check on the exact address about to be connected to.
  std::optional<std::string> refuse_endpoint(const IpAddress& a, std::uint16_t port) const;

  // The header injections for a connection `d` allowed to port (none: relayed untouched).
  std::vector<const HeaderInjection*> injections_for(const Decision& d, std::uint16_t port) const;
  bool injects() const { return !injections_.empty(); }

  // "api.example.com:443, *.pypi.org:443" for denial messages.
  std::string describe_rules() const;
  const EgressLimits& limits() const { return limits_; }

 private:
  Decision decide_with(std::string_view host, std::uint16_t port,
                       const std::vector<netrules::HostRule>& rules) const;

  std::vector<netrules::HostRule> rules_;
  std::vector<netrules::HostRule> forward_rules_;
  std::map<std::string, IpAddress> pinned_;
  std::vector<Endpoint> forbidden_;
  std::vector<HeaderInjection> injections_;  // hosts normalized
  EgressLimits limits_;
};

}  // namespace airlock::egress
