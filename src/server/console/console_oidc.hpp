// The console's "Sign in with <issuer>" (identity.console, docs/console.md): OpenID Connect's
// authorization code flow with PKCE (RFC 7636, S256), done by the server so that no token ever
// reaches the page. A login is started by the page (POST /console/oidc/login): a random state,
// nonce and code verifier are kept here, bound to the browser by a cookie; the provider sends
// the browser back to /console/oidc/callback, whose code is exchanged at the token endpoint with
// the verifier. The ID token is then verified by the caller exactly as any user token, plus
// the checks of id_token_problem().
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "identity/http_fetch.hpp"
#include "policy/sections/identity_config.hpp"
#include "server/console/console_oidc_logins.hpp"

namespace airlock::server::console {

// Binds a login to the browser that started it: HttpOnly, Path=/console/oidc, SameSite=Lax
// (the provider's redirect back is a cross-site top-level navigation, which Strict would not
// carry it on).
inline constexpr const char* kOidcCookieName = "airlock_console_oidc";

std::string oidc_cookie(const std::string& binding, bool secure);
std::string cleared_oidc_cookie(bool secure);

// The provider's endpoints, from its discovery document (OpenID Connect Discovery 1.0), whose
// `issuer` must be `expected_iss` exactly.
struct ProviderEndpoints {
  std::string authorization, token;
};
Result<ProviderEndpoints> provider_endpoints(const std::string& discovery_document, const std::string& expected_iss);

// RFC 7636: a 256-bit verifier (base64url, 43 characters) and its S256 challenge.
struct Pkce {
  std::string verifier, challenge;
};
Result<Pkce> make_pkce();
std::string s256_challenge(const std::string& verifier);

// What an ID token must say besides what makes it a valid user token of the issuer (the
// verifier checks signature, iss, exp, nbf, iat and that aud names one of the issuer's
// audiences): the nonce of this login, aud naming the client, and azp the client when aud
// names others too (OpenID Connect Core 3.1.3.7). Why it is refused, or none.
std::optional<std::string> id_token_problem(const nlohmann::json& claims, const std::string& nonce,
                                            const std::string& client_id);

class OidcLogins {
 public:
  using Fetch = std::function<Result<identity::FetchResponse>(const identity::FetchRequest&)>;
  // `pending`: where logins wait for their callback (null: this daemon's memory).
  explicit OidcLogins(Fetch fetch, std::shared_ptr<PendingLogins> pending = nullptr);

  struct Started {
    std::string authorization_url;  // where the page sends the browser
    std::string binding;            // for kOidcCookieName
  };
  // Fetches the discovery document of `config`, whose issuer must be `iss`.
  Result<Started> start(const policy::ConsoleSignInConfig& config, const std::string& iss);

  using Pending = PendingLogin;
  // The pending login of `state`, which ends now (a state is used once). Refused (code
  // "oidc_state") when unknown, expired, or started by another browser (`binding`).
  Result<Pending> take(const std::string& state, const std::string& binding);

  // The ID token the token endpoint gives for `code` (the verifier sent with it). Refused
  // (code "oidc_exchange") with the provider's error.
  Result<std::string> exchange(const policy::ConsoleSignInConfig& config, const Pending& login, const std::string& code);

  PendingLogins& pending() { return *pending_; }

 private:
  Fetch fetch_;
  std::shared_ptr<PendingLogins> pending_;
};

}  // namespace airlock::server::console
