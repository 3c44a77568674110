// A long-lived local sandbox whose stdin and stdout are the caller's (a third-party MCP
// server, src/mcp/gateway.hpp): the sandbox of run_local() (every layer, the egress proxy when
// the rules have egress) on a supervisor thread of its own, which launches it, hands the pipes
// over, waits for its end and records the Outcome. Its stderr is read as it comes into a
// bounded ring. kill() from any thread; the destructor kills and joins. The MCP gateway holds
// it as a backend::StdioSandbox, as it holds a gVisor one (backend/gvisor_stdio_session.hpp).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "backend/local.hpp"
#include "backend/stdio_sandbox.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

// A session's wall time: 20 days. A session lives until its owner stops it (idle timeout).
// Below 2^31 ms: the sandbox's setup wait polls with the deadline as an int of milliseconds.
inline constexpr std::chrono::milliseconds kSessionWallTime{20LL * 24 * 3600 * 1000};

struct LocalSessionOptions {
  std::string rule_set = "the sandbox's egress rules";  // named in denial messages
  std::vector<egress::Endpoint> forbidden;  // never reachable (the daemon's own endpoints)
  RunningSandboxes* registry = nullptr;
  std::size_t stderr_ring_bytes = 64 * 1024;  // the last this many bytes of stderr are kept
  // Called once on the supervisor thread when the sandbox has ended (not when it failed to
  // start). It must not destroy the session (that joins this thread).
  std::function<void()> on_end;
};

class LocalSession final : public StdioSandbox {
 public:
  // Launches `spec` with caller-owned stdio (its output mode and stdin source are set here)
  // and a wall time of kSessionWallTime; returns once the program has been exec'd, or the
  // setup's error (code "setup_error", the message names the step).
  static Result<std::unique_ptr<LocalSession>> start(sandbox::Spec spec,
                                                     const egress::EgressRules& rules,
                                                     LocalSessionOptions options);
  ~LocalSession() override;
  LocalSession(const LocalSession&) = delete;
  LocalSession& operator=(const LocalSession&) = delete;

  // The write end of the program's stdin and the read end of its stdout (once each).
  UniqueFd take_stdin() override;
  UniqueFd take_stdout() override;
  pid_t pid() const override;  // the sandbox's init, as the host sees it
  // The CPU its processes have used so far (Sandbox::cpu_used); null once it has ended.
  std::optional<sandbox::CpuTime> cpu_used() const override;

  void kill() override;       // from any thread; the outcome says signaled (SIGKILL)
  bool ended() const override;
  // Waits up to `timeout` for the end; the outcome (with egress records) once ended.
  std::optional<RunResult> wait_for_end(std::chrono::milliseconds timeout) const override;

  // Bytes written to stderr so far, and what of them is still in the ring after `mark` (a
  // value stderr_mark() returned): what the program wrote meanwhile, capped at `max_bytes`.
  std::uint64_t stderr_mark() const override;
  std::string stderr_since(std::uint64_t mark, std::size_t max_bytes) const override;

  struct State;

 private:
  explicit LocalSession(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace airlock::backend
