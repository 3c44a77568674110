// The daemon's state and the steps of its life, shared by the files that tell them (one
// file per part: daemon.cpp the story, daemon_storage.cpp, daemon_recovery.cpp,
// daemon_services.cpp, reload.cpp, serve.cpp). Internal to server/daemon/.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit_log.hpp"
#include "creds/lease_store.hpp"
#include "creds/revoked_tokens.hpp"
#include "creds/secret_store.hpp"
#include "egress/policy.hpp"
#include "identity/signer.hpp"
#include "mcp/gateway.hpp"
#include "mcp/pin_store.hpp"
#include "pipeline/failed_auth.hpp"
#include "pipeline/quotas/quota_book_pg.hpp"
#include "server/approvals/approval_store.hpp"
#include "server/approvals/approval_sweeper.hpp"
#include "server/approvals/approvals.hpp"
#include "server/approvals/webhook_outbox.hpp"
#include "server/approvals/webhooks.hpp"
#include "server/daemon/daemon.hpp"
#include "storage/data_dir_lock.hpp"
#include "server/core/first_listings.hpp"
#include "server/core/generation_watch.hpp"
#include "server/daemon/gateway_tools.hpp"
#include "server/core/generation.hpp"
#include "server/core/verified_callers.hpp"
#include "server/http/http_server.hpp"
#include "server/invocations/invocation_store_pg.hpp"
#include "server/invocations/invocation_changes.hpp"
#include "server/invocations/invocation_waiters.hpp"
#include "server/console/console_oidc_logins.hpp"
#include "server/console/console_session_store.hpp"
#include "server/mcp_server/mcp_session_book.hpp"
#include "server/replicas/replicas.hpp"
#include "server/sessions/session_forwarder.hpp"
#include "server/sessions/session_service.hpp"
#include "server/sessions/session_store_pg.hpp"
#include "server/tiers/tier_backends.hpp"

namespace airlock::server {

// Stage latencies into the metrics, and a log line per invocation.
class MetricsObserver : public pipeline::StageObserver {
 public:
  explicit MetricsObserver(Metrics& m) : metrics_(m) {}
  void stage_done(std::string_view stage, double ms, const pipeline::Invocation&) override {
    metrics_.observe("airlock_stage_seconds", ms / 1000.0, {{"stage", std::string(stage)}});
  }

 private:
  Metrics& metrics_;
};

struct Daemon::State {
  DaemonOptions options;
  std::optional<storage::DataDirLock> lock;  // first member: released last
  std::unique_ptr<audit::AuditLog> audit;
  std::optional<identity::TokenSigner> token_signer;  // Airlock's tokens (POST /v1/token)
  std::unique_ptr<pipeline::FailedAuthLog> failed_auth;
  std::unique_ptr<InvocationStore> store;
  // storage.postgres: the store is PostgreSQL (pg_store, shared by the replicas) and this
  // daemon is one replica among them (docs/daemon.md, "Replicas and failover").
  PostgresInvocationStore* pg_store = nullptr;
  std::unique_ptr<ReplicaRegistry> replicas;
  std::shared_ptr<pipeline::PostgresQuotaBook> pg_quotas;  // the quota book then (pipeline_deps.quotas)
  std::unique_ptr<creds::LeaseStore> leases;  // in state.db
  std::unique_ptr<creds::RevokedTokens> revoked_tokens;  // in state.db: its own table
  std::unique_ptr<mcp::PinStore> pins;                   // in state.db: MCP tool pins
  std::unique_ptr<ApprovalStore> approval_store;         // in state.db: critical calls' approvals
  std::unique_ptr<ApprovalService> approvals;
  InvocationWaiters waiters;                             // GET /v1/invocations/{id}?wait=
  InvocationChanges changes;                             // resumed and ended calls (MCP task notifications)
  std::unique_ptr<ApprovalSweeper> sweeper;
  std::unique_ptr<WebhookOutbox> webhook_outbox;         // in state.db: deliveries (docs/webhooks.md)
  std::unique_ptr<WebhookService> webhooks;
  std::unique_ptr<SessionStore> session_store;  // in state.db: what a crash leaves to record aborted
  // storage.postgres: the sessions' rows are the database's instead, naming this replica; the
  // others forward requests for them here, and take them over when it dies (docs/sessions.md).
  std::unique_ptr<PostgresSessionStore> pg_sessions;
  std::shared_ptr<McpSessionBook> mcp_session_book;  // storage.postgres: MCP sessions every replica shares
  std::shared_ptr<console::SessionStore> console_sessions;  // storage.postgres: the console's, likewise
  std::shared_ptr<console::PendingLogins> console_logins;   // and its pending OpenID sign-ins
  std::unique_ptr<SessionForwarder> session_forwarder;  // requests for the others' sessions
  std::unique_ptr<SnapshotStore> snapshot_store;  // in state.db and <dataDir>/snapshots
  std::unique_ptr<SessionService> sessions;  // docs/sessions.md
  // <dataDir>/secrets.db, opened at the first credential that needs a secret: a daemon whose
  // tools use none never creates the key file beside its data directory.
  std::string data_dir;
  std::mutex secrets_mu;
  std::unique_ptr<creds::SecretStore> secrets;
  Result<std::string> secret(const std::string& name);
  backend::RunningSandboxes registry;
  std::unique_ptr<TierBackends> backends;  // outlive the pipelines that use them
  // The config's MCP servers in their sandboxes, and the tools they list as published.
  std::unique_ptr<GatewayTools> gateway_tools;
  std::unique_ptr<mcp::Gateway> gateway;
  std::vector<std::thread> discovery;  // list the servers' tools once the daemon serves, one each
  Metrics metrics;
  std::unique_ptr<MetricsObserver> observer;
  pipeline::PipelineDeps pipeline_deps;
  GenerationSlot generation;  // the current config and pipeline
  GenerationWatch generation_watch;  // told of each generation published (MCP's list_changed)
  std::mutex reload_mu;       // one reload at a time
  std::unique_ptr<InvocationExecutor> executor;
  VerifiedCallers verified_callers;  // whose credentials authenticated: their intake share
  FirstListings first_listings;      // the MCP servers' first listing: /healthz "starting"
  std::atomic<bool> draining{false};
  std::unique_ptr<Api> api;
  std::unique_ptr<HttpServer> http;
  std::shared_ptr<std::vector<egress::Endpoint>> forbidden;  // our API: never an egress target
  Recovery recovery;
  std::vector<std::string> aborted_sessions;  // ids recover() recorded aborted: their leases to revoke
  bool shut_down = false;

  const policy::Config& config() const { return *generation.load()->config; }
  Status open_storage(const policy::Config& cfg);
  Status open_invocations(const policy::Config& cfg);
  Status join_replicas(const policy::Config& cfg);
  Status open_quotas(const policy::Config& cfg);
  void abandoned(const ReplicaRegistry::Orphan& orphan);
  void take_over_sessions();  // a dead replica's sessions, each failover round
  Status make_forwarder(const policy::Config& cfg);
  Status advertise(std::uint16_t port);  // this replica's address in its row, once bound
  Status announce_locally(std::uint16_t port);  // the local URL in the data directory's lock file
  Status recover();
  void wire_pipeline();
  Status make_backends(const policy::Config& cfg);
  void forbid_own_endpoints(std::uint16_t port);
  void forbid_storage_database();
  void revoke_leftover_leases(const policy::Config& cfg);
  void revoke_aborted_session_leases(const policy::Config& cfg);
  void abandon_aborted_sessions();  // their pods, once the backends are made
  void describe_metrics();
  void answer_polls_done_elsewhere();
  void make_api(const policy::Config& cfg);
  Status make_gateway(std::shared_ptr<const policy::Config> cfg);
  void discover_mcp_tools(const policy::Config& cfg);
};

// "a, b" or "none" (reload.cpp).
std::string joined(const std::vector<std::string>& names);

}  // namespace airlock::server
