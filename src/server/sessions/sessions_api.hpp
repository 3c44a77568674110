// /v1/sessions (docs/sessions.md): create, list, get and end sessions, and exec in them, for
// their owner only (anyone else gets 404, whether the session exists or not); readers with
// manage_sessions list and end every owner's.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "server/core/api_services.hpp"
#include "common/result.hpp"
#include "server/http/http_message.hpp"
#include "server/sessions/session_service.hpp"

namespace airlock::server {

// The answer to a refusal by its code (404 file_not_found, 409 session_paused, 413
// disk_limit, 429 quota_exceeded:<quota> naming the quota, ...).
HttpResponse session_error_response(const Error& e);
// 404 not_found for a session the caller may not reach, whether it exists or not.
HttpResponse session_not_found(const std::string& id);

bool is_sessions_path(const std::vector<std::string>& parts);  // /v1/sessions[/...]

// What every way into sessions shares (this API, the MCP server's session tools,
// mcp_server/mcp_session_tools.cpp), so that each decides the same:
// Whether `caller` may use sessions at all: forbidden for a token scoped to some tools.
Status may_use_sessions(const pipeline::Caller& caller);
// POST /v1/sessions's body: {template, idleTimeout?, labels?, fromSnapshot?}; invalid_input
// naming the field.
Result<SessionService::CreateRequest> parse_create_request(const std::string& body);
// A new session for `caller`: draining refused, a snapshot (the caller's own) resolved, the
// generation's credential broker given, then SessionService::create (access, quota, sandbox,
// record). Blocks: run it on a task of its own.
Result<std::shared_ptr<LiveSession>> create_session(const ApiServices& s, SessionService& sessions,
                                                    const Generation& generation, const pipeline::Caller& caller,
                                                    SessionService::CreateRequest request);

void handle_sessions(const ApiServices& services, SessionService& sessions, const HttpRequest& r,
                     const std::vector<std::string>& parts, std::function<void(HttpResponse)> reply);

}  // namespace airlock::server
