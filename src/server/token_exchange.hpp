// POST /v1/token: OAuth 2.0 Token Exchange (RFC 8693). An agent trades a user's token (from a
// configured issuer) for Airlock's own short-lived token that names both: `sub` the user,
// `act.sub` the agent. The agent then calls with it as its bearer (docs/identity.md).
#pragma once

#include <map>
#include <string>

#include "common/result.hpp"
#include "identity/signer.hpp"
#include "pipeline/authenticator.hpp"
#include "server/api.hpp"

namespace airlock::server {

inline constexpr const char* kTokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange";
inline constexpr const char* kJwtTokenType = "urn:ietf:params:oauth:token-type:jwt";

// application/x-www-form-urlencoded: each name once (RFC 6749 section 3.2), percent-escapes
// well formed, '+' a space. Refuses anything else, naming what.
Result<std::map<std::string, std::string>> parse_form(const std::string& body);

HttpResponse exchange_token(const HttpRequest& request, const pipeline::Authenticator& authenticator,
                            const identity::TokenSigner& signer);

// GET /.well-known/jwks.json: the public key of Airlock's tokens.
HttpResponse jwks_response(const identity::TokenSigner& signer);

}  // namespace airlock::server
