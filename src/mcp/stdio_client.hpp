// A client of one MCP server over the stdio transport: newline-delimited JSON-RPC on the
// server's stdin and stdout (the gateway's pipes into its sandbox). A reader thread matches
// responses to requests by id, forwards progress, answers the server's own requests, and
// treats anything malformed as the end of the server: the server is not trusted.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cancel_signal.hpp"
#include "common/json_limits.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "mcp/listed_tool.hpp"
#include "pipeline/invocation_control.hpp"
#include "pipeline/mcp_tool_caller.hpp"

namespace airlock::mcp {

// The revision Airlock asks for, and those of a server's answer it accepts.
inline constexpr const char* kClientProtocolVersion = "2025-11-25";
bool accepted_server_protocol_version(const std::string& version);

struct StdioClientOptions {
  std::size_t max_line_bytes = 4u << 20;  // a longer line is a protocol error
  std::size_t max_json_depth = kDefaultMaxJsonDepth;
  std::size_t max_list_pages = 100;  // tools/list pages followed
  std::size_t max_tools = 1000;      // a listing of more is refused
  std::chrono::milliseconds write_timeout{10'000};  // a server that stops reading its stdin
  // The server sent notifications/tools/list_changed. Called on the reader thread: it must
  // not wait for this client's answers (hand the re-listing to another thread).
  std::function<void()> on_tools_changed;
  // The connection is over: called once, on the reader thread, with the reason and whether
  // the server hung up (EOF) rather than spoke nonsense. The owner ends the server.
  std::function<void(const Error&, bool hung_up)> on_closed;
};

struct ToolCallRequest {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
  std::chrono::milliseconds timeout{30'000};
  CancelSignal* cancel = nullptr;
  std::function<void(const pipeline::Progress&)> progress;
};

class StdioClient {
 public:
  // `to_server`: the server's stdin; `from_server`: its stdout. Starts the reader thread.
  StdioClient(UniqueFd to_server, UniqueFd from_server, StdioClientOptions options);
  ~StdioClient();  // fails what is pending ("stopped"), stops and joins the reader
  StdioClient(const StdioClient&) = delete;
  StdioClient& operator=(const StdioClient&) = delete;

  // initialize, then notifications/initialized. Returns the negotiated protocol version.
  Result<std::string> initialize(std::chrono::milliseconds timeout);
  // Every page of tools/list (capped), parsed.
  Result<std::vector<ListedTool>> list_tools(std::chrono::milliseconds timeout);
  // Error codes: "timeout", "cancelled", "tool_server_failed" (closed, nonsense, refused).
  Result<pipeline::McpToolResult> call_tool(const ToolCallRequest& request);
  // The capabilities the server's initialize result gave ({} before initialize).
  nlohmann::json capabilities() const;
  // Every page of a listing (resources/list, resources/templates/list, prompts/list): the
  // result's `items_key` arrays joined, capped at max_tools items and max_list_pages pages
  // (list_tools is this, parsed).
  Result<nlohmann::json> list_items(const std::string& method, const std::string& items_key,
                                    std::chrono::milliseconds timeout);
  // resources/read, prompts/get: `request.arguments` sent as the params (request.name unused);
  // the result object as the server gave it (method_result). A JSON-RPC error answer (an
  // unknown resource) is a refusal, not a failure: is_error, its text in content.
  Result<pipeline::McpToolResult> call_method(const std::string& method, const ToolCallRequest& request);

  // Whether the connection is over, and why.
  bool closed() const;
  Error close_reason() const;
  // The server closed its stdout (it is exiting, or has): not a protocol error.
  bool server_hung_up() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace airlock::mcp
