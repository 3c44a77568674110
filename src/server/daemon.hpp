// The daemon: configuration, storage (audit log and state), the pipeline, the HTTP API, and
// an orderly life: recover what a killed predecessor left, serve, drain on SIGTERM.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "backend/local.hpp"
#include "common/result.hpp"
#include "policy/config.hpp"
#include "server/api.hpp"

namespace airlock::server {

struct DaemonOptions {
  unsigned io_threads = 2;
  bool log_invocations = true;  // one line per invocation on stderr (never keys or arguments)
};

class Daemon {
 public:
  // Opens storage, recovers from a previous instance, builds the pipeline. Does not listen yet.
  static Result<std::unique_ptr<Daemon>> create(policy::Config config, DaemonOptions options = {});
  ~Daemon();

  Status start();                 // listens on server.listen
  std::uint16_t port() const;     // the bound port (server.listen may say 0)
  const Api& api() const;
  // Stops accepting, lets running invocations finish until server.drainTimeout, stops the
  // rest, writes a final checkpoint. Idempotent.
  void shutdown();

  // What the recovery at start found: cgroups removed, invocations recorded as aborted.
  struct Recovery {
    int stale_cgroups = 0;
    int aborted_invocations = 0;
  };
  const Recovery& recovery() const;

  struct State;

 private:
  explicit Daemon(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// `airlock serve`: creates, starts, waits for SIGTERM or SIGINT, shuts down. Returns the
// process exit status.
int serve(const std::string& config_path, const std::string& listen_override);

}  // namespace airlock::server
