// A long-lived gVisor sandbox whose stdin and stdout are the caller's: a third-party MCP
// server whose risk's tier runs on the gvisor backend (docs/mcp-gateway.md, "Servers on
// gVisor"). The contract of LocalSession (backend/local_session.hpp) on the HIGH tier's
// isolation: one runsc sandbox made as a gVisor tool call's (backend/gvisor_run.hpp: the OCI
// bundle's read-only view with the server's binds, the tier's limits in a cgroup of its own,
// egress only through the proxy's listeners in a network namespace of its own made before
// runsc starts, credentials only in the environment of the 0600 config.json), with its
// standard streams as pipes: stdin and stdout the caller's, stderr read into a bounded ring.
// When it ends, whatever ended it, everything it was made of is removed (the container, its
// directory under the state directory, the cgroup, the proxy) before wait_for_end() returns
// its outcome; what a killed daemon left is removed by the next one (remove_stale_runs).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/runsc_command.hpp"
#include "backend/stdio_sandbox.hpp"
#include "common/result.hpp"
#include "egress/policy.hpp"
#include "egress/rules.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

// Where a tier's gVisor sandboxes run: the gvisor backend's runsc and state directory.
struct GvisorPlace {
  RunscInvocation runsc;
  std::string state_dir;  // <dataDir>/gvisor
};

struct GvisorStdioOptions {
  GvisorPlace place;
  std::string rule_set = "the sandbox's egress rules";  // named in denial messages
  std::vector<egress::Endpoint> forbidden;  // never reachable (the daemon's own endpoints)
  std::size_t stderr_ring_bytes = 64 * 1024;  // the last this many bytes of stderr are kept
  // Called once on the supervisor thread when the sandbox has ended and has been removed
  // (not when it failed to start). It must not destroy the session (that joins this thread).
  std::function<void()> on_end;
};

class GvisorStdioSession final : public StdioSandbox {
 public:
  // Launches `spec` in runsc with caller-owned stdio and a wall time of kSessionWallTime;
  // returns once runsc has been exec'd, or the setup's error (code "setup_error", the
  // message names the step). Nothing of a failed start is left.
  static Result<std::unique_ptr<GvisorStdioSession>> start(sandbox::Spec spec,
                                                           const egress::EgressRules& rules,
                                                           GvisorStdioOptions options);
  ~GvisorStdioSession() override;  // kills, joins, and so removes everything
  GvisorStdioSession(const GvisorStdioSession&) = delete;
  GvisorStdioSession& operator=(const GvisorStdioSession&) = delete;

  UniqueFd take_stdin() override;
  UniqueFd take_stdout() override;
  pid_t pid() const override;  // runsc's (the program's own pid is the Sentry's)
  std::optional<sandbox::CpuTime> cpu_used() const override;
  void kill() override;
  bool ended() const override;
  std::optional<RunResult> wait_for_end(std::chrono::milliseconds timeout) const override;
  std::uint64_t stderr_mark() const override;
  std::string stderr_since(std::uint64_t mark, std::size_t max_bytes) const override;

  // Its directory and container id under the state directory: "airlock-gv-<pid>-m<n>".
  const std::string& id() const;

  struct State;

 private:
  explicit GvisorStdioSession(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace airlock::backend
