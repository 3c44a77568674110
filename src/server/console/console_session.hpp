// The web console's sessions and request checks (docs/console.md): a server-side session per
// sign-in (a random 256-bit id in an HttpOnly cookie, the credential kept here and never sent
// back), its CSRF token, the Origin / Sec-Fetch-Site check of every state change, and the
// headers every console response carries.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"
#include "server/console/console_session_store.hpp"

namespace airlock::server::console {

inline constexpr const char* kCookieName = "airlock_console";
inline constexpr const char* kCsrfHeader = "x-airlock-csrf";  // lower case, as HttpRequest keeps it

// The Set-Cookie value of a session: HttpOnly, SameSite=Strict, Path=/console, and Secure
// when served over TLS. Its clearing twin (Max-Age=0) for sign-out.
std::string session_cookie(const std::string& id, bool secure);
std::string cleared_cookie(bool secure);
// The value of cookie `name` in a Cookie header; "" when absent.
std::string cookie_value(std::string_view cookie_header, std::string_view name);

// Why a state-changing request is refused before its session is looked at, or none: it must
// come from the console's own origin (Origin equal to this server's, or Sec-Fetch-Site:
// same-origin; neither present is refused) and carry JSON (a form cannot post it).
std::optional<std::string> cross_site_refusal(const HttpRequest& request, bool tls);
// The same plus the session's CSRF token in kCsrfHeader (compared in constant time).
std::optional<std::string> csrf_refusal(const HttpRequest& request, const Session& session, bool tls);
// A WebSocket upgrade (a session's terminal) under the session's cookie: its Origin, which a
// browser always sends on one and a page cannot forge, must be this console's (a WebSocket
// API cannot send the CSRF header; cross-site WebSocket hijacking is what this refuses).
std::optional<std::string> websocket_origin_refusal(const HttpRequest& request, bool tls);

// Content-Security-Policy, X-Content-Type-Options, Referrer-Policy, Cache-Control and
// X-Frame-Options: on every console response.
void add_security_headers(HttpResponse& response);
inline constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

}  // namespace airlock::server::console
