#include "mcp/jsonrpc.hpp"

namespace airlock::mcp {

Result<Message> parse_message(const nlohmann::json& v) {
  auto bad = [](const std::string& why) { return Error::make("invalid_request", why); };
  if (!v.is_object()) return bad("a JSON-RPC message is a JSON object");
  auto version = v.find("jsonrpc");
  if (version == v.end() || *version != "2.0") return bad("\"jsonrpc\" must be \"2.0\"");
  Message m;
  auto id = v.find("id");
  const bool has_id = id != v.end();
  if (has_id && !id->is_string() && !id->is_number_integer())
    return bad("\"id\" must be a string or an integer");
  if (auto method = v.find("method"); method != v.end()) {
    if (!method->is_string()) return bad("\"method\" must be a string");
    m.method = method->get<std::string>();
    if (auto params = v.find("params"); params != v.end()) {
      if (!params->is_object()) return bad("\"params\" must be an object");
      m.params = *params;
    }
    if (has_id) {
      m.kind = Message::Kind::request;
      m.id = *id;
    } else {
      m.kind = Message::Kind::notification;
    }
    return m;
  }
  if (!has_id) return bad("a message needs a \"method\" or an \"id\"");
  m.id = *id;
  const bool has_result = v.contains("result"), has_error = v.contains("error");
  if (has_result == has_error) return bad("a response has exactly one of \"result\" and \"error\"");
  if (has_result) {
    m.kind = Message::Kind::response;
    m.result = v["result"];
    return m;
  }
  const auto& e = v["error"];
  if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer() ||
      !e.contains("message") || !e["message"].is_string())
    return bad("\"error\" must be an object with an integer \"code\" and a string \"message\"");
  m.kind = Message::Kind::error_response;
  m.error = e;
  return m;
}

nlohmann::json make_request(const nlohmann::json& id, std::string_view method, nlohmann::json params) {
  nlohmann::json m{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

nlohmann::json make_notification(std::string_view method, nlohmann::json params) {
  nlohmann::json m{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json make_error(const nlohmann::json& id, int code, std::string_view message,
                          std::optional<nlohmann::json> data) {
  nlohmann::json e{{"code", code}, {"message", message}};
  if (data) e["data"] = std::move(*data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(e)}};
}

}  // namespace airlock::mcp
