#include "server/daemon/gateway_tools.hpp"

#include "mcp/catalog.hpp"
#include "mcp/content_tools.hpp"

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

void GatewayTools::log_once_locked(const std::string& line) {
  if (logged_.size() < 10'000 && logged_.insert(line).second) log_(line);
}

bool GatewayTools::admit_locked(const policy::McpServerConfig& server, const std::vector<mcp::ListedTool>& tools) {
  auto admission = mcp::admit_listing(server, tools, pins_);
  if (!admission) {
    log_once_locked("mcp server " + server.name + ": " + admission.error().message);
    return false;
  }
  for (const auto& line : admission->refused) log_once_locked("mcp server " + server.name + ": " + line);
  // Beside what it lists, each listed server's content tools (its resources and prompts).
  for (auto& t : mcp::content_tools(server)) admission->tools.push_back(std::move(t));
  admitted_[server.name] = std::move(admission->tools);
  return true;
}

Status GatewayTools::set_config(std::shared_ptr<const policy::Config> base) {
  std::lock_guard lock(mu_);
  auto saved_admitted = admitted_;
  auto saved_listings = last_listing_;
  for (auto it = last_listing_.begin(); it != last_listing_.end();) {
    const auto* now = base->find_mcp_server(it->first);
    const auto* before = base_ ? base_->find_mcp_server(it->first) : nullptr;
    if (!now || !before || !same_server(*now, *before)) {
      admitted_.erase(it->first);
      it = last_listing_.erase(it);
    } else {
      if (!admit_locked(*now, it->second)) admitted_.erase(it->first);
      ++it;
    }
  }
  std::swap(base, base_);
  if (auto s = publish_(compose_locked()); !s) {
    admitted_ = std::move(saved_admitted);
    last_listing_ = std::move(saved_listings);
    base_ = std::move(base);
    return s;
  }
  return {};
}

void GatewayTools::on_listing(const std::string& server, const std::vector<mcp::ListedTool>& tools) {
  std::lock_guard lock(mu_);
  const auto* config = base_ ? base_->find_mcp_server(server) : nullptr;
  if (!config) return;  // removed by a reload meanwhile
  last_listing_[server] = tools;
  auto previous = admitted_[server];
  if (!admit_locked(*config, tools)) return;
  if (names_of(previous) == names_of(admitted_[server])) return;
  if (auto s = publish_(compose_locked()); !s) {
    log_("mcp server " + server + ": its tools could not be published: " + s.error().message);
    admitted_[server] = std::move(previous);
  }
}

Status GatewayTools::admitted(const std::string& server, const mcp::ListedTool& tool) {
  return mcp::check_pin(server, tool, pins_);
}

}  // namespace airlock::server
