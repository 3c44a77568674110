// JSON-RPC 2.0 as MCP uses it: one place that says what a message is, for Airlock's MCP
// server (server/mcp_*.cpp) and for the gateway's client of third-party servers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace airlock::mcp {

// The error codes of JSON-RPC and those MCP adds.
namespace rpc_error {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
// MCP: a request of a protocol revision the server does not speak (2026-07-28 stateless
// requests name theirs in _meta; the spec's "unsupported protocol version").
inline constexpr int unsupported_protocol_version = -32000;
inline constexpr int resource_not_found = -32002;
}  // namespace rpc_error

struct Message {
  enum class Kind { request, notification, response, error_response } kind = Kind::request;
  nlohmann::json id;          // request, response: a string or an integer (never null)
  std::string method;         // request, notification
  nlohmann::json params;      // request, notification: an object, or null when absent
  nlohmann::json result;      // response
  nlohmann::json error;       // error_response: {code, message, data?}
};

// Classifies one JSON value as a JSON-RPC 2.0 message. An array (a batch) is not a message:
// the caller decides whether its revision allows batches. The error's message says what is
// wrong, for an invalid_request answer.
Result<Message> parse_message(const nlohmann::json& value);

nlohmann::json make_request(const nlohmann::json& id, std::string_view method, nlohmann::json params);
nlohmann::json make_notification(std::string_view method, nlohmann::json params);
nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result);
// `id` null when the request's id could not be read (parse errors).
nlohmann::json make_error(const nlohmann::json& id, int code, std::string_view message,
                          std::optional<nlohmann::json> data = std::nullopt);

}  // namespace airlock::mcp
