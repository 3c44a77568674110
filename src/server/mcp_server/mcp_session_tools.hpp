// Sessions as MCP tools (docs/mcp-server.md, "Session tools"): session_create, session_exec,
// session_code, session_write_file, session_read_file and session_end. Each runs what the
// /v1/sessions endpoint runs (sessions_api.hpp, session_exec.hpp, session_code.hpp,
// session_files.hpp): the same owner check, access, quotas, DLP and audit records; this file
// only maps arguments in and answers out. An MCP session's default workspace (a call without
// `session`) is made on first use and ends with the MCP session (mcp_sessions.hpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pipeline/authenticator.hpp"
#include "server/core/api_services.hpp"
#include "server/mcp_server/mcp_sessions.hpp"

namespace airlock::server {

// Whether `name` is one of the session tools.
bool is_session_tool(std::string_view name);

// tools/list's entries of the session tools for `caller`: none when it may create a session
// of no template (or holds a token scoped to tools); otherwise all six, session_create's
// `template` enumerating the templates it may create. A tool the config names the same keeps
// its name: that session tool is left out.
nlohmann::json session_tool_entries(const policy::Config& config, const pipeline::Caller& caller);

struct SessionToolCall {
  ApiServices services;  // services.sessions is set
  std::shared_ptr<const Generation> generation;
  pipeline::Caller caller;
  McpSessions* mcp_sessions = nullptr;
  std::string mcp_session;  // the Mcp-Session-Id; "" for a stateless request (no default workspace)
  std::string name;
  nlohmann::json arguments;
};

// Runs one session tool to its end and returns its CallToolResult: a refusal is an isError
// result saying what and why (never a JSON-RPC error). Blocks: run it on a task of its own.
nlohmann::json call_session_tool(const SessionToolCall& call);

}  // namespace airlock::server
