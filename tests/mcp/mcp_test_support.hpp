// Helpers for the MCP server's tests: JSON-RPC messages and POSTs to /mcp.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "server_test_support.hpp"

namespace airlock::server::test {

inline const std::map<std::string, std::string> kMcpAccept = {{"accept", "application/json, text/event-stream"}};

inline nlohmann::json rpc(int id, const std::string& method, nlohmann::json params = nlohmann::json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

// 2026-07-28's per-request _meta.
inline nlohmann::json stateless_meta(const std::string& revision = "2026-07-28") {
  return {{"io.modelcontextprotocol/protocolVersion", revision},
          {"io.modelcontextprotocol/clientCapabilities", nlohmann::json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "1"}}}};
}

inline Reply mcp_post(std::uint16_t port, const nlohmann::json& message, const std::string& key = kKey,
                      std::map<std::string, std::string> headers = {}) {
  headers.insert(kMcpAccept.begin(), kMcpAccept.end());
  return http_with(port, "POST", "/mcp", message.dump(), key, headers);
}

// Opens a session of `revision`: its Mcp-Session-Id.
inline std::string open_session(std::uint16_t port, const std::string& revision, const std::string& key = kKey) {
  auto r = mcp_post(port, rpc(1, "initialize", {{"protocolVersion", revision},
                                                {"capabilities", nlohmann::json::object()},
                                                {"clientInfo", {{"name", "test"}, {"version", "1"}}}}), key);
  return r.headers.count("mcp-session-id") ? r.headers.at("mcp-session-id") : std::string();
}

inline std::map<std::string, std::string> session_headers(const std::string& id, const std::string& revision) {
  return {{"mcp-session-id", id}, {"mcp-protocol-version", revision}};
}

}  // namespace airlock::server::test
