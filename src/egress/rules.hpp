// The egress vocabulary: what a run may reach through the egress proxy, and what the proxy
// records. Plain data; policy.hpp matches it and proxy.hpp enforces it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace airlock::egress {

using std::chrono::milliseconds;

// One endpoint a run may reach through the egress proxy: `--allow HOST[:PORT]`.
// host: a name ("api.example.com"), "*.example.com" (subdomains only), an IP or a CIDR.
struct EgressRule {
  std::string host;
  std::optional<std::uint16_t> port = 443;  // nullopt: any port (":*")
};

// `--forward LPORT=HOST:PORT`: a TCP listener on the sandbox's 127.0.0.1:LPORT, relayed to
// HOST:PORT after the same checks as an allow rule.
struct PortForward {
  std::uint16_t listen_port = 0;
  std::string host;
  std::uint16_t port = 0;
};

// `inject`: for connections to host:port (which an allow rule must also admit) the proxy
// terminates TLS with a certificate of its per-run CA and sets `header` to `value` on every
// request (tls_intercept.hpp). `value` is a secret: it is never serialized, logged, recorded
// or put in a message.
struct HeaderInjection {
  std::string host;  // a name, compared after normalization (case, trailing dot)
  std::uint16_t port = 443;
  std::string header;  // "Authorization"
  std::string value;   // "Bearer <token>"
};

struct EgressLimits {
  std::uint32_t max_connections = 64;         // at once
  std::uint64_t max_bytes_up = 256ULL << 20;  // in total, sandbox to the world
  std::uint64_t max_bytes_down = 1ULL << 30;  // in total, the world to the sandbox
  milliseconds idle_timeout{60'000};          // a connection with no traffic either way
  milliseconds connect_timeout{10'000};
  milliseconds request_timeout{10'000};       // to receive a whole request head
  std::uint32_t max_header_bytes = 16 * 1024;
};

// A run's egress rules: `--allow`, `--forward`, `--resolve`, header injections and the
// proxy's limits. Without allow or forward rules a run has no network beyond its own loopback.
struct EgressRules {
  std::vector<EgressRule> allow;
  std::vector<PortForward> forwards;
  std::map<std::string, std::string> resolve;  // --resolve NAME=IP: pinned names
  std::vector<HeaderInjection> inject;
  EgressLimits limits;

  bool has_egress() const { return !allow.empty() || !forwards.empty(); }
};

// One connection attempt through the egress proxy.
struct EgressRecord {
  std::string host;
  std::uint16_t port = 0;
  std::string address;  // the exact address connected to, empty when denied before resolving
  bool allowed = false;
  std::string rule;     // the rule that allowed it, or why it was denied
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::uint64_t ms = 0;
};

nlohmann::json to_json(const EgressRecord& record);

}  // namespace airlock::egress
