// Sessions on a backend (docs/sessions.md): one long-lived sandbox whose init starts each exec
// inside it, for an agent's stateful work. The local backend implements it
// (local_session_backend.cpp), as do gVisor (gvisor_session.hpp) and Kubernetes
// (kubernetes/kube_session.hpp) behind the same interface. Execs speak the sandbox's
// vocabulary (sandbox::SessionExec, StartedExec: the host's ends of the exec's stdin, stdout
// and stderr).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "common/result.hpp"
#include "sandbox/session/session.hpp"

namespace airlock::backend {

class Session {
 public:
  virtual ~Session() = default;
  // Starts a command inside the session ("session_ended", "invalid_argument", "exec_failed").
  virtual Result<sandbox::StartedExec> exec(const sandbox::SessionExec& request) = 0;
  // The same on a pseudo-terminal of the session's own (StartedExec::terminal, its master).
  virtual Result<sandbox::StartedExec> exec_on_terminal(const sandbox::SessionExec& request, sandbox::WindowSize size) = 0;
  // The exec's end once it has ended, waiting at most `timeout`.
  virtual std::optional<sandbox::ExecEnd> wait(std::uint32_t id, std::chrono::milliseconds timeout) = 0;
  virtual Status signal(std::uint32_t id, int sig) = 0;  // to the exec's process group
  // Ends the session: every process in it, then its cgroups and mounts (and its egress
  // proxy, whose records the result carries). Idempotent; the same result each time.
  virtual RunResult end() = 0;
  virtual bool ended() const = 0;  // over for whatever reason (its limits, its wall clock)
  // What its processes have used so far, while it lives: live where the host reads a cgroup
  // (local, gVisor); on Kubernetes the pod's counter as of the last reading (after each exec's
  // end, and read_cpu_now).
  virtual std::optional<sandbox::CpuTime> cpu_used() const = 0;
  // What its processes have used up to now, for work that is not an exec's end (a code cell in
  // a long-lived interpreter, a call to a long-lived MCP server): cpu_used() where that is live;
  // where it is not, the counter is read afresh first (Kubernetes: one pods/exec of `cat`), the
  // delta since the previous reading added to the total. A reading that fails adds nothing now,
  // and the next that succeeds adds what it missed.
  virtual std::optional<sandbox::CpuTime> read_cpu_now() { return cpu_used(); }
  // Pause (every process stopped, memory kept) and resume; refused ("freezer_unavailable") where the
  // backend cannot.
  virtual Status freeze(bool frozen) = 0;
  // Whether a snapshot may keep the session's memory and processes, not only its files, or why
  // not ("memory_snapshot_unsupported", the step that fails here; docs/sessions.md, "Checkpoint
  // and restore on this machine"): only a gVisor session without egress rules can. A client
  // that asks for memory where it cannot gets this refusal, never a snapshot of the files alone.
  virtual Status can_snapshot_memory() const = 0;
  // Writes the session's memory and processes into `image_dir` (an empty directory of the
  // daemon's), the session running on afterwards with the same processes. Errors: what
  // can_snapshot_memory says, "session_ended", "snapshot_failed" naming the step.
  virtual Status checkpoint(const std::string& /*image_dir*/) {
    if (auto can = can_snapshot_memory(); !can) return can;
    return Error::make("memory_snapshot_unsupported", "this backend takes no snapshots with memory");
  }
  // The workspace's files, resolved inside the session beneath its work dir (as
  // sandbox::SessionSandbox's: paths from sandbox::workspace_path, errors by sandbox::file_error).
  virtual Result<sandbox::FileTransfer> read_file(const std::string& path) = 0;
  virtual Result<sandbox::FileTransfer> write_file(const std::string& path) = 0;
  virtual Status remove_file(const std::string& path) = 0;
  virtual Status move_file(const std::string& from, const std::string& to) = 0;
  virtual Status make_directory(const std::string& path) = 0;

  // Whether it was started ahead of demand (SessionBackend::keep_ready) rather than for the
  // creation that took it.
  bool warm() const { return warm_; }
  void set_warm() { warm_ = true; }
  // The program a ready sandbox started for its taker (ReadySessions::started_ahead), once.
  std::optional<sandbox::StartedExec> take_started_ahead() { return std::exchange(started_ahead_, std::nullopt); }
  void set_started_ahead(sandbox::StartedExec exec) { started_ahead_ = std::move(exec); }

 private:
  bool warm_ = false;
  std::optional<sandbox::StartedExec> started_ahead_;
};

// What a snapshot with memory holds (Session::checkpoint): the checkpoint's image directory and
// the archive (tar) of the work dir taken with it, both verified by the caller.
struct MemoryImage {
  std::string image_dir;
  std::string workspace_archive;
};

// Sessions a backend keeps started ahead of demand: `count` sandboxes of `request` (as
// start_session would start them), taken by a start_session whose context names `key`.
struct ReadySessions {
  std::string key;
  RunRequest request;
  RunContext context;
  unsigned count = 0;
  // A program each ready sandbox starts and keeps running for the creation that takes it (a
  // session's code interpreter, which then skips its start); empty: none.
  sandbox::SessionExec started_ahead;
};

class SessionBackend {
 public:
  virtual ~SessionBackend() = default;
  // A new session from `request` (its argv, stdin_bytes and warm are not used; its
  // limits.wall_time is the session's whole life), or why not (code "setup_error", the
  // message naming the step).
  // With context.warm_key naming a ready sandbox's key, one of them is taken if any is ready
  // (Session::warm() says so); otherwise a new one starts.
  virtual Result<std::unique_ptr<Session>> start_session(const RunRequest& request, const RunContext& context) = 0;
  // From now on keeps `wanted` ready, and only that: ready sandboxes of an earlier call end (a
  // reload's new templates never meet a sandbox started from the old ones). By default none.
  virtual void keep_ready(std::vector<ReadySessions> /*wanted*/) {}
  // A new session whose processes are those of `image`, with its memory, and whose work dir
  // holds the image's archive; `request` as start_session's (never a ready sandbox). A failure
  // leaves nothing. By default refused ("memory_snapshot_unsupported").
  virtual Result<std::unique_ptr<Session>> restore_session(const RunRequest& /*request*/, const RunContext& /*context*/,
                                                           const MemoryImage& /*image*/) {
    return Error::make("memory_snapshot_unsupported", "this backend cannot restore a snapshot with memory");
  }
};

}  // namespace airlock::backend
