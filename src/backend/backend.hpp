// Backends: where one tool call runs. A RunRequest says what to run in portable terms (no host
// file descriptors, mounts by meaning, egress in egress's vocabulary), so the local sandbox,
// a Kubernetes pod or a gVisor sandbox can each implement Backend (docs/backends.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/cancel_signal.hpp"
#include "common/result.hpp"
#include "egress/rules.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

// A host directory the run sees, named by what it is for: a Kubernetes backend turns each
// kind into a volume of its own (a ConfigMap for the runner, an image layer for tool code...).
struct Mount {
  enum class Kind { tool_code, runner, data } kind = Kind::data;
  std::string host_path;    // absolute, on the host that serves the request
  std::string path_inside;  // absolute, inside the run
  bool read_only = true;
};

std::string_view mount_kind_name(Mount::Kind kind);

// A secret the run gets as an environment variable. Never logged or recorded.
struct Credential {
  std::string env_name;
  std::string value;
};

// Where a run may be placed, for a backend that chooses among nodes (Kubernetes): the
// image it runs in, the node architecture, GPUs and tolerations. The local backends ignore it.
struct Placement {
  struct Toleration {
    std::string key, op = "Equal", value, effect;
  };
  std::string image;  // "": the backend's default image
  std::string arch;   // "", amd64, arm64
  unsigned gpus = 0;
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
};

// A call of a tool with tools[].warm: where the local backend has its template ready, the
// call forks from it (docs/warm-start.md); otherwise it runs cold, as any other.
struct WarmStart {
  std::string key;                         // the tool; the template's Spec completes it
  std::vector<std::string> template_argv;  // the template program (the runner's template mode)
  std::uint32_t recycle_calls = 1000;
  std::chrono::milliseconds recycle_after{10 * 60 * 1000};
};

struct RunRequest {
  std::vector<std::string> argv;           // argv[0] without '/' is looked up in PATH inside
  std::map<std::string, std::string> env;  // added to PATH, HOME, LANG
  std::vector<Credential> credentials;     // added to env (over it) by the backend
  sandbox::Limits limits;                  // limits.output_bytes: the output cap, per stream
  std::vector<Mount> mounts;
  egress::EgressRules egress;
  std::string stdin_bytes;  // all of the program's stdin
  Placement placement;
  std::optional<WarmStart> warm;  // the local backend only; others run every call cold
};

// What a run did: the sandbox's Outcome, and every connection attempt its egress proxy saw.
// (The sandbox knows nothing of egress; the backend that ran the proxy adds its records.)
struct RunResult : sandbox::Outcome {
  std::vector<egress::EgressRecord> egress;
  bool warm = false;        // forked from a warm template
  std::string cold_reason;  // a call with RunRequest::warm that ran cold: why
  // A setup_error because the cluster's quota (a Kubernetes ResourceQuota) refused the run's
  // objects: the caller's quota_exceeded, not Airlock's failure.
  bool quota_exceeded = false;
};

// The Outcome's JSON with "egress": [records] added (`airlock run --json`).
nlohmann::json to_json(const RunResult& result);

// A run that failed before its program started: a setup_error saying `message`.
RunResult setup_failure(const std::string& message);

// Per-run wiring a backend may use; none of it is part of what runs.
struct RunContext {
  std::string rule_set = "the sandbox's egress rules";  // named in egress denial messages
  // Cancelled while the run is going: the backend stops it (the result is signaled, SIGKILL).
  CancelSignal* cancel = nullptr;
  // Names the run in what a backend leaves outside the process (pod labels, container ids).
  std::string invocation_id;
  std::string tool_name;
  // Sessions: the key of the ready sandboxes to take one from (SessionBackend::keep_ready);
  // empty: start a new one.
  std::string warm_key;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Runs the request to its end. The result collects stdout and stderr (up to the output cap;
  // a run that passes it is stopped) and says why the run failed when it did, setup included.
  virtual RunResult run(const RunRequest& request, const RunContext& context) = 0;
  virtual std::string_view name() const = 0;
  // True once the backend is shutting down: runs that end signaled now were stopped by it.
  virtual bool stopping() const { return false; }
  // The daemon is going down: stop every run in flight (they end signaled) and every run
  // started from now on. Runs must still clean up what they made.
  virtual void shutdown() {}
  // Another replica ran this invocation and died (docs/daemon.md, "Replicas and failover"):
  // remove what is left of it. Local sandboxes die with their daemon: nothing by default.
  virtual Status abandon(const std::string& /*invocation_id*/) { return {}; }
};

}  // namespace airlock::backend
