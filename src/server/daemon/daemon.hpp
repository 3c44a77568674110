// The daemon: configuration, storage (audit log and state), the pipeline, the HTTP API, and
// an orderly life: lock the data directory, recover what a killed predecessor left, serve,
// reload the config on SIGHUP, drain on SIGTERM.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "backend/local.hpp"
#include "common/result.hpp"
#include "policy/config.hpp"
#include "server/api/api.hpp"

namespace airlock::server {

struct DaemonOptions {
  unsigned io_threads = 2;
  // Failed authentications: at most one audit record per source address per interval.
  std::chrono::milliseconds failed_auth_interval{60'000};
};

// What a reload changed.
struct ReloadReport {
  std::vector<std::string> added, removed;  // tool names
  std::size_t tools = 0;                    // tools in the new config
};

class Daemon {
 public:
  // Opens storage, recovers from a previous instance, builds the pipeline. Does not listen yet.
  static Result<std::unique_ptr<Daemon>> create(policy::Config config, DaemonOptions options = {});
  ~Daemon();

  Status start();                 // listens on server.listen, with the services below
  // What runs beside a transport, the same for HTTP (start) and `airlock mcp` over stdio: the
  // failed-auth log, the approval sweeper, webhooks, replicas, and the MCP servers' first
  // listing (FirstListings: /healthz says "starting" until it is done).
  void start_services();
  std::uint16_t port() const;     // the bound port (server.listen may say 0)
  const Api& api() const;
  // Builds a complete pipeline from `config` (as loaded, or why it could not be) and
  // publishes it for new invocations; running ones finish under the config they started
  // with. Refused (the old config stays) when `config` is an error, is invalid or changes
  // what only a restart can (the server and storage blocks). Counted in the metrics.
  Result<ReloadReport> reload(Result<policy::Config> config);
  // Stops accepting, lets running invocations finish until server.drainTimeout, stops the
  // rest, writes a final checkpoint. Idempotent.
  void shutdown();

  // What the recovery at start found: cgroups removed, invocations recorded as aborted.
  struct Recovery {
    int stale_cgroups = 0;
    int aborted_invocations = 0;
    int aborted_sessions = 0;              // sessions it held (docs/sessions.md)
    int revoked_leases = 0;               // credentials of those invocations
    std::vector<std::string> lease_errors;  // leases that could not be revoked, and why
  };
  const Recovery& recovery() const;

  struct State;

 private:
  explicit Daemon(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Everything the daemon validates at start that has no side effects: the config, and every
// stage built from it (schemas, the DLP policy, the code validator's policies).
Status check_config(const policy::Config& config);

// The line `airlock serve` prints on stderr at start when the API is reachable from other
// machines in clear: server.listen not loopback (127.0.0.0/8, ::1) and no server.tls. ""
// otherwise. `port`: the bound one.
std::string cleartext_warning(const policy::ServerConfig& server, std::uint16_t port);

// What `airlock serve`'s options put over the config: --listen over server.listen,
// --advertise-url over server.advertiseUrl (a pod's own address, from the environment).
struct ServeOverrides {
  std::string listen;
  std::string advertise_url;
};

// `airlock serve`: creates, starts, reloads on SIGHUP, waits for SIGTERM or SIGINT, shuts
// down. With `check_only`, validates the config (check_config) and exits: 0 valid, 1 not.
// With storage.postgres, a config whose replicas could not reach this one (a wildcard listen
// address and no advertise URL) is refused as the config is loaded. Returns the process exit
// status.
int serve(const std::string& config_path, const ServeOverrides& overrides, bool check_only = false);

// `airlock mcp --config FILE`: the daemon built from the config, not listening, serving MCP on
// stdin and stdout (server/mcp_server/mcp_stdio.hpp). Returns the exit status: 0 at the end of
// stdin, 2 for a bad config.
int serve_mcp_stdio(const std::string& config_path, const std::string& api_key, const std::string& subject_token);

}  // namespace airlock::server
