// A long-lived program whose stdin and stdout are the caller's, run as the one exec of a
// session of its own (backend/session_backend.hpp) that lives exactly as long as it: how a
// third-party MCP server runs where its risk's tier runs sessions of another backend than the
// local sandbox or gVisor (Kubernetes: a pod per server instance, its exec through pods/exec;
// docs/mcp-gateway.md, "Servers on Kubernetes"). The session has every layer the backend gives
// a session (the pod's hardening, its NetworkPolicy, its Secret, the egress gateway's
// admission); the program's stderr is read into a bounded ring. When the program ends, or is
// killed, the session ends, and wait_for_end() returns only once it has.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "backend/session_backend.hpp"
#include "backend/stdio_sandbox.hpp"
#include "common/result.hpp"

namespace airlock::backend {

struct SessionStdioOptions {
  std::size_t stderr_ring_bytes = 64 * 1024;  // the last this many bytes of stderr are kept
  // Called once on the supervisor thread when the session has ended (not when it failed to
  // start). It must not destroy the sandbox (that joins this thread).
  std::function<void()> on_end;
};

class SessionStdioSandbox final : public StdioSandbox {
 public:
  // Starts a session of `request` (its limits.wall_time the session's whole life; its argv is
  // not used) on `backend`, then `program` in it with its stdio on pipes. Errors: the
  // backend's start_session error, or "setup_error" naming the exec that could not start (the
  // session is ended then: nothing is left).
  static Result<std::unique_ptr<SessionStdioSandbox>> start(SessionBackend& backend, const RunRequest& request,
                                                            const RunContext& context,
                                                            const sandbox::SessionExec& program,
                                                            SessionStdioOptions options);
  ~SessionStdioSandbox() override;  // kills, and joins once the session has ended
  SessionStdioSandbox(const SessionStdioSandbox&) = delete;
  SessionStdioSandbox& operator=(const SessionStdioSandbox&) = delete;

  UniqueFd take_stdin() override;
  UniqueFd take_stdout() override;
  pid_t pid() const override { return 0; }  // no process of the host's: it runs in the session
  std::optional<sandbox::CpuTime> cpu_used() const override;
  std::optional<sandbox::CpuTime> read_cpu_now() override;
  void kill() override;
  bool ended() const override;
  std::optional<RunResult> wait_for_end(std::chrono::milliseconds timeout) const override;
  std::uint64_t stderr_mark() const override;
  std::string stderr_since(std::uint64_t mark, std::size_t max_bytes) const override;

  struct State;

 private:
  explicit SessionStdioSandbox(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// The outcome of a program that was a session's one exec: its exit (code 0: ok), the signal
// that ended it, or, when it has no end of its own (the session ended under it), the
// session's. `killed`: ended by kill() (signaled, SIGKILL, whatever the backend saw).
RunResult exec_outcome(const std::optional<sandbox::ExecEnd>& end, RunResult session, bool killed);

}  // namespace airlock::backend
