#include "server/mcp_server/mcp_protocol.hpp"

#include <algorithm>

#include "identity/base64url.hpp"

namespace airlock::server::mcp_protocol {

const std::vector<std::string>& supported_revisions() {
  static const std::vector<std::string> revisions = {kRevision20260728, kRevision20251125, kRevision20250618};
  return revisions;
}

bool is_session_revision(std::string_view revision) {
  return revision == kRevision20251125 || revision == kRevision20250618;
}

std::string negotiate(const nlohmann::json& params) {
  const auto asked = params.is_object() ? params.value("protocolVersion", nlohmann::json()) : nlohmann::json();
  if (asked.is_string() && is_session_revision(asked.get<std::string>())) return asked.get<std::string>();
  return kRevision20251125;
}

std::optional<std::string> envelope_revision(const mcp::Message& m) {
  if (!m.params.is_object()) return std::nullopt;
  const auto meta = m.params.find("_meta");
  if (meta == m.params.end() || !meta->is_object()) return std::nullopt;
  const auto v = meta->find(kProtocolVersionMeta);
  if (v == meta->end()) return std::nullopt;
  return v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<std::string> decode_header_value(std::string_view value) {
  constexpr std::string_view prefix = "=?base64?", suffix = "?=";
  if (!(value.size() >= prefix.size() + suffix.size() && value.starts_with(prefix) && value.ends_with(suffix)))
    return std::string(value);
  return base64_decode(value.substr(prefix.size(), value.size() - prefix.size() - suffix.size()));
}

std::optional<std::string> base64_decode(std::string_view value) {
  std::string text(value);
  // Standard base64 as base64url, unpadded.
  while (!text.empty() && text.back() == '=') text.pop_back();
  std::replace(text.begin(), text.end(), '+', '-');
  std::replace(text.begin(), text.end(), '/', '_');
  auto decoded = identity::base64url_decode(text);
  if (!decoded) return std::nullopt;
  return *decoded;
}

namespace {

Refusal refuse(const mcp::Message& m, int code, const std::string& message, std::optional<nlohmann::json> data = {}) {
  return Refusal{400, mcp::make_error(m.id.is_null() ? nlohmann::json() : m.id, code, message, std::move(data))};
}

std::string header(const std::map<std::string, std::string>& headers, const std::string& name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

// The body field Mcp-Name mirrors, for the methods that have one: a tool's or a prompt's name,
// a resource's uri (SEP-2243), a task's id (the tasks extension, SEP-2663). nullptr: none.
const char* name_field(const std::string& method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") return "taskId";
  return nullptr;
}

std::optional<std::string> name_in_body(const mcp::Message& m) {
  const char* field = name_field(m.method);
  if (!field || !m.params.is_object()) return std::nullopt;
  const auto name = m.params.find(field);
  return name != m.params.end() && name->is_string() ? name->get<std::string>() : std::string();
}

std::optional<Refusal> check_headers(const mcp::Message& m, const std::string& revision,
                                     const std::map<std::string, std::string>& headers) {
  // Notifications carry no standard headers: their body alone says what they are.
  if (m.kind != mcp::Message::Kind::request) return std::nullopt;
  if (header(headers, "mcp-protocol-version") != revision)
    return refuse(m, kHeaderMismatch, "the MCP-Protocol-Version header must be " + revision + ", as the request's _meta says");
  if (header(headers, "mcp-method") != m.method)
    return refuse(m, kHeaderMismatch, "the Mcp-Method header must be the request's method, " + m.method);
  if (auto name = name_in_body(m)) {
    auto sent = decode_header_value(header(headers, "mcp-name"));
    if (!sent || *sent != *name)
      return refuse(m, kHeaderMismatch,
                    "the Mcp-Name header must be the request's params." + std::string(name_field(m.method)) + ", " + *name);
  }
  return std::nullopt;
}

}  // namespace

const nlohmann::json* client_capabilities(const nlohmann::json& params) {
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return nullptr;
  const auto caps = meta->find(kClientCapabilitiesMeta);
  return caps != meta->end() && caps->is_object() ? &*caps : nullptr;
}

std::optional<Refusal> check_stateless(const mcp::Message& m, const std::string& revision,
                                       const std::map<std::string, std::string>* headers) {
  if (revision != kRevision20260728)
    return refuse(m, kUnsupportedRevision, "protocol version '" + revision + "' is not supported",
                  nlohmann::json{{"supported", supported_revisions()}, {"requested", revision}});
  if (!client_capabilities(m.params))
    return refuse(m, mcp::rpc_error::invalid_params,
                  std::string("the request's _meta lacks ") + kClientCapabilitiesMeta + " (an object)");
  if (headers) return check_headers(m, revision, *headers);
  return std::nullopt;
}

}  // namespace airlock::server::mcp_protocol
