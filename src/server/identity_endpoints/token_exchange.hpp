// POST /v1/token: OAuth 2.0 Token Exchange (RFC 8693). An agent trades a user's token (from a
// configured issuer) for Airlock's own short-lived token that names both: `sub` the user,
// `act.sub` the agent. The agent then calls with it as its bearer (docs/identity.md).
#pragma once

#include <map>
#include <string>

#include "common/result.hpp"
#include "identity/signer.hpp"
#include "pipeline/authenticator.hpp"
#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"

namespace airlock::server {

inline constexpr const char* kTokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange";
inline constexpr const char* kJwtTokenType = "urn:ietf:params:oauth:token-type:jwt";

// application/x-www-form-urlencoded: each name once (RFC 6749 section 3.2), percent-escapes
// well formed, '+' a space. Refuses anything else, naming what.
Result<std::map<std::string, std::string>> parse_form(const std::string& body);

// An OAuth error answer (RFC 6749 section 5.2), not cached; a 401 says WWW-Authenticate.
HttpResponse oauth_error(int status, const std::string& error, const std::string& description);

// Whether the request's body is a form (its Content-Type).
bool is_form(const HttpRequest& request);

HttpResponse exchange_token(const HttpRequest& request, const pipeline::Authenticator& authenticator,
                            const identity::TokenSigner& signer);

// GET /.well-known/jwks.json: the public key of Airlock's tokens.
HttpResponse jwks_response(const identity::TokenSigner& signer);

}  // namespace airlock::server
