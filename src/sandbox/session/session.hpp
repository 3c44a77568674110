// A session sandbox: one sandbox that lives across many execs, for an agent's stateful work.
// It has every layer of a tool call's sandbox (namespaces, the read-only root, cgroup limits,
// no capabilities, Landlock, seccomp); its pid 1 is Airlock's init, which starts each exec as
// its own child inside those layers (session_init.cpp). Nothing enters the sandbox from
// outside once it runs: an exec is a request on the init's control socket.
//
//   auto session = SessionSandbox::start(spec);   // spec.limits.wall_time: the whole life
//   auto started = (*session)->exec({{"sh", "-c", "echo hi"}});
//   ... read started->stdout_r ...
//   auto end = (*session)->wait(started->id, 10s);
//   Outcome outcome = (*session)->end();          // everything in it ends and is removed
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/spec.hpp"

namespace airlock::sandbox {

// A terminal's window size.
struct WindowSize {
  std::uint16_t rows = 24;
  std::uint16_t columns = 80;
};

struct SessionExec {
  std::vector<std::string> argv;  // argv[0] without '/' is looked up in PATH inside
  std::map<std::string, std::string> env;  // over the session's environment
  std::string cwd;  // absolute, inside the sandbox; empty: the session's work dir
};

// A started exec: its process and the host's ends of its stdin, stdout and stderr pipes, or,
// for a terminal exec, the pty's master (write: its input, ^C included; read: everything it
// shows; TIOCSWINSZ: a resize, with SIGWINCH to its foreground). It reads EIO once every
// process holding the terminal has gone.
struct StartedExec {
  std::uint32_t id = 0;
  pid_t pid = 0;  // inside the sandbox
  UniqueFd stdin_w, stdout_r, stderr_r;
  UniqueFd terminal;
};

// How an exec's process ended.
struct ExecEnd {
  bool exited = false;  // true: `code` is its exit code; false: the signal that killed it
  int code = 0;
  std::uint64_t user_us = 0, sys_us = 0;  // CPU of it and the children it waited for
  std::uint64_t max_rss_kb = 0;
};

// A file's bytes or a directory's listing on their way out of the session (read_file), or a
// new file's bytes on their way in (write_file): a copier inside the session moves them
// through `pipe`; wait(id) gives its end (exit code 0, or the errno that stopped it: see
// file_error).
struct FileTransfer {
  std::uint32_t id = 0;
  bool directory = false;  // read_file: `pipe` carries a listing (session_protocol.hpp)
  std::uint64_t size = 0;  // read_file: the file's size when it was opened
  UniqueFd pipe;           // read_file: read it to its end; write_file: write, then close it
};

// The error for a file operation's errno (from the init or a copier's exit code), by code:
// file_not_found, outside_workspace (the path leads out of the work dir), is_a_directory,
// not_a_directory, directory_not_empty, file_exists, disk_limit, permission_denied,
// invalid_path, file_error.
Error file_error(int err, const std::string& path);

// A path in the workspace as the file operations take it: relative to the work dir, without
// empty or "." components; "" is the work dir itself. "..", NUL bytes and paths over 4 KiB are
// refused (invalid_path); the init refuses what leads out through symlinks.
Result<std::string> workspace_path(const std::string& path);

// What the session's owner does around its sandbox's life, on the supervising thread.
struct SessionHooks {
  // Once launched, before start() returns: the egress proxy takes the sandbox's listeners.
  std::function<void(Sandbox&)> launched;
  // Once the sandbox has ended, before end() returns: the proxy stops.
  std::function<void()> ended;
};

class SessionSandbox {
 public:
  // Launches the sandbox of `spec` (its argv and stdin are not used; limits.wall_time is the
  // session's whole life) with a supervising thread of its own; returns once the init serves.
  static Result<std::unique_ptr<SessionSandbox>> start(Spec spec, SessionHooks hooks = {});
  ~SessionSandbox();  // end()
  SessionSandbox(const SessionSandbox&) = delete;
  SessionSandbox& operator=(const SessionSandbox&) = delete;

  // Starts `request` inside the session. Refused with "session_ended" once the session is
  // over, "invalid_argument" for a request the init would not take (no argv, NUL bytes, over
  // 64 KiB, a relative cwd), and "exec_failed" naming the errno when nothing could run
  // (no such program, no such directory).
  Result<StartedExec> exec(const SessionExec& request);
  // The same on a pseudo-terminal of the session's own devpts instance (never the host's): its
  // controlling terminal, in the foreground, `size` its window: a shell for a person. The
  // StartedExec holds the pty's master.
  Result<StartedExec> exec_on_terminal(const SessionExec& request, WindowSize size);
  // The exec's end once it has ended, waiting at most `timeout`; nothing while it runs.
  std::optional<ExecEnd> wait(std::uint32_t id, std::chrono::milliseconds timeout);
  // Sends `sig` to the exec's process group (it and what it started, unless they left it).
  Status signal(std::uint32_t id, int sig);

  // The workspace's files (`path` from workspace_path; resolved by the init inside the
  // sandbox, beneath its work dir). read_file: a regular file's bytes or a directory's listing
  // ("not_a_regular_file" for anything else). write_file: a new file at `path` (refused,
  // file_exists, when something is there: write to a new name, then move_file over the old).
  Result<FileTransfer> read_file(const std::string& path);
  Result<FileTransfer> write_file(const std::string& path);
  Status remove_file(const std::string& path);  // a file, a symlink or an empty directory
  Status move_file(const std::string& from, const std::string& to);
  Status make_directory(const std::string& path);  // and its parents

  // Ends the session: the init's control socket closes, the init exits, and with it the pid
  // namespace and every process in it; then cgroups and mounts are removed. The Outcome says
  // why it ended (ok when asked to, timeout at the end of its wall time, a verdict when a
  // limit or a seccomp violation ended it). Idempotent.
  Outcome end();
  bool ended() const;  // over, for whatever reason; exec() is refused from then on
  // What its processes have used of the CPU so far (its cgroup's counters), while it lives.
  std::optional<CpuTime> cpu_used() const;
  // Pause: every process in it stops (the cgroup freezer: no CPU, memory kept) until
  // freeze(false). Refused ("freezer_unavailable") where no freezer is usable, "session_ended" after
  // its end. end() thaws it first.
  Status freeze(bool frozen);

  struct State;

 private:
  explicit SessionSandbox(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace airlock::sandbox
