// /v1/sessions (docs/sessions.md): create, list, get and end sessions, and exec in them, for
// their owner only (anyone else gets 404, whether the session exists or not); readers with
// manage_sessions list and end every owner's.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "server/core/api_services.hpp"
#include "server/http/http_message.hpp"
#include "server/sessions/session_service.hpp"

namespace airlock::server {

// The answer to a refusal by its code (404 file_not_found, 409 session_paused, 413
// disk_limit, 429 quota_exceeded:<quota> naming the quota, ...).
HttpResponse session_error_response(const Error& e);
// 404 not_found for a session the caller may not reach, whether it exists or not.
HttpResponse session_not_found(const std::string& id);

bool is_sessions_path(const std::vector<std::string>& parts);  // /v1/sessions[/...]

void handle_sessions(const ApiServices& services, SessionService& sessions, const HttpRequest& r,
                     const std::vector<std::string>& parts, std::function<void(HttpResponse)> reply);

}  // namespace airlock::server
