// `airlock mcp --server URL`: MCP on stdin and stdout, bridged to a running daemon's /mcp
// (Streamable HTTP), so that every desktop client or IDE that launches `airlock mcp` shares one
// daemon: its gateway's server instances, its sessions, its audit log. Each line the client
// writes is POSTed as it comes (several in flight at once, each on its own kept-alive
// connection); each answer, and each event of an answer's stream, goes back as one line. Once
// the daemon gives a session, its GET stream (the notifications the daemon starts, such as
// tools/list_changed) is read beside them. At the end of stdin the answers still due are
// written, then the session is deleted.
#pragma once

#include <iosfwd>

#include "cli/daemon_client.hpp"

namespace airlock::cli {

// Returns the exit status: 0 when stdin ended, 2 for a usage error (bad --server, key or TLS
// option, said on `log`).
int run_mcp_bridge(const ClientOptions& o, std::istream& in, std::ostream& out, std::ostream& log);

}  // namespace airlock::cli
