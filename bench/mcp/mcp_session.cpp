#include "mcp_session.hpp"

#include <sstream>

namespace airlock::bench {
namespace {

// Each SSE event's data lines joined (RFC: "data:" with an optional space).
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> events;
  std::istringstream in(body);
  std::string line, data;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (!data.empty()) events.push_back(std::move(data));
      data.clear();
    } else if (line.rfind("data:", 0) == 0) {
      if (!data.empty()) data += "\n";
      data += line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
    }
  }
  if (!data.empty()) events.push_back(std::move(data));
  return events;
}

Result<nlohmann::json> find_id(const nlohmann::json& message, const nlohmann::json& id) {
  if (message.is_array()) {
    for (const auto& m : message)
      if (m.is_object() && m.value("id", nlohmann::json()) == id) return m;
  } else if (message.is_object() && message.value("id", nlohmann::json()) == id) {
    return message;
  }
  return Error::make("mcp", "no response with id " + id.dump());
}

}  // namespace

Result<nlohmann::json> jsonrpc_response(const std::string& body, const nlohmann::json& id) {
  auto whole = nlohmann::json::parse(body, nullptr, false);
  if (!whole.is_discarded()) return find_id(whole, id);
  for (const auto& data : sse_data(body)) {
    auto event = nlohmann::json::parse(data, nullptr, false);
    if (event.is_discarded()) continue;
    if (auto found = find_id(event, id)) return found;
  }
  return Error::make("mcp", "no response with id " + id.dump() + " in: " + body.substr(0, 300));
}

Result<HttpReply> McpHttpSession::send(const nlohmann::json& message) {
  std::map<std::string, std::string> headers = {{"Authorization", "Bearer " + bearer_},
                                                {"Accept", "application/json, text/event-stream"},
                                                {"MCP-Protocol-Version", kMcpProtocolVersion}};
  if (!session_id_.empty()) headers["Mcp-Session-Id"] = session_id_;
  return client_.post("/mcp", message.dump(), headers);
}

Status McpHttpSession::initialize() {
  const nlohmann::json id = next_id_++;
  auto reply = send({{"jsonrpc", "2.0"},
                     {"id", id},
                     {"method", "initialize"},
                     {"params",
                      {{"protocolVersion", kMcpProtocolVersion},
                       {"capabilities", nlohmann::json::object()},
                       {"clientInfo", {{"name", "airlock-bench"}, {"version", "1"}}}}}});
  if (!reply) return reply.error();
  if (reply->status != 200)
    return Error::make("mcp", "initialize: HTTP " + std::to_string(reply->status) + " " +
                                  reply->body.substr(0, 200));
  auto response = jsonrpc_response(reply->body, id);
  if (!response) return response.error();
  if (!response->contains("result")) return Error::make("mcp", "initialize: " + response->dump());
  session_id_ = reply->session_id;
  auto note = send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  if (!note) return note.error();
  if (note->status != 202 && note->status != 200)
    return Error::make("mcp", "notifications/initialized: HTTP " + std::to_string(note->status));
  return {};
}

Result<nlohmann::json> McpHttpSession::request(const std::string& method, const nlohmann::json& params) {
  const nlohmann::json id = next_id_++;
  auto reply = send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  if (!reply) return reply.error();
  if (reply->status != 200) return Error::make("mcp", method + ": HTTP " + std::to_string(reply->status));
  return jsonrpc_response(reply->body, id);
}

Result<nlohmann::json> McpHttpSession::call_tool(const std::string& name,
                                                 const nlohmann::json& arguments) {
  auto response = request("tools/call", {{"name", name}, {"arguments", arguments}});
  if (!response) return response.error();
  const auto& result = response->value("result", nlohmann::json());
  if (!result.is_object() || result.value("isError", false))
    return Error::make("mcp", "tools/call: " + response->dump().substr(0, 300));
  return result;
}

}  // namespace airlock::bench
