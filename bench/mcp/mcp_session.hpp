// An MCP client over Streamable HTTP, just enough for the benchmarks: initialize (keeping the
// Mcp-Session-Id), notifications/initialized, then tools/call; an answer as JSON or as an SSE
// stream is read to the response with the request's id.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.hpp"
#include "http_client.hpp"

namespace airlock::bench {

inline constexpr const char* kMcpProtocolVersion = "2025-06-18";

// The JSON-RPC message with `id` in a body that is one JSON object, a batch, or SSE events.
Result<nlohmann::json> jsonrpc_response(const std::string& body, const nlohmann::json& id);

class McpHttpSession {
 public:
  McpHttpSession(HttpClient& client, std::string bearer)
      : client_(client), bearer_(std::move(bearer)) {}
  Status initialize();
  // The answer (result or error) to a request.
  Result<nlohmann::json> request(const std::string& method, const nlohmann::json& params);
  // The result of tools/call; a JSON-RPC error or isError is an error.
  Result<nlohmann::json> call_tool(const std::string& name, const nlohmann::json& arguments);

 private:
  Result<HttpReply> send(const nlohmann::json& message);
  HttpClient& client_;
  std::string bearer_;
  std::string session_id_;
  long next_id_ = 1;
};

}  // namespace airlock::bench
