// How the execute stage calls a tool of a third-party MCP server (mcpServers in the config):
// the gateway (src/mcp/gateway.hpp) implements this; the pipeline knows only this interface.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "common/cancel_signal.hpp"
#include "common/result.hpp"
#include "pipeline/invocation_control.hpp"

namespace airlock::pipeline {

struct McpToolCall {
  std::string invocation_id;
  std::string server;       // mcpServers[].name
  std::string remote_tool;  // the server's own name for the tool ("read_file")
  nlohmann::json arguments = nlohmann::json::object();
  // Whose server process runs it: two owners never share one. "user <issuer> <sub>" when the
  // call is on behalf of a user, else "agent <principal>".
  std::string owner;
  std::chrono::milliseconds timeout{30'000};
  CancelSignal* cancel = nullptr;                    // may be null
  std::function<void(const Progress&)> progress;     // may be empty
};

// The server's CallToolResult.
struct McpToolResult {
  nlohmann::json content = nlohmann::json::array();
  std::optional<nlohmann::json> structured_content;
  bool is_error = false;
  std::string server_log;  // what the server wrote on stderr meanwhile (capped), for the log
};

class McpToolCaller {
 public:
  virtual ~McpToolCaller() = default;
  // Error codes: "tool_server_failed" (could not start, crashed, closed its pipe, spoke
  // nonsense), "tool_disabled" (its listing changed since it was pinned), "timeout",
  // "cancelled", "stopped" (the gateway is shutting down). The message says what and why.
  virtual Result<McpToolResult> call(const McpToolCall& call) = 0;
};

}  // namespace airlock::pipeline
