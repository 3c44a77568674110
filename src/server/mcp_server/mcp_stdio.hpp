// MCP over stdio (`airlock mcp`): newline-delimited JSON-RPC on stdin, one answer or
// notification per line on stdout, logs on stderr only. For clients that launch their
// servers (desktop assistants, IDEs). The API key decides the principal, as over HTTP; a
// subject token (`--subject-token`) is the user the calls are on behalf of, as the
// Airlock-Subject-Token header is over HTTP.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>

#include "server/mcp_server/mcp_server.hpp"

namespace airlock::server {

// Answers the messages of `in` until it ends, then waits at most `settle` for the answers still
// due (a tools/list waiting for the gateway's first listing: a client that sent it and closed
// stdin gets the whole list). The caller then shuts the daemon down, which lets running calls
// finish and answer.
void run_mcp_stdio(McpServer& server, const std::string& api_key, const std::string& subject_token,
                   std::istream& in, std::ostream& out,
                   std::chrono::milliseconds settle = std::chrono::milliseconds(0));

}  // namespace airlock::server
