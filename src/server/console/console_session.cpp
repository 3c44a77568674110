#include "server/console/console_session.hpp"

#include <openssl/crypto.h>

namespace airlock::server::console {
namespace {

std::string header(const HttpRequest& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string session_cookie(const std::string& id, bool secure) {
  return std::string(kCookieName) + "=" + id + "; Path=/console; HttpOnly; SameSite=Strict" +
         (secure ? "; Secure" : "");
}

std::string cleared_cookie(bool secure) {
  return std::string(kCookieName) + "=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict" +
         (secure ? "; Secure" : "");
}

std::string cookie_value(std::string_view cookie_header, std::string_view name) {
  while (!cookie_header.empty()) {
    const auto semi = cookie_header.find(';');
    const std::string_view pair = trim(cookie_header.substr(0, semi));
    cookie_header = semi == std::string_view::npos ? std::string_view() : cookie_header.substr(semi + 1);
    const auto eq = pair.find('=');
    if (eq != std::string_view::npos && trim(pair.substr(0, eq)) == name) return std::string(trim(pair.substr(eq + 1)));
  }
  return "";
}

std::optional<std::string> cross_site_refusal(const HttpRequest& r, bool tls) {
  const std::string origin = header(r, "origin"), fetch_site = header(r, "sec-fetch-site");
  const std::string host = header(r, "host");
  if (origin.empty() && fetch_site.empty())
    return "a state change needs the Origin or Sec-Fetch-Site header a browser sends; neither was sent";
  if (!origin.empty() && (host.empty() || origin != (tls ? "https://" : "http://") + host))
    return "Origin " + origin + " is not this console's origin: cross-site requests are refused";
  if (!fetch_site.empty() && fetch_site != "same-origin")
    return "Sec-Fetch-Site is " + fetch_site + ", not same-origin: cross-site requests are refused";
  const std::string type = header(r, "content-type");
  if (type.rfind("application/json", 0) != 0)
    return "a state change must be sent as application/json";
  return std::nullopt;
}

std::optional<std::string> websocket_origin_refusal(const HttpRequest& r, bool tls) {
  const std::string origin = header(r, "origin"), host = header(r, "host");
  if (origin.empty()) return "a WebSocket from the console needs the Origin header a browser sends";
  if (host.empty() || origin != (tls ? "https://" : "http://") + host)
    return "Origin " + origin + " is not this console's origin: cross-site WebSockets are refused";
  return std::nullopt;
}

std::optional<std::string> csrf_refusal(const HttpRequest& r, const Session& session, bool tls) {
  if (auto refused = cross_site_refusal(r, tls)) return refused;
  const std::string token = header(r, kCsrfHeader);
  if (token.empty()) return "the CSRF token (header X-Airlock-CSRF) is missing";
  if (!constant_time_equal(token, session.csrf)) return "the CSRF token (header X-Airlock-CSRF) is not this session's";
  return std::nullopt;
}

void add_security_headers(HttpResponse& response) {
  response.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  response.headers.emplace_back("Cache-Control", "no-store");
  response.headers.emplace_back("X-Frame-Options", "DENY");
}

}  // namespace airlock::server::console
