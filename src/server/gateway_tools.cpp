#include "server/gateway_tools.hpp"

#include "mcp/catalog.hpp"

namespace airlock::server {
namespace {

nlohmann::json network_key(const egress::EgressRules& rules) {
  nlohmann::json key = nlohmann::json::array();
  for (const auto& a : rules.allow) key.push_back({a.host, a.port ? *a.port : -1});
  for (const auto& f : rules.forwards) key.push_back({f.listen_port, f.host, f.port});
  key.push_back(rules.resolve);
  return key;
}

bool same_server(const policy::McpServerConfig& a, const policy::McpServerConfig& b) {
  // `where` moves when unrelated lines do; everything else is what the server is.
  auto key = [](const policy::McpServerConfig& s) {
    nlohmann::json data = nlohmann::json::array();
    for (const auto& d : s.data_paths) data.push_back({d.host_path, d.path_inside, d.writable});
    std::map<std::string, std::string> overrides;
    for (const auto& [tool, risk] : s.risk_overrides) overrides[tool] = policy::risk_name(risk);
    return nlohmann::json{s.name, s.command, data, policy::risk_name(s.risk), s.tools_allow, overrides,
                          s.env, s.idle_timeout.count(), s.call_timeout.count(),
                          network_key(s.network)}.dump();
  };
  return key(a) == key(b);
}

std::vector<std::string> names_of(const std::vector<policy::ToolConfig>& tools) {
  std::vector<std::string> names;
  for (const auto& t : tools) names.push_back(t.name + "@" + t.mcp->pin_sha256);
  return names;
}

}  // namespace

GatewayTools::GatewayTools(mcp::PinStore& pins, Publish publish, std::function<void(const std::string&)> log)
    : pins_(pins), publish_(std::move(publish)), log_(std::move(log)) {}

policy::Config GatewayTools::compose_locked() const {
  std::vector<policy::ToolConfig> tools;
  for (const auto& [server, admitted] : admitted_) tools.insert(tools.end(), admitted.begin(), admitted.end());
  return mcp::with_mcp_tools(*base_, tools);
}

Status GatewayTools::set_config(std::shared_ptr<const policy::Config> base) {
  std::lock_guard lock(mu_);
  auto kept = admitted_;
  for (auto it = kept.begin(); it != kept.end();) {
    const auto* now = base->find_mcp_server(it->first);
    const auto* before = base_ ? base_->find_mcp_server(it->first) : nullptr;
    if (!now || !before || !same_server(*now, *before))
      it = kept.erase(it);
    else
      ++it;
  }
  std::swap(kept, admitted_);
  std::swap(base, base_);
  if (auto s = publish_(compose_locked()); !s) {
    admitted_ = std::move(kept);
    base_ = std::move(base);
    return s;
  }
  return {};
}

void GatewayTools::on_listing(const std::string& server, const std::vector<mcp::ListedTool>& tools) {
  std::lock_guard lock(mu_);
  const auto* config = base_ ? base_->find_mcp_server(server) : nullptr;
  if (!config) return;  // removed by a reload meanwhile
  auto admission = mcp::admit_listing(*config, tools, pins_);
  if (!admission) {
    log_("mcp server " + server + ": " + admission.error().message);
    return;
  }
  for (const auto& line : admission->refused) log_("mcp server " + server + ": " + line);
  auto& current = admitted_[server];
  if (names_of(current) == names_of(admission->tools)) return;
  auto previous = std::move(current);
  current = std::move(admission->tools);
  if (auto s = publish_(compose_locked()); !s) {
    log_("mcp server " + server + ": its tools could not be published: " + s.error().message);
    current = std::move(previous);
  }
}

Status GatewayTools::admitted(const std::string& server, const mcp::ListedTool& tool) {
  return mcp::check_pin(server, tool, pins_);
}

}  // namespace airlock::server
