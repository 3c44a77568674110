// The daemon's services, built once at start: the pipeline's, the tier backends, the MCP
// gateway, the metrics and the API with its HTTP server.
#include "server/daemon/daemon_state.hpp"

#include <netdb.h>

#include <iostream>

#include "audit/invocation_record.hpp"
#include "backend/gvisor_backend.hpp"
#include "creds/providers/providers.hpp"
#include "pipeline/stages/execute.hpp"
#include "pipeline/storage_locations.hpp"
#include "server/sessions/session_files.hpp"
#include "storage/postgres.hpp"

namespace airlock::server {
namespace {

const std::vector<double> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25,  0.5,    1,     2.5,  5,    10,  30};

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

// Where each tier's MCP servers run (docs/mcp-gateway.md, "Servers on gVisor" and "Servers on
// Kubernetes"): a tier on the gvisor backend runs them in gVisor with that backend's runsc
// and state directory; a tier on the local sandbox, locally; a tier on another backend that
// runs sessions (Kubernetes), each instance in a session of its own there; a tier with no
// backend here, not at all.
void place_mcp_servers(const TierBackends& backends, mcp::GatewayOptions& options) {
  for (auto risk : {policy::Risk::low, policy::Risk::medium, policy::Risk::high, policy::Risk::critical}) {
    const auto found = backends.tiers().find(risk);
    if (found == backends.tiers().end()) {
      if (auto why = backends.unavailable().find(risk); why != backends.unavailable().end())
        options.refused_tiers[risk] = why->second;
      continue;  // low and medium on the local sandbox are not in tiers()
    }
    if (auto* gvisor = dynamic_cast<backend::GvisorBackend*>(found->second))
      options.gvisor_tiers[risk] = backend::GvisorPlace{gvisor->invocation(), gvisor->state_dir()};
    else if (found->second->name() != "local") {
      if (auto sessions = backends.sessions(risk))
        options.session_tiers[risk] = *sessions;
      else
        options.refused_tiers[risk] = sessions.error().message;
    }
  }
}

}  // namespace

// The pipeline's services: the audit log, tokens, the failed-auth log, the invocation store,
// leases, approvals, the fair queue and the credential providers.
void Daemon::State::wire_pipeline() {
  pipeline::FailedAuthOptions failed_auth_options;
  failed_auth_options.interval = options.failed_auth_interval;
  failed_auth = std::make_unique<pipeline::FailedAuthLog>(*audit, failed_auth_options);
  observer = std::make_unique<MetricsObserver>(metrics);
  auto& deps = pipeline_deps;
  deps.audit = audit.get();
  deps.token_signer = &*token_signer;
  deps.token_revoked = [revoked = revoked_tokens.get()](std::string_view jti) { return revoked->is_revoked(jti); };
  deps.failed_auth = failed_auth.get();
  deps.observer = observer.get();
  deps.record_start = [store = store.get()](const pipeline::Invocation& inv) {
    InvocationStore::Owner owner{inv.principal_name(), inv.subject ? inv.subject->issuer : "",
                                 inv.subject ? inv.subject->sub : ""};
    return store->begin(inv.id, inv.tool_name, owner);
  };
  deps.leases = leases.get();
  deps.fair_queue = true;
  deps.hold_for_approval = [approvals = approvals.get()](const pipeline::Invocation& inv,
                                                             const pipeline::ApprovalRequest& request) {
    return approvals->hold(inv, request);
  };
  deps.make_providers = [state = this](const policy::Config& c) {
    creds::ProviderServices services;
    services.signer = &*state->token_signer;
    services.revoked = state->revoked_tokens.get();
    services.secrets = [state](const std::string& name) { return state->secret(name); };
    services.token_issuer = pipeline::kAirlockTokenIssuer;
    return creds::make_providers(c, services);
  };
}

// The tier backends (server/tiers/), and the list of what no tool may reach that they share.
Status Daemon::State::make_backends(const policy::Config& cfg) {
  forbidden = std::make_shared<std::vector<egress::Endpoint>>();
  BackendServices backend_services;
  backend_services.registry = &registry;
  backend_services.forbidden = forbidden;
  backend_services.data_dir = cfg.storage.data_dir;
  backend_services.runner_dir = pipeline_deps.runner_dir;
  auto made = TierBackends::create(cfg, backend_services);
  if (!made) return made.error();
  backends = std::move(*made);
  for (const auto& line : backends->describe()) std::cerr << "airlock: tier " << line << "\n";
  pipeline_deps.backend = &backends->local();
  pipeline_deps.tier_backends = backends->tiers();
  pipeline_deps.tier_unavailable = backends->unavailable();
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
        generation_watch.published();  // connected MCP clients hear tools/list_changed
        return {};
      },
      log);
  mcp::GatewayOptions gateway_options;
  gateway_options.registry = &registry;
  gateway_options.forbidden = forbidden;
  gateway_options.tiers = cfg->tiers;  // as at start: a reload does not resize running servers
  place_mcp_servers(*backends, gateway_options);
  gateway_options.listed = [this](const std::string& server, const std::vector<mcp::ListedTool>& tools) {
    gateway_tools->on_listing(server, tools);
  };
  gateway_options.admitted = [this](const std::string& server, const mcp::ListedTool& tool) {
    return gateway_tools->admitted(server, tool);
  };
  gateway = std::make_unique<mcp::Gateway>(std::move(gateway_options));
  gateway->configure(cfg->mcp_servers);
  gateway->set_max_instances(cfg->server.max_mcp_server_instances);
  pipeline_deps.mcp = gateway.get();
  return gateway_tools->set_config(std::move(cfg));
}

// Lists every server's tools, each on a thread of its own, off the serving threads: a server
// that is slow to start delays only its own tools.
void Daemon::State::discover_mcp_tools(const policy::Config& cfg) {
  for (auto& t : discovery)
    if (t.joinable()) t.join();
  discovery.clear();
  for (const auto& server : cfg.mcp_servers)
    discovery.emplace_back([this, name = server.name] {
      if (draining) return;
      if (auto listed = gateway->list_tools(name); !listed) {
        std::cerr << "airlock: mcp server " << name << ": " << listed.error().message << "\n";
        first_listings.failed(name, listed.error().message);
      } else {
        first_listings.listed(name);
      }
    });
}

// Tools may never reach the daemon's own API, nor its database, through the egress proxy.
void Daemon::State::forbid_own_endpoints(std::uint16_t port) {
  const auto& host = config().server.listen_host;
  for (const char* loopback : {"127.0.0.1", "::1"})
    if (host == "0.0.0.0" || host == "::" || host == loopback)
      forbidden->push_back({*egress::parse_ip_strict(loopback), port});
  if (auto ip = egress::parse_ip_strict(host)) forbidden->push_back({*ip, port});
}

void Daemon::State::forbid_storage_database() {
  for (const auto& endpoint : storage_database_endpoints(config().storage)) forbidden->push_back(endpoint);
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
  metrics.describe_counter("airlock_session_forwards_total",
                           "Requests for sessions other replicas hold, sent to them (kind: request, list).");
  metrics.describe_counter("airlock_failover_sessions_aborted_total",
                           "Sessions of dead replicas this replica recorded as ended, aborted (storage.postgres).");
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

// storage.postgres: requests for sessions the other replicas hold are forwarded to them, over
// TLS verified by server.tls.replicaCAFile and replicaServerName when server.tls is set.
Status Daemon::State::make_forwarder(const policy::Config& cfg) {
  if (!pg_sessions) return {};
  SessionForwarder::Options forwarding;
  if (cfg.server.tls) {
    forwarding.client.ca_file = cfg.server.tls->replica_ca_file;
    forwarding.client.server_name = cfg.server.tls->replica_server_name;
  }
  forwarding.client.send_timeout = cfg.server.read_timeout;  // what the receiving replica allows a piece
  forwarding.log = [](const std::string& line) { std::cerr << "airlock: sessions: " << line << "\n"; };
  forwarding.metrics = &metrics;
  auto made = SessionForwarder::create(*pg_sessions, std::move(forwarding));
  if (!made) return made.error();
  session_forwarder = std::move(*made);
  return {};
}

// The address the other replicas forward sessions' requests to, in this replica's row.
Status Daemon::State::advertise(std::uint16_t port) {
  if (!replicas) return {};
  auto url = policy::advertised_url(config().server, port);
  if (!url) return url.error();
  if (auto written = replicas->advertise(*url); !written) return written;
  std::cerr << "airlock: replica " << pg_store->replica() << " reachable at " << *url << "\n";
  return {};
}

// The URL a client on this host reaches this daemon at, in the data directory's lock file:
// `airlock mcp --config` bridges there instead of refusing the busy directory. A wildcard
// listen address is reached on loopback.
Status Daemon::State::announce_locally(std::uint16_t port) {
  if (!lock) return {};
  const policy::ServerConfig& server = config().server;
  std::string host = server.listen_host;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  const bool v6 = host.find(':') != std::string::npos;
  return lock->announce(std::string(server.tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
                        std::to_string(port));
}

void Daemon::State::make_api(const policy::Config& cfg) {
  executor = std::make_unique<InvocationExecutor>(cfg.server.max_concurrent_invocations,
                                                  cfg.server.queue_length);
  ApiServices services;
  services.generation = &generation;
  services.executor = executor.get();
  services.verified_callers = &verified_callers;
  services.first_listings = &first_listings;
  services.generation_watch = &generation_watch;
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
  services.changes = &changes;
  webhooks = std::make_unique<WebhookService>(*webhook_outbox, generation, audit.get(), &metrics);
  services.webhooks = webhooks.get();
  services.completed = [webhooks = webhooks.get(), approvals = approvals.get()](const pipeline::Invocation& inv,
                                                                                const nlohmann::json& stored) {
    webhooks->announce_completed(inv, stored, approvals);
  };
  services.failed_auth = failed_auth.get();
  services.quotas = pipeline_deps.quotas;
  SessionStore* held = pg_sessions ? static_cast<SessionStore*>(pg_sessions.get()) : session_store.get();
  SessionServiceDeps session_deps;
  session_deps.backend = &backends->sessions();
  session_deps.audit = audit.get();
  session_deps.store = held;
  session_deps.snapshots = snapshot_store.get();
  session_deps.new_id = services.new_id;
  session_deps.sweep_interval = std::chrono::milliseconds(1000);
  // Each template on its tier's session backend (local, gVisor; docs/sessions.md).
  session_deps.backend_for = [b = backends.get()](policy::Risk risk) { return b->sessions(risk); };
  sessions = std::make_unique<SessionService>(std::move(session_deps));
  services.sessions = sessions.get();
  services.session_forwarder = session_forwarder.get();
  services.gateway = gateway.get();
  services.mcp_session_book = mcp_session_book;
  services.console_sessions = console_sessions;
  services.console_logins = console_logins;
  approvals->set_services(services);
  // What expired while the daemon was down is denied before anything is served.
  approvals->expire_due();
  sweeper = std::make_unique<ApprovalSweeper>(*approvals, waiters);
  // Replicas: also the quota releases and charges the database missed (quota_book_pg.hpp).
  if (pipeline::state_location(cfg.storage).is_postgres())
    sweeper->also([this] {
      answer_polls_done_elsewhere();
      if (pg_quotas) (void)pg_quotas->flush_pending();
      if (pg_sessions) (void)pg_sessions->flush_pending();  // ended sessions' rows the database missed
    });
  api = std::make_unique<Api>(services);
  HttpServerOptions http_options;
  http_options.host = cfg.server.listen_host;
  http_options.port = cfg.server.listen_port;
  http_options.max_body_bytes = cfg.server.max_body_bytes;
  http_options.read_timeout = cfg.server.read_timeout;
  http_options.io_threads = options.io_threads;
  http_options.tls = cfg.server.tls;
  http_options.streams_body = is_file_upload;  // a session's files: streamed into it, never held whole
  http_options.rejected = [this](std::string_view reason) {
    metrics.count("airlock_rejected_total", {{"reason", std::string(reason)}});
  };
  http = std::make_unique<HttpServer>(api->handler(), http_options);
}

}  // namespace airlock::server
