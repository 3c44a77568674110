// airlock session shell: a terminal on a session over the daemon's WebSocket (session_shell.cpp).
#pragma once

#include <string>

#include "cli/daemon_client.hpp"

namespace airlock::cli {

// Runs a shell (or `shell_line`, with /bin/sh -c) on a terminal of session `id` until it ends;
// returns the command's exit status (see session_shell.cpp).
int run_session_shell(const ClientOptions& o, const std::string& id, const std::string& shell_line);

}  // namespace airlock::cli
