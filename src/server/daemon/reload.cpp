// SIGHUP: a new generation of the configuration, or the old one kept and why.
#include "server/daemon/daemon_state.hpp"

#include <set>

namespace airlock::server {
namespace {

// What a reload may not change: what was bound, opened or sized at start.
std::vector<std::string> fixed_settings_changed(const policy::Config& a, const policy::Config& b) {
  std::vector<std::string> changed;
  auto check = [&](bool same, const char* what) {
    if (!same) changed.emplace_back(what);
  };
  check(
      a.server.listen_host == b.server.listen_host && a.server.listen_port == b.server.listen_port,
      "server.listen");
  check(a.server.max_body_bytes == b.server.max_body_bytes, "server.maxBodyBytes");
  check(a.server.max_concurrent_invocations == b.server.max_concurrent_invocations,
        "server.maxConcurrentInvocations");
  check(a.server.queue_length == b.server.queue_length, "server.queueLength");
  check(a.server.drain_timeout == b.server.drain_timeout, "server.drainTimeout");
  check(a.server.read_timeout == b.server.read_timeout, "server.readTimeout");
  // The TLS context is built once, at bind (a new certificate needs a restart).
  check(a.server.tls == b.server.tls, "server.tls");
  check(a.server.advertise_url == b.server.advertise_url, "server.advertiseUrl");  // in the replica's row
  check(a.storage.data_dir == b.storage.data_dir, "storage.dataDir");
  check(a.storage.checkpoint_every == b.storage.checkpoint_every, "storage.checkpointEvery");
  check(a.storage.checkpoint_interval == b.storage.checkpoint_interval,
        "storage.checkpointInterval");
  check(a.storage.postgres == b.storage.postgres, "storage.postgres");
  check(a.storage.signing_key_file == b.storage.signing_key_file, "storage.signingKeyFile");
  check(a.storage.token_key_file == b.storage.token_key_file, "storage.tokenKeyFile");
  check(a.storage.heartbeat_interval == b.storage.heartbeat_interval, "storage.heartbeatInterval");
  check(a.storage.failover_after == b.storage.failover_after, "storage.failoverAfter");
  // The backends are made at start (server/tiers/tier_backends.hpp).
  check(a.tier_backends == b.tier_backends, "tiers.<risk>.backend");
  return changed;
}

std::set<std::string> tool_names(const policy::Config& c) {
  std::set<std::string> names;
  for (const auto& t : c.tools) names.insert(t.name);
  return names;
}

}  // namespace

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

Result<ReloadReport> Daemon::reload(Result<policy::Config> config) {
  auto& s = *state_;
  std::lock_guard lock(s.reload_mu);
  auto outcome = [&s](const char* result) {
    s.metrics.count("airlock_config_reloads_total", {{"result", result}});
  };
  if (!config) {
    outcome("failed");
    return Error::make("reload", config.error().message + "; kept the running config");
  }
  const auto current = s.generation.load();
  if (auto fixed = fixed_settings_changed(*current->config, *config); !fixed.empty()) {
    outcome("failed");
    return Error::make("reload",
                       "only a restart can change " + joined(fixed) + "; kept the running config");
  }
  auto loaded = std::make_shared<const policy::Config>(std::move(*config));
  if (auto published = s.gateway_tools->set_config(loaded); !published) {
    outcome("failed");
    return Error::make("reload", published.error().message + "; kept the running config");
  }
  s.gateway->configure(loaded->mcp_servers);
  s.gateway->set_max_instances(loaded->server.max_mcp_server_instances);
  s.sessions->reconcile(*loaded);  // a session whose owner lost access, or whose template went, ends
  s.discover_mcp_tools(*loaded);
  ReloadReport report;
  const auto before = tool_names(*current->config), after = tool_names(*s.generation.load()->config);
  for (const auto& n : after)
    if (!before.count(n)) report.added.push_back(n);
  for (const auto& n : before)
    if (!after.count(n)) report.removed.push_back(n);
  report.tools = after.size();  // the old generation lives on in the invocations that hold it
  outcome("ok");
  return report;
}

}  // namespace airlock::server
