// A long-lived sandbox whose stdin and stdout are the caller's, whatever runs it: the local
// sandbox (backend/local_session.hpp) or gVisor (backend/gvisor_stdio_session.hpp). The MCP
// gateway (src/mcp/server_instance.hpp) holds its servers' sandboxes through it, so that how
// a server is isolated is decided once, where its risk's tier is known.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "backend/backend.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::backend {

class StdioSandbox {
 public:
  virtual ~StdioSandbox() = default;

  // The write end of the program's stdin and the read end of its stdout (once each).
  virtual UniqueFd take_stdin() = 0;
  virtual UniqueFd take_stdout() = 0;
  // The process the host sees for it (the local sandbox's init; runsc for gVisor).
  virtual pid_t pid() const = 0;
  // The CPU its processes have used so far (its cgroup's); null once it has ended. In a
  // session whose counter is not live (Kubernetes) it is the total as of the last reading.
  virtual std::optional<sandbox::CpuTime> cpu_used() const = 0;
  // The same, read afresh where cpu_used() is not live (Session::read_cpu_now: one pods/exec on
  // Kubernetes); elsewhere cpu_used() itself.
  virtual std::optional<sandbox::CpuTime> read_cpu_now() { return cpu_used(); }

  virtual void kill() = 0;  // from any thread; the outcome says signaled (SIGKILL)
  virtual bool ended() const = 0;
  // Waits up to `timeout` for the end; the outcome (with egress records) once ended, and
  // once everything it was made of has been removed.
  virtual std::optional<RunResult> wait_for_end(std::chrono::milliseconds timeout) const = 0;

  // Bytes written to stderr so far, and what of them is still in the ring after `mark` (a
  // value stderr_mark() returned): what the program wrote meanwhile, capped at `max_bytes`.
  virtual std::uint64_t stderr_mark() const = 0;
  virtual std::string stderr_since(std::uint64_t mark, std::size_t max_bytes) const = 0;
};

}  // namespace airlock::backend
