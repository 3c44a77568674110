// The daemon's answers beyond the transport's (json_response and error_response are in
// server/http/http_message.hpp): a refusal of the access decision, a tool's metrics label, a
// query string's values.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "pipeline/authenticator.hpp"
#include "pipeline/error.hpp"
#include "policy/config.hpp"
#include "server/http/http_message.hpp"

namespace airlock::server {

// A refusal of the access decision (401, 403, 404) outside an invocation.
HttpResponse refusal_response(const pipeline::InvocationError& error);

// Who sent `r` (its credentials and client certificate), or the 401 to answer, with its
// WWW-Authenticate: the first step of every endpoint outside an invocation.
std::variant<pipeline::Caller, HttpResponse> authenticate_request(const pipeline::Authenticator& authenticator,
                                                                   const HttpRequest& r);

// The value of a `tool` metrics label: configured names only, never request text (a caller
// without a key must not be able to add series to /metrics).
inline constexpr const char* kUnknownToolLabel = "(unknown)";
std::string tool_label(const policy::Config& config, const std::string& name);

// A query string's value, percent-decoded ('+' is a space); "" when absent. Error when the
// value's escapes are malformed.
Result<std::string> query_param(std::string_view target, std::string_view name);

}  // namespace airlock::server
