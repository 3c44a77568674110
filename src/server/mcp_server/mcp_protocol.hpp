// The protocol revisions Airlock's MCP server speaks, and the checks that tell which one a
// message is under (docs/mcp-server.md):
//   2025-06-18, 2025-11-25  the initialize handshake opens a session (Mcp-Session-Id); later
//                           requests name its revision in the MCP-Protocol-Version header.
//   2026-07-28              stateless: every request names its revision in
//                           params._meta["io.modelcontextprotocol/protocolVersion"], and over
//                           HTTP repeats it, its method and its name in headers.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/jsonrpc.hpp"

namespace airlock::server::mcp_protocol {

inline constexpr const char* kRevision20250618 = "2025-06-18";
inline constexpr const char* kRevision20251125 = "2025-11-25";
inline constexpr const char* kRevision20260728 = "2026-07-28";

inline constexpr const char* kProtocolVersionMeta = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kClientCapabilitiesMeta = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kServerInfoMeta = "io.modelcontextprotocol/serverInfo";
// subscriptions/listen: the subscription (its request's id) each of its messages belongs to.
inline constexpr const char* kSubscriptionIdMeta = "io.modelcontextprotocol/subscriptionId";

// 2026-07-28's codes (jsonrpc.hpp has the older ones): a request naming a revision the server
// does not speak (data: {supported, requested}), and headers that disagree with the body.
inline constexpr int kUnsupportedRevision = -32022;
inline constexpr int kHeaderMismatch = -32020;

// Every revision spoken, newest first; and those with the initialize handshake.
const std::vector<std::string>& supported_revisions();
bool is_session_revision(std::string_view revision);

// The revision an initialize is answered with: the one asked for when spoken, else the
// newest session revision (the client then decides whether it can go on).
std::string negotiate(const nlohmann::json& initialize_params);

// The revision a stateless request names in its _meta; nullopt when it names none (then it
// belongs to a session).
std::optional<std::string> envelope_revision(const mcp::Message& message);

// The capabilities a 2026-07-28 request declares in its own _meta (each request says what its
// client takes); nullptr when it declares none (or not as an object).
const nlohmann::json* client_capabilities(const nlohmann::json& params);

// A message refused before it is dispatched: the HTTP status and the JSON-RPC error.
struct Refusal {
  int http_status = 400;
  nlohmann::json answer;
};

// A stateless request: its revision spoken, its envelope complete and, when `headers` is given
// (Streamable HTTP), MCP-Protocol-Version, Mcp-Method and Mcp-Name equal to what the body says.
std::optional<Refusal> check_stateless(const mcp::Message& message, const std::string& revision,
                                       const std::map<std::string, std::string>* headers);

// A header value as 2026-07-28 clients send it: plain, or "=?base64?...?=" for values that are
// not printable ASCII. nullopt: malformed base64.
std::optional<std::string> decode_header_value(std::string_view value);

// Standard base64 (RFC 4648 section 4) with or without its padding, as header values and MCP's
// blob contents may come (common/base64.hpp encodes). nullopt: malformed.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace airlock::server::mcp_protocol
