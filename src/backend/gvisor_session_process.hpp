// The host processes of a gVisor session (backend/gvisor_session.hpp): runsc commands run in
// the sandbox's network namespace (runsc's control socket is an abstract unix socket, which
// only that namespace reaches), and the file helper that serves the workspace from the host.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "backend/runsc_command.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/session/session_protocol.hpp"

namespace airlock::backend::gvisor_session {

// The namespaces of the sandbox's runsc (`user` only when runsc runs --rootless).
struct Namespaces {
  UniqueFd user, net;
};
Result<Namespaces> open_namespaces(pid_t runsc_pid, bool user);

// Starts `argv` (argv[0] absolute) in `ns` with `stdio` as its 0, 1 and 2, in a session of its
// own; `terminal`: they are a pty's slave, which becomes its controlling terminal. It is
// SIGKILLed if the daemon's thread that started it ends.
Result<pid_t> spawn(const Namespaces& ns, const std::vector<std::string>& argv, const int (&stdio)[3],
                    bool terminal);

// A short runsc command in `ns` (state, pause, resume): its output, bounded by `timeout`.
CommandResult run_in(const Namespaces& ns, const std::vector<std::string>& argv,
                     std::chrono::milliseconds timeout);

// One workspace operation by the local session's file code (session_init_files.hpp), in a
// helper process beneath `workspace` on the host, as uid/gid `owner` when the daemon is root.
// `fd`: the pipe end of a read or write (-1 for the others). Returns its Done reply; `*helper`
// is the helper's pid while a copier still runs (read, write: its exit code is the copier's),
// else 0 (the helper has been reaped).
Result<sandbox::session_protocol::Reply> file_operation(const std::string& workspace, unsigned owner,
                                                        const std::string& message, int fd, pid_t* helper);

}  // namespace airlock::backend::gvisor_session
