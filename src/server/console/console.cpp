#include "server/console/console.hpp"

#include "access/decide.hpp"
#include "common/json_limits.hpp"
#include "server/invocations/invocations_api.hpp"

namespace airlock::server::console {
namespace {

using nlohmann::json;

std::string session_id(const HttpRequest& r) {
  auto it = r.headers.find("cookie");
  return it == r.headers.end() ? "" : cookie_value(it->second, kCookieName);
}

bool is_get(const HttpRequest& r) { return r.method == "GET" || r.method == "HEAD"; }

HttpResponse asset_response(const Asset& asset) {
  HttpResponse resp;
  resp.content_type = asset.content_type;
  resp.body = asset.body;
  return resp;
}

HttpResponse redirect_to_console() {
  HttpResponse resp;
  resp.status = 308;
  resp.content_type = "text/plain; charset=utf-8";
  resp.body = "/console/\n";
  resp.headers.emplace_back("Location", "/console/");
  return resp;
}

HttpResponse signed_out(const std::string& why) {
  return error_response(401, "unauthenticated", why);
}

// The session store could not answer (the shared database is down, a sealed value does not
// open): the request is refused, never taken as signed in, nor as signed out.
HttpResponse store_failure(const Error& e) {
  return error_response(e.code == "storage_unavailable" ? 503 : 500, e.code, e.message);
}

// The part of the query string of `target`, with its '?', or "".
std::string query_of(const std::string& target) {
  const auto q = target.find('?');
  return q == std::string::npos ? "" : target.substr(q);
}

// Which API paths the console may use, by method.
bool allowed_forward(const std::string& method, const std::vector<std::string>& p) {
  const bool get = method == "GET" || method == "HEAD";
  const auto n = p.size();  // p: after "console", "api"
  if (n >= 1 && p[0] == "approvals")
    return (get && n <= 2) || (method == "POST" && n == 3 && (p[2] == "approve" || p[2] == "deny"));
  if (!get) return false;
  if (n >= 1 && p[0] == "invocations") return n <= 2;
  if (n == 1 && p[0] == "tools") return true;
  if (n == 2 && p[0] == "audit") return p[1] == "checkpoint" || p[1] == "verify";
  if (n >= 1 && p[0] == "sessions") return n <= 2 || (n == 3 && p[2] == "terminal");
  return n == 3 && p[0] == "audit" && p[1] == "proof";
}

}  // namespace

bool is_console_path(const std::vector<std::string>& parts) { return !parts.empty() && parts[0] == "console"; }

std::string forwarded_target(const std::string& method, const std::vector<std::string>& parts,
                             const std::string& target) {
  if (parts.size() < 3 || parts[0] != "console" || parts[1] != "api") return "";
  const std::vector<std::string> rest(parts.begin() + 2, parts.end());
  if (!allowed_forward(method, rest)) return "";
  std::string path = "/v1";
  for (const auto& p : rest) path += "/" + p;
  return path + query_of(target);
}

Console::Console(const GenerationSlot& generation, Dispatch dispatch,
                 std::function<void(const std::string& peer)> refused_sign_in, SessionOptions options,
                 Shared shared)
    : generation_(generation),
      dispatch_(std::move(dispatch)),
      refused_sign_in_(std::move(refused_sign_in)),
      sessions_(shared.sessions ? std::move(shared.sessions) : std::make_shared<MemorySessionStore>(options)),
      oidc_([](const identity::FetchRequest& request) { return identity::http_request(request, {}); },
            std::move(shared.logins)) {}

void Console::handle(const HttpRequest& r, const std::vector<std::string>& parts,
                     std::function<void(HttpResponse)> reply) {
  const bool tls = generation_.load()->config->server.tls.has_value();
  auto secured = [reply](HttpResponse resp) {
    add_security_headers(resp);
    reply(std::move(resp));
  };
  if (parts.size() == 1) {  // "/console": to "/console/", the page (relative URLs need the slash)
    if (!is_get(r)) return secured(error_response(405, "method_not_allowed", "use GET"));
    const bool slash = r.target.rfind("/console/", 0) == 0;
    return secured(slash ? asset_response(*find_asset("index.html")) : redirect_to_console());
  }
  if (parts.size() == 2 && parts[1] == "session") {
    if (r.method == "POST") return secured(sign_in(r, tls));
    if (r.method == "DELETE") return secured(sign_out(r, tls));
    if (is_get(r)) return secured(session_info(r));
    return secured(error_response(405, "method_not_allowed", "use GET, POST or DELETE"));
  }
  if (parts[1] == "oidc") return secured(oidc(r, parts, tls));
  if (parts.size() == 2) {
    const Asset* asset = find_asset(parts[1]);
    if (!asset || parts[1] == "index.html") return secured(error_response(404, "not_found", "no such console file"));
    if (!is_get(r)) return secured(error_response(405, "method_not_allowed", "use GET"));
    return secured(asset_response(*asset));
  }
  if (parts[1] != "api") return secured(error_response(404, "not_found", "no such console page"));
  forward(r, parts, tls, secured);
}

// POST /console/session {"credential": "<API key or user token>"}: authenticated exactly as
// the API authenticates a bearer; only then is a session made.
HttpResponse Console::sign_in(const HttpRequest& r, bool tls) {
  if (auto refused = cross_site_refusal(r, tls)) return error_response(403, "cross_site", *refused);
  auto parsed = parse_json_bounded(r.body, 4);
  if (!parsed || !parsed->is_object() || !parsed->contains("credential") || !(*parsed)["credential"].is_string())
    return error_response(400, "invalid_input", "the body must be {\"credential\": \"<API key or user token>\"}");
  const std::string credential = (*parsed)["credential"];
  auto who = generation_.load()->authenticator->authenticate({{"authorization", "Bearer " + credential}});
  if (const auto* refused = std::get_if<pipeline::InvocationError>(&who)) {
    if (refused_sign_in_) refused_sign_in_(r.peer);
    return error_response(401, "unauthenticated", "sign-in refused: " + refused->message);
  }
  const auto& caller = std::get<pipeline::Caller>(who);
  if (caller.credential != "api_key" && caller.credential != "user_token")
    return error_response(400, "invalid_input",
                          "the console takes an API key or a user token from a configured issuer, not a " +
                              caller.credential);
  // A new sign-in never reuses a session: the one this browser had (if any) ends.
  if (const std::string previous = session_id(r); !previous.empty())
    if (auto ended = sessions_->remove(previous); !ended) return store_failure(ended.error());
  auto made = sessions_->create(credential);
  if (!made) return store_failure(made.error());
  auto resp = describe(credential, made->csrf);
  resp.headers.emplace_back("Set-Cookie", session_cookie(made->id, tls));
  return resp;
}

// GET /console/session: who is signed in (re-authenticated now) and the CSRF token, so that a
// reloaded page goes on without signing in again. 401 when there is no live session.
HttpResponse Console::session_info(const HttpRequest& r) {
  auto session = sessions_->use(session_id(r));
  if (!session) return store_failure(session.error());
  if (!*session) return signed_out("not signed in (or the session expired)");
  return describe((*session)->credential, (*session)->csrf);
}

HttpResponse Console::sign_out(const HttpRequest& r, bool tls) {
  const std::string id = session_id(r);
  auto session = sessions_->use(id);
  if (!session) return store_failure(session.error());
  if (!*session) return signed_out("not signed in");
  if (auto refused = csrf_refusal(r, **session, tls)) return error_response(403, "csrf", *refused);
  if (auto ended = sessions_->remove(id); !ended) return store_failure(ended.error());
  auto resp = json_response(200, {{"signed_out", true}});
  resp.headers.emplace_back("Set-Cookie", cleared_cookie(tls));
  return resp;
}

// Who the credential names now, and what the console may offer them (display only: every
// request is decided again by the API).
HttpResponse Console::describe(const std::string& credential, const std::string& csrf) {
  const auto generation = generation_.load();
  auto who = generation->authenticator->authenticate({{"authorization", "Bearer " + credential}});
  if (const auto* refused = std::get_if<pipeline::InvocationError>(&who))
    return signed_out("the credential of this session is no longer accepted: " + refused->message);
  const auto& c = std::get<pipeline::Caller>(who);
  const pipeline::Actor* actor = c.actor ? &*c.actor : nullptr;
  const pipeline::Subject* subject = c.subject ? &*c.subject : nullptr;
  const auto& config = *generation->config;
  auto may = [&](policy::Action a) { return access::decide(config, actor, subject, a, "").allowed; };
  return json_response(
      200, {{"csrf", csrf},
            {"credential", c.credential},
            {"principal", actor ? json(actor->principal) : json()},
            {"subject", subject ? json{{"issuer", subject->issuer}, {"sub", subject->sub}} : json()},
            {"may", {{"read_all_invocations", may(policy::Action::read_all_invocations)},
                     {"read_audit", may(policy::Action::read_audit)}}}});
}

// ---- Sign in with the configured OpenID provider (identity.console) -----------------------

HttpResponse Console::oidc(const HttpRequest& r, const std::vector<std::string>& parts, bool tls) {
  const auto& config = generation_.load()->config->identity.console;
  if (!config) return error_response(404, "not_found", "no sign-in with an OpenID provider is configured (identity.console)");
  if (parts.size() == 2 && is_get(r)) return json_response(200, {{"issuer", config->issuer}});
  if (parts.size() == 3 && parts[2] == "login" && r.method == "POST") return oidc_login(r, tls);
  if (parts.size() == 3 && parts[2] == "callback" && is_get(r)) return oidc_callback(r, tls);
  return error_response(404, "not_found", "no such console endpoint (GET /console/oidc, POST /console/oidc/login, "
                                          "GET /console/oidc/callback)");
}

// POST /console/oidc/login: where to send the browser, and the cookie binding the login to it.
// A state change from the console's own page only, as a sign-in with a credential is.
HttpResponse Console::oidc_login(const HttpRequest& r, bool tls) {
  if (auto refused = cross_site_refusal(r, tls)) return error_response(403, "cross_site", *refused);
  const auto generation = generation_.load();
  const auto& config = *generation->config->identity.console;
  const auto* issuer = generation->config->identity.find_issuer(config.issuer);
  auto started = oidc_.start(config, issuer->issuer);
  if (!started && started.error().code.rfind("storage", 0) == 0) return store_failure(started.error());
  if (!started) return error_response(502, started.error().code, "sign-in with " + config.issuer + ": " + started.error().message);
  auto resp = json_response(200, {{"authorization_url", started->authorization_url}});
  resp.headers.emplace_back("Set-Cookie", oidc_cookie(started->binding, tls));
  return resp;
}

HttpResponse Console::oidc_refused(const HttpRequest& r, int status, const std::string& kind, const std::string& why,
                                   bool tls) {
  if (refused_sign_in_ && status == 401) refused_sign_in_(r.peer);
  auto resp = error_response(status, kind, "sign-in refused: " + why);
  resp.headers.emplace_back("Set-Cookie", cleared_oidc_cookie(tls));
  return resp;
}

// GET /console/oidc/callback?code=&state=: the provider sent the browser back. The login of
// `state` must be this browser's; the code is exchanged with its PKCE verifier; the ID token
// must be a user token of the configured issuer (verified as the API verifies any) for this
// login's nonce and the console's client. Then the session is made as by any sign-in.
HttpResponse Console::oidc_callback(const HttpRequest& r, bool tls) {
  auto param = [&](const char* name) {
    auto v = query_param(r.target, name);
    return v ? *v : std::string();
  };
  auto cookie = r.headers.find("cookie");
  const std::string binding = cookie == r.headers.end() ? "" : cookie_value(cookie->second, kOidcCookieName);
  auto login = oidc_.take(param("state"), binding);
  if (!login && login.error().code != "oidc_state") return store_failure(login.error());
  if (!login) return oidc_refused(r, 400, login.error().code, login.error().message, tls);
  if (const std::string error = param("error"); !error.empty())
    return oidc_refused(r, 401, "oidc_provider", "the provider answered " + error + ": " + param("error_description"), tls);
  const auto generation = generation_.load();
  const auto& config = *generation->config->identity.console;
  auto id_token = oidc_.exchange(config, *login, param("code"));
  if (!id_token) return oidc_refused(r, 401, id_token.error().code, id_token.error().message, tls);
  auto who = generation->authenticator->authenticate({{"authorization", "Bearer " + *id_token}});
  if (const auto* refused = std::get_if<pipeline::InvocationError>(&who))
    return oidc_refused(r, 401, "oidc_id_token", "the ID token is not a valid user token: " + refused->message, tls);
  const auto& caller = std::get<pipeline::Caller>(who);
  if (caller.credential != "user_token" || !caller.subject || caller.subject->issuer != config.issuer)
    return oidc_refused(r, 401, "oidc_id_token", "the ID token is not a user token of issuer " + config.issuer, tls);
  if (auto problem = id_token_problem(caller.subject->claims, login->nonce, config.client_id))
    return oidc_refused(r, 401, "oidc_id_token", *problem, tls);
  auto made = sessions_->create(*id_token);
  if (!made) return store_failure(made.error());
  HttpResponse resp;
  resp.status = 303;
  resp.content_type = "text/plain; charset=utf-8";
  resp.body = "/console/\n";
  resp.headers.emplace_back("Location", "/console/");
  resp.headers.emplace_back("Set-Cookie", session_cookie(made->id, tls));
  resp.headers.emplace_back("Set-Cookie", cleared_oidc_cookie(tls));
  return resp;
}

void Console::forward(const HttpRequest& r, const std::vector<std::string>& parts, bool tls,
                      std::function<void(HttpResponse)> reply) {
  auto found = sessions_->use(session_id(r));
  if (!found) return reply(store_failure(found.error()));
  if (!*found) return reply(signed_out("not signed in (or the session expired)"));
  const Session& session = **found;
  if (!is_get(r))
    if (auto refused = csrf_refusal(r, session, tls)) return reply(error_response(403, "csrf", *refused));
  const bool websocket = is_websocket_upgrade(r);
  if (websocket)
    if (auto refused = websocket_origin_refusal(r, tls)) return reply(error_response(403, "csrf", *refused));
  const std::string target = forwarded_target(r.method, parts, r.target);
  if (target.empty()) return reply(error_response(404, "not_found", "not an endpoint of the console"));
  HttpRequest inner;
  inner.method = r.method;
  inner.target = target;
  inner.headers = {{"authorization", "Bearer " + session.credential}, {"content-type", "application/json"}};
  if (auto host = r.headers.find("host"); host != r.headers.end()) inner.headers["host"] = host->second;
  if (websocket)  // a terminal: the upgrade's own headers go through, the answer is the upgrade
    for (const char* name : {"upgrade", "connection", "sec-websocket-key", "sec-websocket-version"})
      inner.headers[name] = r.headers.at(name);
  inner.body = r.body;
  inner.peer = r.peer;
  dispatch_(inner, [reply](HttpResponse resp) {
    // The API's own auth challenge means nothing to a page: drop it.
    std::erase_if(resp.headers, [](const auto& h) { return h.first == "WWW-Authenticate"; });
    reply(std::move(resp));
  });
}

}  // namespace airlock::server::console
