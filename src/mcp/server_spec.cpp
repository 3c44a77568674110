#include "mcp/server_spec.hpp"

#include <algorithm>
#include <tuple>

#include "policy/config.hpp"

namespace airlock::mcp {
namespace {

auto fields(const egress::EgressRule& r) { return std::tie(r.host, r.port); }
auto fields(const egress::PortForward& f) { return std::tie(f.listen_port, f.host, f.port); }
auto fields(const egress::HeaderInjection& h) {
  return std::tie(h.host, h.port, h.header, h.value);
}
auto fields(const egress::EgressLimits& l) {
  return std::tie(l.max_connections, l.max_bytes_up, l.max_bytes_down, l.idle_timeout,
                  l.connect_timeout, l.request_timeout, l.max_header_bytes);
}
auto fields(const policy::McpDataPath& d) {
  return std::tie(d.host_path, d.path_inside, d.writable);
}

template <typename T>
bool same_list(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (fields(a[i]) != fields(b[i])) return false;
  return true;
}

bool same_rules(const egress::EgressRules& a, const egress::EgressRules& b) {
  return same_list(a.allow, b.allow) && same_list(a.forwards, b.forwards) &&
         a.resolve == b.resolve && same_list(a.inject, b.inject) &&
         fields(a.limits) == fields(b.limits);
}

}  // namespace

sandbox::Limits server_limits(const policy::McpServerConfig& server,
                              const std::map<policy::Risk, sandbox::Limits>& tiers) {
  const auto defaults = tiers.empty() ? policy::default_tiers() : tiers;
  auto it = defaults.find(server.risk);
  return it != defaults.end() ? it->second : sandbox::Limits{};
}

sandbox::Spec server_spec(const policy::McpServerConfig& server, const sandbox::Limits& limits) {
  sandbox::Spec spec;
  spec.argv = server.command;
  spec.env = server.env;
  for (const auto& d : server.data_paths)
    spec.binds.push_back({d.host_path, d.path_inside, d.writable});
  spec.limits = limits;
  spec.hostname = "airlock-mcp";
  return spec;
}

static bool same_credentials(const std::vector<policy::CredentialSpec>& a,
                      const std::vector<policy::CredentialSpec>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const auto& x, const auto& y) { return x.same_as(y); });
}

bool same_server(const policy::McpServerConfig& a, const policy::McpServerConfig& b) {
  return a.name == b.name && a.command == b.command && same_list(a.data_paths, b.data_paths) &&
         same_rules(a.network, b.network) && a.risk == b.risk && a.tools_allow == b.tools_allow &&
         a.risk_overrides == b.risk_overrides && a.env == b.env &&
         a.idle_timeout == b.idle_timeout && a.call_timeout == b.call_timeout &&
         same_credentials(a.credentials, b.credentials) && a.placement == b.placement;
}

}  // namespace airlock::mcp
