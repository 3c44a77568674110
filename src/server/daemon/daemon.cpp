// A daemon's life, step by step; each step is a call into the file or folder that owns it:
// daemon_storage.cpp (the data directory, its lock, the audit log, the state stores),
// daemon_recovery.cpp (what a killed predecessor or a dead replica left), daemon_services.cpp
// (the pipeline's services, the tier backends, the MCP gateway, metrics, the API and its HTTP
// server), reload.cpp (SIGHUP) and serve.cpp (`airlock serve` around all of it).
#include "server/daemon/daemon.hpp"

#include <iostream>

#include "server/daemon/daemon_state.hpp"
#include "server/mcp_server/mcp_server.hpp"

namespace airlock::server {

Daemon::Daemon(std::unique_ptr<State> state) : state_(std::move(state)) {}
Daemon::~Daemon() { shutdown(); }

Result<std::unique_ptr<Daemon>> Daemon::create(policy::Config config, DaemonOptions options) {
  auto st = std::make_unique<State>();
  st->options = options;
  auto cfg = std::make_shared<const policy::Config>(std::move(config));
  // Load and lock: nothing else touches the data directory before its lock is held.
  if (auto s = st->open_storage(*cfg); !s) return s.error();
  // Recover what a killed predecessor left, before anything runs.
  if (auto s = st->recover(); !s) return s.error();
  // Build: the pipeline's services, the tiers, quotas, replicas, the gateway, the API.
  st->wire_pipeline();
  if (auto s = st->make_backends(*cfg); !s) return s.error();
  st->abandon_aborted_sessions();
  if (auto s = st->open_quotas(*cfg); !s) return s.error();
  // On PostgreSQL every outstanding lease may be a live replica's: a dead one's are revoked
  // by failover, invocation by invocation; this host's aborted sessions' by their ids.
  if (!st->pg_store) st->revoke_leftover_leases(*cfg);
  else st->revoke_aborted_session_leases(*cfg);
  if (auto s = st->join_replicas(*cfg); !s) return s.error();
  if (auto s = st->make_gateway(cfg); !s) return s.error();
  if (auto s = st->make_forwarder(*cfg); !s) return s.error();
  st->describe_metrics();
  st->make_api(*cfg);
  return std::unique_ptr<Daemon>(new Daemon(std::move(st)));
}

// Bind, fill the list of the daemon's own endpoints that every execute copies, then serve: no
// request can reach a worker before the list is complete.
Status Daemon::start() {
  if (auto s = state_->http->bind(); !s) return s;
  if (auto s = state_->advertise(state_->http->port()); !s) return s;
  if (auto s = state_->announce_locally(state_->http->port()); !s) return s;
  state_->forbid_own_endpoints(state_->http->port());
  start_services();
  state_->http->serve();
  return {};
}

void Daemon::start_services() {
  state_->forbid_storage_database();
  // The templates' warm pools fill from now on: after the daemon's own endpoints and its
  // database are in the egress proxies' forbidden list.
  state_->sessions->keep_ready(state_->config());
  state_->failed_auth->start();
  state_->sweeper->start();
  state_->webhooks->start();  // what a predecessor left pending goes out now
  if (state_->replicas) state_->replicas->start();
  std::vector<std::string> servers;
  for (const auto& s : state_->config().mcp_servers) servers.push_back(s.name);
  state_->first_listings.expect(servers);
  state_->discover_mcp_tools(state_->config());
}

std::uint16_t Daemon::port() const { return state_->http->port(); }
const Api& Daemon::api() const { return *state_->api; }
const Daemon::Recovery& Daemon::recovery() const { return state_->recovery; }

// Drain, then stop: the transport, the running calls, the MCP servers, the background services,
// the replica's quota holds, and last the audit log with a final checkpoint.
void Daemon::shutdown() {
  auto& s = *state_;
  if (s.shut_down) return;
  s.shut_down = true;
  s.draining = true;
  s.http->stop_accepting();
  s.sessions->end_all("shutdown");  // their execs end with them; no new one starts
  if (s.session_forwarder) s.session_forwarder->stop();  // and requests relayed to other replicas
  s.sweeper->stop();  // no approved call starts now (it resumes after a restart)
  if (!s.executor->drain(s.config().server.drain_timeout)) {
    s.registry.kill_all();  // what is still running ends now (and is recorded)
    s.backends->shutdown();
    s.executor->drain(std::chrono::seconds(30));
  }
  s.gateway->shutdown();  // every server sandbox ends; a listing under way fails
  for (auto& t : s.discovery)
    if (t.joinable()) t.join();
  s.first_listings.release_all();  // a tools/list still waiting is answered now
  s.api->mcp().close_streams();    // MCP notification streams end (a subscription with its result)
  s.http->stop();
  s.sessions.reset();  // after the last request that could reach it
  s.executor.reset();
  s.webhooks->stop();      // after the attempt under way; the pending rest goes at the next start
  s.failed_auth->stop();   // what is pending is written
  // Nothing of this replica runs now: every hold is released (a release the database did not
  // take is removed by another replica's failover round once this row is gone) and its row goes.
  if (s.pg_quotas)
    if (auto flushed = s.pg_quotas->flush_pending(); !flushed)
      std::cerr << "airlock: " << flushed.error().message << "\n";
  if (s.pg_sessions)  // an ended session's row the database missed: failover would record it again
    if (auto flushed = s.pg_sessions->flush_pending(); !flushed)
      std::cerr << "airlock: " << flushed.error().message << "\n";
  if (s.replicas) s.replicas->stop();
  (void)s.audit->close();  // commits and signs a final checkpoint
}

}  // namespace airlock::server
