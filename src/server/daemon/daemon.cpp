#include "server/daemon/daemon.hpp"

#include "server/daemon/tier_backends.hpp"
#include "creds/sealing_key.hpp"
#include "server/approvals/approval_store.hpp"
#include "server/approvals/approval_sweeper.hpp"
#include "server/approvals/approvals.hpp"
#include "server/invocations/invocation_store_pg.hpp"
#include "server/invocations/invocation_waiters.hpp"
#include "server/daemon/quota_book_pg.hpp"
#include "server/daemon/replicas.hpp"
#include "server/daemon/first_listings.hpp"
#include "server/daemon/verified_callers.hpp"
#include "server/approvals/webhooks.hpp"

#include <netdb.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include <boost/asio/ip/address.hpp>

#include "audit/audit_log.hpp"
#include "audit/invocation_record.hpp"
#include "creds/broker.hpp"
#include "creds/providers.hpp"
#include "creds/revoked_tokens.hpp"
#include "creds/secret_store.hpp"
#include "egress/policy.hpp"
#include "identity/signer.hpp"
#include "mcp/gateway.hpp"
#include "mcp/pin_store.hpp"
#include "pipeline/failed_auth.hpp"
#include "pipeline/stages/audit_record.hpp"
#include "pipeline/storage_locations.hpp"
#include "storage/postgres.hpp"
#include "storage/state_location.hpp"
#include "pipeline/stages/execute.hpp"
#include "sandbox/cgroup.hpp"
#include "server/daemon/data_dir_lock.hpp"
#include "server/daemon/gateway_tools.hpp"
#include "server/daemon/generation.hpp"
#include "server/http/http_server.hpp"

namespace airlock::server {
namespace {

namespace fs = std::filesystem;

const std::vector<double> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25,  0.5,    1,     2.5,  5,    10,  30};

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

// Files the daemon creates in its data directory are its own: 0600 (the process umask is
// restored when this goes away). SQLite gives -wal and -shm files the database's mode.
class PrivateFiles {
 public:
  PrivateFiles() : old_(::umask(0077)) {}
  ~PrivateFiles() { ::umask(old_); }
  PrivateFiles(const PrivateFiles&) = delete;
  PrivateFiles& operator=(const PrivateFiles&) = delete;

 private:
  mode_t old_;
};

Status make_data_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::make("storage", "cannot create " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  return {};
}

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
  check(a.storage.data_dir == b.storage.data_dir, "storage.dataDir");
  check(a.storage.checkpoint_every == b.storage.checkpoint_every, "storage.checkpointEvery");
  check(a.storage.checkpoint_interval == b.storage.checkpoint_interval,
        "storage.checkpointInterval");
  check(a.storage.postgres == b.storage.postgres, "storage.postgres");
  check(a.storage.signing_key_file == b.storage.signing_key_file, "storage.signingKeyFile");
  check(a.storage.token_key_file == b.storage.token_key_file, "storage.tokenKeyFile");
  check(a.storage.heartbeat_interval == b.storage.heartbeat_interval, "storage.heartbeatInterval");
  check(a.storage.failover_after == b.storage.failover_after, "storage.failoverAfter");
  // The backends are made at start (server/daemon/tier_backends.hpp).
  check(a.tier_backends == b.tier_backends, "tiers.<risk>.backend");
  return changed;
}

std::set<std::string> tool_names(const policy::Config& c) {
  std::set<std::string> names;
  for (const auto& t : c.tools) names.insert(t.name);
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// The addresses of storage.postgres, resolved now: the database holds the audit log and the
// state, and no tool reaches it through the egress proxy, whatever its rules say.
std::vector<egress::Endpoint> storage_database_endpoints(const policy::StorageConfig& storage) {
  std::vector<egress::Endpoint> endpoints;
  if (!storage.postgres) return endpoints;
  for (const auto& host : storage::pg::tcp_hosts(storage.postgres->url).value_or(
           std::vector<storage::pg::TcpHost>{})) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.host.c_str(), nullptr, &hints, &found) != 0) continue;
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
      char text[NI_MAXHOST];
      if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0)
        continue;
      if (auto ip = egress::parse_ip_strict(text)) endpoints.push_back({*ip, host.port});
    }
    ::freeaddrinfo(found);
  }
  return endpoints;
}

}  // namespace

struct Daemon::State {
  DaemonOptions options;
  std::optional<DataDirLock> lock;  // first member: released last
  std::unique_ptr<audit::AuditLog> audit;
  std::optional<identity::TokenSigner> token_signer;  // Airlock's tokens (POST /v1/token)
  std::unique_ptr<pipeline::FailedAuthLog> failed_auth;
  std::unique_ptr<InvocationStore> store;
  // storage.postgres: the store is PostgreSQL (pg_store, shared by the replicas) and this
  // daemon is one replica among them (docs/daemon.md, "Replicas and failover").
  PostgresInvocationStore* pg_store = nullptr;
  std::unique_ptr<ReplicaRegistry> replicas;
  std::shared_ptr<PostgresQuotaBook> pg_quotas;  // the quota book then (pipeline_deps.quotas)
  std::unique_ptr<creds::LeaseStore> leases;  // in state.db
  std::unique_ptr<creds::RevokedTokens> revoked_tokens;  // in state.db: its own table
  std::unique_ptr<mcp::PinStore> pins;                   // in state.db: MCP tool pins
  std::unique_ptr<ApprovalStore> approval_store;         // in state.db: critical calls' approvals
  std::unique_ptr<ApprovalService> approvals;
  InvocationWaiters waiters;                             // GET /v1/invocations/{id}?wait=
  std::unique_ptr<ApprovalSweeper> sweeper;
  std::unique_ptr<WebhookOutbox> webhook_outbox;         // in state.db: deliveries (docs/webhooks.md)
  std::unique_ptr<WebhookService> webhooks;
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
  std::thread discovery;  // lists each server's tools once the daemon serves
  Metrics metrics;
  std::unique_ptr<MetricsObserver> observer;
  pipeline::PipelineDeps pipeline_deps;
  GenerationSlot generation;  // the current config and pipeline
  std::mutex reload_mu;       // one reload at a time
  std::unique_ptr<InvocationExecutor> executor;
  VerifiedCallers verified_callers;  // whose credentials authenticated: their intake share
  FirstListings first_listings;      // the MCP servers' first listing: /healthz "starting"
  std::atomic<bool> draining{false};
  std::unique_ptr<Api> api;
  std::unique_ptr<HttpServer> http;
  std::shared_ptr<std::vector<egress::Endpoint>> forbidden;  // our API: never an egress target
  Recovery recovery;
  bool shut_down = false;

  const policy::Config& config() const { return *generation.load()->config; }
  Status open_storage(const policy::Config& cfg);
  Status open_invocations(const policy::Config& cfg);
  Status join_replicas(const policy::Config& cfg);
  Status open_quotas(const policy::Config& cfg);
  void abandoned(const ReplicaRegistry::Orphan& orphan);
  Status recover();
  void revoke_leftover_leases(const policy::Config& cfg);
  void describe_metrics();
  void answer_polls_done_elsewhere();
  void make_api(const policy::Config& cfg);
  Status make_gateway(std::shared_ptr<const policy::Config> cfg);
  void discover_mcp_tools(const policy::Config& cfg);
};

// <dataDir>/audit.db (+ .key) or storage.postgres, state.db, runtime/airlock_runner.py.
Status Daemon::State::open_storage(const policy::Config& cfg) {
  const std::string& dir = cfg.storage.data_dir;
  data_dir = dir;
  auto locked = DataDirLock::acquire(dir);  // before anything else in the directory is touched
  if (!locked) return locked.error();
  lock.emplace(std::move(*locked));
  PrivateFiles private_files;
  // The runner is public code the sandbox user must read: install_runner makes it 0644.
  pipeline_deps.runner_dir = dir + "/runtime";
  if (auto s = pipeline::install_runner(pipeline_deps.runner_dir); !s) return s.error();
  audit::AuditLogOptions audit_options;
  audit_options.checkpoint_every_records = cfg.storage.checkpoint_every;
  audit_options.checkpoint_interval = cfg.storage.checkpoint_interval;
  // storage.postgres: the audit log is the database's, shared with every daemon configured
  // with it (so is the state, below); the webhook outbox and the secrets stay in the data
  // directory.
  auto log = audit::AuditLog::open(pipeline::audit_log_location(cfg.storage), audit_options);
  if (!log) return log.error();
  audit = std::move(*log);
  // storage.tokenKeyFile: the key every replica signs its tokens with (each accepts the
  // others'); by default the daemon's own, in its data directory.
  const std::string token_key =
      cfg.storage.token_key_file.empty() ? dir + "/token.key" : cfg.storage.token_key_file;
  auto signer = identity::TokenSigner::load_or_create(token_key);
  if (!signer) return Error::make("storage", token_key + ": " + signer.error().message);
  token_signer.emplace(std::move(*signer));
  if (auto s = open_invocations(cfg); !s) return s.error();
  // Leases, revoked tokens, pins and approvals: state.db, or the storage.postgres database
  // every replica shares. The webhook outbox stays in state.db (docs/config.md, "storage", says why).
  const storage::StateLocation shared_state = pipeline::state_location(cfg.storage);
  auto lease_store = creds::LeaseStore::open(shared_state);
  if (!lease_store) return lease_store.error();
  leases = std::move(*lease_store);
  auto revoked = creds::RevokedTokens::open(shared_state);
  if (!revoked) return revoked.error();
  revoked_tokens = std::move(*revoked);
  auto pin_store = mcp::PinStore::open(shared_state);
  if (!pin_store) return pin_store.error();
  pins = std::move(*pin_store);
  // Pending calls' arguments, kept user tokens and webhook bodies are sealed with the secret
  // store's key.
  auto sealing_key = creds::SealingKey::load_or_create(creds::SealingKey::key_file_for(data_dir));
  if (!sealing_key) return Error::make(sealing_key.error().code, "the approvals' sealing key: " + sealing_key.error().message);
  auto approval_store_opened = ApprovalStore::open(shared_state, *sealing_key);
  if (!approval_store_opened) return approval_store_opened.error();
  approval_store = std::move(*approval_store_opened);
  approvals = std::make_unique<ApprovalService>(*approval_store);
  auto outbox = WebhookOutbox::open(dir + "/state.db", *sealing_key);
  if (!outbox) return outbox.error();
  webhook_outbox = std::move(*outbox);
  return {};
}

// The gateway, and the first generation: the config with the MCP servers' tools (none until
// they are listed). Each listing publishes a generation with what it admitted.
Status Daemon::State::make_gateway(std::shared_ptr<const policy::Config> cfg) {
  auto log = [](const std::string& line) { std::cerr << "airlock: " << line << "\n"; };
  gateway_tools = std::make_unique<GatewayTools>(
      *pins,
      [this](policy::Config config) -> Status {
        auto next = build_generation(std::make_shared<const policy::Config>(std::move(config)), pipeline_deps);
        if (!next) return next.error();
        generation.store(std::move(*next));
        return {};
      },
      log);
  mcp::GatewayOptions gateway_options;
  gateway_options.registry = &registry;
  gateway_options.forbidden = forbidden;
  gateway_options.tiers = cfg->tiers;  // as at start: a reload does not resize running servers
  gateway_options.listed = [this](const std::string& server, const std::vector<mcp::ListedTool>& tools) {
    gateway_tools->on_listing(server, tools);
  };
  gateway_options.admitted = [this](const std::string& server, const mcp::ListedTool& tool) {
    return gateway_tools->admitted(server, tool);
  };
  gateway = std::make_unique<mcp::Gateway>(std::move(gateway_options));
  gateway->configure(cfg->mcp_servers);
  pipeline_deps.mcp = gateway.get();
  return gateway_tools->set_config(std::move(cfg));
}

// Lists every server's tools, one after another, off the serving threads: a server that is
// slow to start delays only its own tools.
void Daemon::State::discover_mcp_tools(const policy::Config& cfg) {
  std::vector<std::string> servers;
  for (const auto& s : cfg.mcp_servers) servers.push_back(s.name);
  if (servers.empty()) return;
  if (discovery.joinable()) discovery.join();
  discovery = std::thread([this, servers] {
    for (const auto& name : servers) {
      if (draining) return;
      if (auto listed = gateway->list_tools(name); !listed) {
        std::cerr << "airlock: mcp server " << name << ": " << listed.error().message << "\n";
        first_listings.failed(name, listed.error().message);
      } else {
        first_listings.listed(name);
      }
    }
  });
}

Result<std::string> Daemon::State::secret(const std::string& name) {
  std::lock_guard held(secrets_mu);
  if (!secrets) {
    PrivateFiles private_files;
    auto opened = creds::SecretStore::open(data_dir);
    if (!opened) return Error::make("credential_unavailable", "the secret store: " + opened.error().message);
    secrets = std::move(*opened);
  }
  return secrets->get(name);
}

// Credentials a killed predecessor leased and never revoked: revoked before anything runs.
void Daemon::State::revoke_leftover_leases(const policy::Config& cfg) {
  creds::Broker broker(*leases, pipeline_deps.make_providers(cfg));
  auto r = broker.revoke_outstanding();
  recovery.revoked_leases = r.revoked;
  recovery.lease_errors = std::move(r.errors);
}

namespace {

// The stored response of an invocation whose daemon died while it ran.
nlohmann::json aborted_response(const std::string& id, const std::string& tool, const std::string& why) {
  return {{"id", id},
          {"tool", tool},
          {"status", "error"},
          {"principal", ""},
          {"error", {{"kind", "aborted"}, {"message", why}}}};
}

}  // namespace

// state.db, or storage.postgres: then this daemon is a replica (joined in join_replicas).
Status Daemon::State::open_invocations(const policy::Config& cfg) {
  const auto location = pipeline::state_location(cfg.storage);
  if (!location.is_postgres()) {
    auto opened = InvocationStore::open(location);
    if (!opened) return opened.error();
    store = std::move(*opened);
    return {};
  }
  auto opened = PostgresInvocationStore::open(location.postgres);
  if (!opened) return opened.error();
  pg_store = opened->get();
  store = std::move(*opened);
  return {};
}

// Registers this replica before anything runs; its thread (heartbeats, failover) starts with
// the daemon. What failover does with a dead replica's running invocation is what recover()
// does at a restart, plus its credentials and pods (that replica cannot do it any more).
Status Daemon::State::join_replicas(const policy::Config& cfg) {
  if (!pg_store) return {};
  ReplicaRegistry::Options timing{cfg.storage.heartbeat_interval, cfg.storage.failover_after};
  const std::string after = std::to_string(cfg.storage.failover_after.count()) + " ms";
  ReplicaRegistry::Hooks hooks;
  hooks.record = [this](const ReplicaRegistry::Orphan& o) { return pipeline::record_aborted(*audit, o.id, o.tool); };
  hooks.response = [after](const ReplicaRegistry::Orphan& o) {
    auto response = aborted_response(o.id, o.tool,
                                     "the replica running it (" + o.replica + ") stopped: no heartbeat for " + after);
    response["principal"] = o.owner.principal;  // its caller still finds it
    if (!o.owner.sub.empty()) response["subject"] = {{"issuer", o.owner.issuer}, {"sub", o.owner.sub}};
    return response;
  };
  hooks.aborted = [this](const ReplicaRegistry::Orphan& o) { abandoned(o); };
  hooks.after_failover = [this] {  // a dead (or cleanly stopped) replica's quota places
    auto released = pg_quotas->release_dead_replicas();
    if (!released) std::cerr << "airlock: failover: " << released.error().message << "\n";
    else if (*released > 0) std::cerr << "airlock: failover: released " << *released << " quota place(s) of dead replicas\n";
  };
  hooks.log = [](const std::string& line) { std::cerr << "airlock: " << line << "\n"; };
  auto joined = ReplicaRegistry::join(pipeline::state_location(cfg.storage).postgres, *pg_store, timing,
                                      std::move(hooks));
  if (!joined) return joined.error();
  replicas = std::move(*joined);
  std::cerr << "airlock: replica " << pg_store->replica() << " joined (heartbeat every "
            << cfg.storage.heartbeat_interval.count() << " ms, failover after " << after << ")\n";
  return {};
}

// Quotas and the fair queue (docs/daemon.md): one book for the daemon's life, over reloads.
// On PostgreSQL the replicas' book, shared (server/daemon/quota_book_pg.hpp); else this daemon's.
Status Daemon::State::open_quotas(const policy::Config& cfg) {
  if (!pg_store) {
    pipeline_deps.quotas = pipeline::MemoryQuotaBook::create();
    return {};
  }
  // Admissions and CPU charges with synchronous_commit off: a database crash may forget the
  // last few hundred ms of them, an undercount, for one fsync less per call (docs/performance.md,
  // "Quotas on PostgreSQL"). Releases stay synchronous.
  PostgresQuotaBook::Options relaxed;
  relaxed.synchronous_commit = false;
  auto book = PostgresQuotaBook::open(pipeline::state_location(cfg.storage).postgres, pg_store->replica(), relaxed);
  if (!book) return book.error();
  pg_quotas = *book;
  pipeline_deps.quotas = pg_quotas;
  return {};
}

// A dead replica's invocation, recorded as aborted: its credentials revoked (the value died
// with the replica: each provider ends what it can without it, as at a restart) and its pods
// deleted.
void Daemon::State::abandoned(const ReplicaRegistry::Orphan& orphan) {
  metrics.count("airlock_failover_aborted_total");
  creds::Broker broker(*leases, pipeline_deps.make_providers(config()));
  const auto revoked = broker.revoke_of_invocation(orphan.id);
  std::string problems;
  for (const auto& e : revoked.errors) problems += " " + e + ";";
  if (auto removed = backends->abandon(orphan.id); !removed) problems += " pods: " + removed.error().message + ";";
  std::cerr << "airlock: failover: invocation " << orphan.id << " (" << orphan.tool << ") of replica " << orphan.replica
            << " recorded as aborted; revoked " << revoked.revoked << " credential lease(s)"
            << (problems.empty() ? "" : "; problems:" + problems) << "\n";
}

// Sandboxes of a killed predecessor died with it (PDEATHSIG, pid namespaces); their cgroups
// and its unfinished invocations are what is left. On PostgreSQL the running rows are other
// live replicas' too: a dead replica's are aborted by failover (ReplicaRegistry), not here.
Status Daemon::State::recover() {
  recovery.stale_cgroups = sandbox::remove_stale_cgroups();
  if (pg_store) return {};
  for (const auto& r : store->running()) {
    if (auto s = pipeline::record_aborted(*audit, r.id, r.tool); !s) return s.error();
    (void)store->finish(r.id, "error", aborted_response(r.id, r.tool, "the daemon stopped while it ran"));
    ++recovery.aborted_invocations;
  }
  return {};
}

void Daemon::State::describe_metrics() {
  metrics.describe_counter("airlock_invocations_total", "Invocations by tool and status.");
  metrics.describe_counter("airlock_denials_total", "Denied invocations by reason.");
  metrics.describe_counter("airlock_invocation_starts_total",
                           "Sandboxed invocations by tool and start: warm (forked from the tool's "
                           "warm template) or cold.");
  metrics.describe_counter("airlock_redactions_total", "Values redacted by DLP.");
  metrics.describe_counter("airlock_rejected_total",
                           "Requests refused before they became invocations.");
  metrics.describe_counter("airlock_quota_rejections_total",
                           "Invocations refused by a quota (quota_exceeded), by principal and quota.");
  metrics.describe_counter("airlock_failover_aborted_total",
                           "Invocations of dead replicas this replica recorded as aborted (storage.postgres).");
  metrics.describe_counter("airlock_config_reloads_total",
                           "Configuration reloads (SIGHUP) by result.");
  metrics.describe_counter("airlock_webhook_deliveries_total",
                           "Webhook delivery attempts by webhook and result (delivered, retried, failed).");
  metrics.describe_histogram("airlock_stage_seconds", "Time spent in each pipeline stage.",
                             kLatencyBuckets);
  metrics.describe_histogram("airlock_invocation_seconds", "End-to-end invocation time by tool.",
                             kLatencyBuckets);
  metrics.describe_gauge("airlock_sandboxes_running", "Sandboxes running now.",
                         [this] { return static_cast<double>(registry.count()); });
  // Every tier's: the gVisor and Kubernetes runs are not the local registry's sandboxes.
  metrics.describe_gauge("airlock_invocations_running", "Invocations running on a worker now, any tier.", [this] {
    return executor ? static_cast<double>(executor->running()) : 0.0;
  });
  metrics.describe_gauge("airlock_queue_depth", "Invocations waiting for a worker.", [this] {
    return executor ? static_cast<double>(executor->queued()) : 0.0;
  });
}

// Replicas: a long poll here may wait for an invocation another replica finishes (an
// approval decided and run there), which no notify here announces. At each sweeper tick
// (200 ms) the shared store says which of the polled ones are done. Chosen over LISTEN/NOTIFY:
// no second connection per replica to keep alive, and a notification lost while the
// connection was down could leave a poll waiting until its deadline; a re-read cannot.
void Daemon::State::answer_polls_done_elsewhere() {
  for (const auto& id : waiters.ids())
    if (auto stored = store->get(id); stored && !is_unfinished(*stored)) waiters.notify(id);
}

void Daemon::State::make_api(const policy::Config& cfg) {
  executor = std::make_unique<InvocationExecutor>(cfg.server.max_concurrent_invocations,
                                                  cfg.server.queue_length);
  ApiServices services;
  services.generation = &generation;
  services.executor = executor.get();
  services.verified_callers = &verified_callers;
  services.first_listings = &first_listings;
  services.store = store.get();
  services.audit = audit.get();
  services.token_signer = &*token_signer;
  services.revoked_tokens = revoked_tokens.get();
  services.metrics = &metrics;
  services.draining = &draining;
  if (replicas)
    services.storage_problem = [r = replicas.get()] { return r->storage_problem(); };
  services.new_id = [] { return audit::new_invocation_id(); };
  services.approvals = approvals.get();
  services.waiters = &waiters;
  webhooks = std::make_unique<WebhookService>(*webhook_outbox, generation, audit.get(), &metrics);
  services.webhooks = webhooks.get();
  services.failed_auth = failed_auth.get();
  services.quotas = pipeline_deps.quotas;
  approvals->set_services(services);
  // What expired while the daemon was down is denied before anything is served.
  approvals->expire_due();
  sweeper = std::make_unique<ApprovalSweeper>(*approvals, waiters);
  // Replicas: also the quota releases and charges the database missed (quota_book_pg.hpp).
  if (pipeline::state_location(cfg.storage).is_postgres())
    sweeper->also([this] {
      answer_polls_done_elsewhere();
      if (pg_quotas) (void)pg_quotas->flush_pending();
    });
  api = std::make_unique<Api>(services);
  HttpServerOptions http_options;
  http_options.host = cfg.server.listen_host;
  http_options.port = cfg.server.listen_port;
  http_options.max_body_bytes = cfg.server.max_body_bytes;
  http_options.read_timeout = cfg.server.read_timeout;
  http_options.io_threads = options.io_threads;
  http_options.tls = cfg.server.tls;
  http_options.rejected = [this](std::string_view reason) {
    metrics.count("airlock_rejected_total", {{"reason", std::string(reason)}});
  };
  http = std::make_unique<HttpServer>(*api, http_options);
}

Daemon::Daemon(std::unique_ptr<State> state) : state_(std::move(state)) {}
Daemon::~Daemon() { shutdown(); }

Result<std::unique_ptr<Daemon>> Daemon::create(policy::Config config, DaemonOptions options) {
  auto st = std::make_unique<State>();
  st->options = options;
  auto cfg = std::make_shared<const policy::Config>(std::move(config));
  if (auto s = make_data_dir(cfg->storage.data_dir); !s) return s.error();
  if (auto s = st->open_storage(*cfg); !s) return s.error();
  if (auto s = st->recover(); !s) return s.error();

  pipeline::FailedAuthOptions failed_auth;
  failed_auth.interval = options.failed_auth_interval;
  st->failed_auth = std::make_unique<pipeline::FailedAuthLog>(*st->audit, failed_auth);
  st->observer = std::make_unique<MetricsObserver>(st->metrics);
  auto& deps = st->pipeline_deps;
  deps.audit = st->audit.get();
  deps.token_signer = &*st->token_signer;
  deps.token_revoked = [revoked = st->revoked_tokens.get()](std::string_view jti) { return revoked->is_revoked(jti); };
  deps.failed_auth = st->failed_auth.get();
  st->forbidden = std::make_shared<std::vector<egress::Endpoint>>();
  BackendServices backend_services;
  backend_services.registry = &st->registry;
  backend_services.forbidden = st->forbidden;
  backend_services.data_dir = cfg->storage.data_dir;
  backend_services.runner_dir = deps.runner_dir;
  auto backends = TierBackends::create(*cfg, backend_services);
  if (!backends) return backends.error();
  st->backends = std::move(*backends);
  for (const auto& line : st->backends->describe()) std::cerr << "airlock: tier " << line << "\n";
  deps.backend = &st->backends->local();
  deps.tier_backends = st->backends->tiers();
  deps.tier_unavailable = st->backends->unavailable();
  deps.observer = st->observer.get();
  InvocationStore* store = st->store.get();
  deps.record_start = [store](const pipeline::Invocation& inv) {
    InvocationStore::Owner owner{inv.principal_name(), inv.subject ? inv.subject->issuer : "",
                                 inv.subject ? inv.subject->sub : ""};
    return store->begin(inv.id, inv.tool_name, owner);
  };
  deps.leases = st->leases.get();
  if (auto s = st->open_quotas(*cfg); !s) return s.error();
  deps.fair_queue = true;
  deps.hold_for_approval = [approvals = st->approvals.get()](const pipeline::Invocation& inv,
                                                             const pipeline::ApprovalRequest& request) {
    return approvals->hold(inv, request);
  };
  deps.make_providers = [state = st.get()](const policy::Config& c) {
    creds::ProviderServices services;
    services.signer = &*state->token_signer;
    services.revoked = state->revoked_tokens.get();
    services.secrets = [state](const std::string& name) { return state->secret(name); };
    services.token_issuer = pipeline::kAirlockTokenIssuer;
    return creds::make_providers(c, services);
  };
  // On PostgreSQL every outstanding lease may be a live replica's: a dead one's are revoked
  // by failover, invocation by invocation.
  if (!st->pg_store) st->revoke_leftover_leases(*cfg);
  if (auto s = st->join_replicas(*cfg); !s) return s.error();
  if (auto s = st->make_gateway(cfg); !s) return s.error();

  st->describe_metrics();
  st->make_api(*cfg);
  return std::unique_ptr<Daemon>(new Daemon(std::move(st)));
}

// Bind, fill the list of the daemon's own endpoints that every execute copies, then serve: no
// request can reach a worker before the list is complete.
Status Daemon::start() {
  if (auto s = state_->http->bind(); !s) return s;
  // Tools may never reach the daemon's own API through the egress proxy.
  const auto& host = state_->config().server.listen_host;
  const std::uint16_t port = state_->http->port();
  for (const char* loopback : {"127.0.0.1", "::1"})
    if (host == "0.0.0.0" || host == "::" || host == loopback)
      state_->forbidden->push_back({*egress::parse_ip_strict(loopback), port});
  if (auto ip = egress::parse_ip_strict(host)) state_->forbidden->push_back({*ip, port});
  start_services();
  state_->http->serve();
  return {};
}

void Daemon::start_services() {
  for (const auto& endpoint : storage_database_endpoints(state_->config().storage))
    state_->forbidden->push_back(endpoint);
  state_->failed_auth->start();
  state_->sweeper->start();
  state_->webhooks->start();  // what a predecessor left pending goes out now
  if (state_->replicas) state_->replicas->start();
  std::vector<std::string> servers;
  for (const auto& s : state_->config().mcp_servers) servers.push_back(s.name);
  state_->first_listings.expect(servers);
  state_->discover_mcp_tools(state_->config());
}

bool Daemon::wait_for_first_listings(std::chrono::milliseconds timeout) const {
  return state_->first_listings.wait(timeout);
}
std::uint16_t Daemon::port() const { return state_->http->port(); }
const Api& Daemon::api() const { return *state_->api; }
const Daemon::Recovery& Daemon::recovery() const { return state_->recovery; }

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

void Daemon::shutdown() {
  auto& s = *state_;
  if (s.shut_down) return;
  s.shut_down = true;
  s.draining = true;
  s.http->stop_accepting();
  s.sweeper->stop();  // no approved call starts now (it resumes after a restart)
  if (!s.executor->drain(s.config().server.drain_timeout)) {
    s.registry.kill_all();  // what is still running ends now (and is recorded)
    s.backends->shutdown();
    s.executor->drain(std::chrono::seconds(30));
  }
  s.gateway->shutdown();  // every server sandbox ends; a listing under way fails
  if (s.discovery.joinable()) s.discovery.join();
  s.http->stop();
  s.executor.reset();
  s.webhooks->stop();      // after the attempt under way; the pending rest goes at the next start
  s.failed_auth->stop();   // what is pending is written
  // Nothing of this replica runs now: every hold is released (a release the database did not
  // take is removed by another replica's failover round once this row is gone) and its row goes.
  if (s.pg_quotas)
    if (auto flushed = s.pg_quotas->flush_pending(); !flushed)
      std::cerr << "airlock: " << flushed.error().message << "\n";
  if (s.replicas) s.replicas->stop();
  (void)s.audit->close();  // commits and signs a final checkpoint
}

Status check_config(const policy::Config& config) {
  if (config.server.tls)
    if (auto s = check_tls(*config.server.tls); !s) return s;
  pipeline::PipelineDeps services;  // no audit log, no sandboxes: nothing is opened or created
  auto generation = build_generation(std::make_shared<const policy::Config>(config), services);
  if (!generation) return generation.error();
  return {};
}

std::string cleartext_warning(const policy::ServerConfig& server, std::uint16_t port) {
  if (server.tls) return "";
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(server.listen_host, ec);
  if (ec) return "";  // not listening at all (bind refuses it)
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  if (address.is_loopback()) return "";  // 127.0.0.0/8, ::1
  const std::string host = address.is_v6() ? "[" + server.listen_host + "]" : server.listen_host;
  return "airlock: warning: listening on " + host + ":" + std::to_string(port) +
         " without TLS: API keys and tool data cross the network in clear; set server.tls";
}

namespace {

// --listen HOST:PORT over server.listen.
Status apply_listen_override(policy::Config& config, const std::string& listen) {
  if (listen.empty()) return {};
  auto parsed = policy::parse_listen(listen);
  if (!parsed) return Error::make("usage", "--listen: " + parsed.error().message);
  config.server.listen_host = parsed->host;
  config.server.listen_port = parsed->port;
  return {};
}

Result<policy::Config> load(const std::string& config_path, const std::string& listen_override) {
  auto config = policy::load_config(config_path);
  if (!config) return config.error();
  if (auto s = apply_listen_override(*config, listen_override); !s) return s.error();
  return config;
}

void reload_from(Daemon& daemon, const std::string& config_path,
                 const std::string& listen_override) {
  std::cerr << "airlock serve: SIGHUP: reloading " << config_path << "\n";
  auto report = daemon.reload(load(config_path, listen_override));
  if (!report) {
    std::cerr << "airlock serve: reload failed: " << report.error().message << "\n";
    return;
  }
  std::cerr << "airlock serve: reloaded: " << report->tools
            << " tool(s); added: " << joined(report->added)
            << "; removed: " << joined(report->removed) << "\n";
}

int check_only_run(const std::string& config_path, const std::string& listen_override) {
  auto config = load(config_path, listen_override);
  if (!config) {
    std::cerr << "airlock serve --check: " << config.error().message << "\n";
    return 1;
  }
  if (auto s = check_config(*config); !s) {
    std::cerr << "airlock serve --check: " << s.error().message << "\n";
    return 1;
  }
  std::cerr << "airlock serve --check: " << config_path << " is valid (" << config->tools.size()
            << " tool(s))\n";
  return 0;
}

}  // namespace

int serve(const std::string& config_path, const std::string& listen_override, bool check_only) {
  if (check_only) return check_only_run(config_path, listen_override);
  // SIGTERM, SIGINT and SIGHUP are taken by sigwait below, in this thread only.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto config = load(config_path, listen_override);
  if (!config) {
    std::cerr << "airlock serve: " << config.error().message << "\n";
    return 2;
  }
  const policy::ServerConfig server_config = config->server;
  auto daemon = Daemon::create(std::move(*config));
  if (!daemon) {
    std::cerr << "airlock serve: " << daemon.error().message << "\n";
    return 1;
  }
  const auto& rec = (*daemon)->recovery();
  if (rec.stale_cgroups || rec.aborted_invocations || rec.revoked_leases)
    std::cerr << "airlock serve: recovered: removed " << rec.stale_cgroups << " stale cgroup(s), recorded "
              << rec.aborted_invocations << " aborted invocation(s), revoked " << rec.revoked_leases
              << " credential lease(s)\n";
  for (const auto& e : rec.lease_errors)
    std::cerr << "airlock serve: warning: a leftover credential could not be revoked (it expires on its own): " << e << "\n";
  if (auto s = (*daemon)->start(); !s) {
    std::cerr << "airlock serve: " << s.error().message << "\n";
    return 1;
  }
  if (auto warning = cleartext_warning(server_config, (*daemon)->port()); !warning.empty())
    std::cerr << warning << "\n";
  std::cerr << "airlock serve: listening on port " << (*daemon)->port()
            << (server_config.tls ? " (TLS)" : "") << "\n"
            << std::flush;
  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP)
    reload_from(**daemon, config_path, listen_override);
  std::cerr << "airlock serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": draining, then stopping\n";
  (*daemon)->shutdown();
  std::cerr << "airlock serve: stopped\n";
  return 0;
}

}  // namespace airlock::server
