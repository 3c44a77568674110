#include "server/daemon.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>

#include "audit/audit_log.hpp"
#include "audit/invocation_record.hpp"
#include "egress/policy.hpp"
#include "pipeline/stages/access.hpp"
#include "pipeline/stages/audit_record.hpp"
#include "pipeline/stages/check_input.hpp"
#include "pipeline/stages/content.hpp"
#include "pipeline/stages/execute.hpp"
#include "sandbox/cgroup.hpp"
#include "server/http_server.hpp"

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

}  // namespace

struct Daemon::State {
  policy::Config config;
  DaemonOptions options;
  std::unique_ptr<audit::AuditLog> audit;
  std::unique_ptr<InvocationStore> store;
  backend::RunningSandboxes registry;
  std::unique_ptr<backend::LocalBackend> local_backend;  // outlives the pipeline that uses it
  Metrics metrics;
  std::unique_ptr<MetricsObserver> observer;
  pipeline::Pipeline pipeline;
  std::unique_ptr<InvocationExecutor> executor;
  std::atomic<bool> draining{false};
  std::unique_ptr<Api> api;
  std::unique_ptr<HttpServer> http;
  std::shared_ptr<std::vector<egress::Endpoint>> forbidden;  // our API: never an egress target
  Recovery recovery;
  bool shut_down = false;
};

Daemon::Daemon(std::unique_ptr<State> state) : state_(std::move(state)) {}
Daemon::~Daemon() { shutdown(); }

Result<std::unique_ptr<Daemon>> Daemon::create(policy::Config config, DaemonOptions options) {
  auto st = std::make_unique<State>();
  st->config = std::move(config);
  st->options = options;
  const auto& cfg = st->config;

  // Storage: <dataDir>/audit.db (+ .key), state.db, runtime/airlock_runner.py.
  std::error_code ec;
  fs::create_directories(cfg.storage.data_dir, ec);
  if (ec) return Error::make("storage", "cannot create " + cfg.storage.data_dir + ": " + ec.message());
  ::chmod(cfg.storage.data_dir.c_str(), 0700);
  const std::string runtime = cfg.storage.data_dir + "/runtime";
  if (auto s = pipeline::install_runner(runtime); !s) return s.error();
  audit::AuditLogOptions audit_options;
  audit_options.checkpoint_every_records = cfg.storage.checkpoint_every;
  audit_options.checkpoint_interval = cfg.storage.checkpoint_interval;
  auto log = audit::AuditLog::open(cfg.storage.data_dir + "/audit.db", audit_options);
  if (!log) return log.error();
  st->audit = std::move(*log);
  auto store = InvocationStore::open(cfg.storage.data_dir + "/state.db");
  if (!store) return store.error();
  st->store = std::move(*store);

  // Recovery: sandboxes of a killed predecessor died with it (PDEATHSIG, pid namespaces);
  // their cgroups and its unfinished invocations are what is left.
  st->recovery.stale_cgroups = sandbox::remove_stale_cgroups();
  for (const auto& r : st->store->running()) {
    if (auto s = pipeline::record_aborted(*st->audit, r.id, r.tool); !s) return s.error();
    (void)st->store->finish(r.id, "error",
                            {{"id", r.id}, {"tool", r.tool}, {"status", "error"}, {"principal", ""},
                             {"error", {{"kind", "aborted"}, {"message", "the daemon stopped while it ran"}}}});
    ++st->recovery.aborted_invocations;
  }

  // The pipeline.
  st->observer = std::make_unique<MetricsObserver>(st->metrics);
  st->pipeline.set_observer(st->observer.get());
  st->pipeline.add(std::make_unique<pipeline::AuthenticateStage>(cfg));
  st->pipeline.add(std::make_unique<pipeline::AuthorizeStage>(cfg));
  auto check = pipeline::CheckInputStage::create(cfg);
  if (!check) return check.error();
  st->pipeline.add(std::move(*check));
  auto validate_code = pipeline::ValidateCodeStage::create(cfg);
  if (!validate_code) return validate_code.error();
  st->pipeline.add(std::move(*validate_code));
  auto scanner = pipeline::make_scanner(cfg);
  if (!scanner) return scanner.error();
  st->pipeline.add(std::make_unique<pipeline::ScanStage>(*scanner, pipeline::ScanStage::Direction::input));
  st->pipeline.add(std::make_unique<pipeline::TierStage>(cfg));
  st->forbidden = std::make_shared<std::vector<egress::Endpoint>>();
  st->local_backend = std::make_unique<backend::LocalBackend>(&st->registry, st->forbidden);
  pipeline::ExecuteOptions exec_options;
  exec_options.runner_dir = runtime;
  exec_options.backends = pipeline::runnable_tiers_on(*st->local_backend);
  auto execute = pipeline::ExecuteStage::create(cfg, exec_options);
  if (!execute) return execute.error();
  st->pipeline.add(std::move(*execute));
  st->pipeline.add(std::make_unique<pipeline::ScanStage>(*scanner, pipeline::ScanStage::Direction::output));
  st->pipeline.set_final(std::make_unique<pipeline::AuditStage>(*st->audit));

  // Metrics.
  auto* raw = st.get();
  st->metrics.describe_counter("airlock_invocations_total", "Invocations by tool and status.");
  st->metrics.describe_counter("airlock_denials_total", "Denied invocations by reason.");
  st->metrics.describe_counter("airlock_redactions_total", "Values redacted by DLP.");
  st->metrics.describe_counter("airlock_rejected_total", "Requests refused before they became invocations.");
  st->metrics.describe_histogram("airlock_stage_seconds", "Time spent in each pipeline stage.", kLatencyBuckets);
  st->metrics.describe_histogram("airlock_invocation_seconds", "End-to-end invocation time by tool.", kLatencyBuckets);
  st->metrics.describe_gauge("airlock_sandboxes_running", "Sandboxes running now.",
                             [raw] { return static_cast<double>(raw->registry.count()); });
  st->metrics.describe_gauge("airlock_queue_depth", "Invocations waiting for a worker.",
                             [raw] { return raw->executor ? static_cast<double>(raw->executor->queued()) : 0.0; });

  st->executor = std::make_unique<InvocationExecutor>(cfg.server.max_concurrent_invocations, cfg.server.queue_length);
  ApiServices services;
  services.config = &st->config;
  services.pipeline = &st->pipeline;
  services.executor = st->executor.get();
  services.store = st->store.get();
  services.audit = st->audit.get();
  services.metrics = &st->metrics;
  services.draining = &st->draining;
  services.new_id = [] { return audit::new_invocation_id(); };
  st->api = std::make_unique<Api>(services);
  HttpServerOptions http;
  http.host = cfg.server.listen_host;
  http.port = cfg.server.listen_port;
  http.max_body_bytes = cfg.server.max_body_bytes;
  http.io_threads = options.io_threads;
  st->http = std::make_unique<HttpServer>(*st->api, http);
  return std::unique_ptr<Daemon>(new Daemon(std::move(st)));
}

Status Daemon::start() {
  if (auto s = state_->http->start(); !s) return s;
  // Tools may never reach the daemon's own API through the egress proxy.
  const auto& host = state_->config.server.listen_host;
  const std::uint16_t port = state_->http->port();
  for (const char* loopback : {"127.0.0.1", "::1"})
    if (host == "0.0.0.0" || host == "::" || host == loopback)
      state_->forbidden->push_back({*egress::parse_ip_strict(loopback), port});
  if (auto ip = egress::parse_ip_strict(host)) state_->forbidden->push_back({*ip, port});
  return {};
}
std::uint16_t Daemon::port() const { return state_->http->port(); }
const Api& Daemon::api() const { return *state_->api; }
const Daemon::Recovery& Daemon::recovery() const { return state_->recovery; }

void Daemon::shutdown() {
  auto& s = *state_;
  if (s.shut_down) return;
  s.shut_down = true;
  s.draining = true;
  s.http->stop_accepting();
  if (!s.executor->drain(s.config.server.drain_timeout)) {
    s.registry.kill_all();  // what is still running ends now (and is recorded)
    s.executor->drain(std::chrono::seconds(30));
  }
  s.http->stop();
  s.executor.reset();
  (void)s.audit->close();  // commits and signs a final checkpoint
}

int serve(const std::string& config_path, const std::string& listen_override) {
  // SIGTERM and SIGINT are taken by sigwait below, in this thread only.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto config = policy::load_config(config_path);
  if (!config) {
    std::cerr << "airlock serve: " << config.error().message << "\n";
    return 2;
  }
  if (!listen_override.empty()) {
    auto colon = listen_override.rfind(':');
    if (colon == std::string::npos) {
      std::cerr << "airlock serve: --listen: expected HOST:PORT\n";
      return 2;
    }
    config->server.listen_host = listen_override.substr(0, colon);
    config->server.listen_port = static_cast<std::uint16_t>(std::stoul(listen_override.substr(colon + 1)));
  }
  auto daemon = Daemon::create(std::move(*config));
  if (!daemon) {
    std::cerr << "airlock serve: " << daemon.error().message << "\n";
    return 1;
  }
  const auto& rec = (*daemon)->recovery();
  if (rec.stale_cgroups || rec.aborted_invocations)
    std::cerr << "airlock serve: recovered: removed " << rec.stale_cgroups << " stale cgroup(s), recorded "
              << rec.aborted_invocations << " aborted invocation(s)\n";
  if (auto s = (*daemon)->start(); !s) {
    std::cerr << "airlock serve: " << s.error().message << "\n";
    return 1;
  }
  std::cerr << "airlock serve: listening on port " << (*daemon)->port() << "\n" << std::flush;
  int sig = 0;
  sigwait(&stop, &sig);
  std::cerr << "airlock serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": draining, then stopping\n";
  (*daemon)->shutdown();
  std::cerr << "airlock serve: stopped\n";
  return 0;
}

}  // namespace airlock::server
