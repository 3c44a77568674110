// POST /v1/token/introspect (RFC 7662) and POST /v1/token/revoke (RFC 7009) for Airlock's own
// tokens: those of POST /v1/token and the `token` credentials tools are given (any audience).
// Either needs an authenticated caller (an API key, an agent's JWT, an Airlock token, a
// client certificate, a user's token): a resource server asks as itself (docs/identity.md).
#pragma once

#include <memory>

#include "common/result.hpp"
#include "creds/revoked_tokens.hpp"
#include "identity/signer.hpp"
#include "identity/verifier.hpp"
#include "pipeline/authenticator.hpp"
#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"

namespace airlock::server {

class TokenIntrospection {
 public:
  // Verifies with `signer`'s public key; `revoked` outlives this.
  static Result<std::unique_ptr<TokenIntrospection>> create(const identity::TokenSigner& signer,
                                                            creds::RevokedTokens& revoked);

  // {"active": true, "iss", "sub", "aud", "scope", "exp", "iat", "nbf", "jti", "act",
  // "client_id"} for an Airlock token that verifies, has not expired and is not revoked;
  // else exactly {"active": false}. 401 without a valid credential, 400 without `token`.
  HttpResponse introspect(const HttpRequest& request, const pipeline::Authenticator& authenticator) const;

  // Revokes an Airlock token of the caller's: one issued to its agent (act.sub, or sub for
  // an agent's own), or for its user. 200 also for a token that is invalid or unknown (RFC
  // 7009 2.2); 400 unauthorized_client for another's; 503 when the revocation could not be
  // stored (it holds in memory until a restart: retry).
  HttpResponse revoke(const HttpRequest& request, const pipeline::Authenticator& authenticator) const;

 private:
  TokenIntrospection(identity::Verifier verifier, creds::RevokedTokens& revoked)
      : verifier_(std::move(verifier)), revoked_(revoked) {}
  // A token of Airlock's, verified, whatever its audience, and not revoked; nullopt else.
  std::optional<identity::VerifiedToken> active(const std::string& token) const;

  identity::Verifier verifier_;
  creds::RevokedTokens& revoked_;
};

}  // namespace airlock::server
