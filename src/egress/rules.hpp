// The egress vocabulary: what a sandbox may reach through the egress proxy, and what the proxy
// records. Plain data; the proxy (proxy.hpp) and the matching (policy.hpp) enforce it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::egress {

using sandbox::EgressLimits;
using sandbox::EgressRecord;
using sandbox::EgressRule;
using sandbox::PortForward;

// A run's egress rules: `--allow`, `--forward`, `--resolve` and the proxy's limits.
struct EgressRules {
  std::vector<EgressRule> allow;
  std::vector<PortForward> forwards;
  std::map<std::string, std::string> resolve;  // NAME -> IP: pinned names
  EgressLimits limits;

  bool has_egress() const { return !allow.empty() || !forwards.empty(); }
};

}  // namespace airlock::egress
