// The web console at /console (docs/console.md): its page and assets (embedded at build
// time), sign-in and sign-out, and /console/api/..., which re-authenticates the session's
// credential on every request and hands it to the same /v1 code the API runs (RBAC, the
// approval service, the stores): the console decides nothing itself.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"
#include "server/console/console_oidc.hpp"
#include "server/console/console_session.hpp"

namespace airlock::server::console {

// The embedded assets (generated from assets/ by embed_assets.cmake).
struct Asset {
  const char* path;  // "index.html", "console.css", "console.js"
  const char* content_type;
  const char* body;
};
const Asset* find_asset(const std::string& name);

using Dispatch = std::function<void(const HttpRequest&, std::function<void(HttpResponse)>)>;

bool is_console_path(const std::vector<std::string>& parts);

// The "tool" a refused sign-in is counted under in the failed-authentication audit records.
inline constexpr const char* kSignInLabel = "(console sign-in)";

class Console {
 public:
  // `dispatch`: the API's own handler (Api::handle), which /console/api/... is forwarded to.
  // `refused_sign_in`: told the peer of each sign-in the authenticator refused.
  // The stores every replica shares (storage.postgres); null ones are this daemon's memory.
  struct Shared {
    std::shared_ptr<SessionStore> sessions;
    std::shared_ptr<PendingLogins> logins;
  };
  Console(const GenerationSlot& generation, Dispatch dispatch,
          std::function<void(const std::string& peer)> refused_sign_in = {}, SessionOptions options = {},
          Shared shared = {});
  void handle(const HttpRequest& request, const std::vector<std::string>& parts,
              std::function<void(HttpResponse)> reply);
  SessionStore& sessions() { return *sessions_; }
  OidcLogins& oidc_logins() { return oidc_; }

 private:
  HttpResponse sign_in(const HttpRequest& request, bool tls);
  HttpResponse session_info(const HttpRequest& request);
  HttpResponse sign_out(const HttpRequest& request, bool tls);
  void forward(const HttpRequest& request, const std::vector<std::string>& parts, bool tls,
               std::function<void(HttpResponse)> reply);
  HttpResponse describe(const std::string& credential, const std::string& csrf);
  // identity.console (console_oidc.hpp): GET /console/oidc, POST /console/oidc/login,
  // GET /console/oidc/callback.
  HttpResponse oidc(const HttpRequest& request, const std::vector<std::string>& parts, bool tls);
  HttpResponse oidc_login(const HttpRequest& request, bool tls);
  HttpResponse oidc_callback(const HttpRequest& request, bool tls);
  HttpResponse oidc_refused(const HttpRequest& request, int status, const std::string& kind, const std::string& why,
                            bool tls);

  const GenerationSlot& generation_;
  Dispatch dispatch_;
  std::function<void(const std::string&)> refused_sign_in_;
  std::shared_ptr<SessionStore> sessions_;
  OidcLogins oidc_;
};

// The /v1 target a /console/api/... request is forwarded to, or "" when it is not one the
// console uses (tool invocation, tokens and the rest are not reachable through it).
std::string forwarded_target(const std::string& method, const std::vector<std::string>& parts,
                             const std::string& target);

}  // namespace airlock::server::console
