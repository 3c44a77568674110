// What MCP's tools/list and tools/call make of Airlock's tools and invocations: one listing
// entry per tool, and a CallToolResult per finished invocation. A denial or failure is a
// result with isError (never a JSON-RPC error), so that a model sees why.
#pragma once

#include <nlohmann/json.hpp>

#include "pipeline/invocation.hpp"
#include "policy/config.hpp"

namespace airlock::server {

// {name, title, description, inputSchema, outputSchema?, annotations}: readOnlyHint for low
// risk, destructiveHint for high and critical, openWorldHint when the tool has egress.
nlohmann::json mcp_tool_entry(const policy::ToolConfig& tool);

// Where a CallToolResult's _meta names the invocation.
inline constexpr const char* kInvocationIdMeta = "airlock.dev/invocationId";

// The CallToolResult of a finished invocation of `tool` (null: not a configured tool), its
// _meta naming the invocation.
nlohmann::json mcp_call_result(const policy::ToolConfig* tool, const pipeline::Invocation& inv);

// The isError result of a call that did not run (the daemon draining, the queue full).
// details: error.details (a python-code cell's exception, egress denials), or null.
nlohmann::json mcp_error_result(const std::string& kind, const std::string& message, bool structured = true,
                                const nlohmann::json& details = nullptr);

}  // namespace airlock::server
