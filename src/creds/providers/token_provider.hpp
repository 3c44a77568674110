// The `token` provider: a JWT Airlock mints for one call of one tool (EdDSA, Airlock's token
// key), for a downstream service that verifies it with /.well-known/jwks.json and, to learn
// that it was revoked, POST /v1/token/introspect.
//
//   iss  "airlock"                  aud  the spec's audience (never "airlock")
//   sub  the user (call on behalf of one), else the agent itself
//   act  {"sub": the agent} when there is a user; absent otherwise (RFC 8693 4.1)
//   airlock_user_issuer  the configured issuer of `sub`, when it is a user
//   scope  the spec's scopes, narrowed to the user's when their token has a scope claim
//   iat, nbf  now;  exp  now + min(ttl, the call's max_ttl);  jti  the lease id
//   airlock_invocation, airlock_tool  the call it was made for
//
// Revoking adds the jti to RevokedTokens: introspection then answers inactive, and Airlock's
// own API refuses it anyway (its audience is not "airlock").
#pragma once

#include <string>

#include "creds/providers/provider.hpp"
#include "creds/revoked_tokens.hpp"
#include "identity/signer.hpp"

namespace airlock::creds {

// The audience of Airlock's own API (pipeline::kAirlockTokenAudience): a tool's credential
// must never be one Airlock itself accepts.
inline constexpr const char* kAirlockAudience = "airlock";

class TokenProvider : public Provider {
 public:
  TokenProvider(const identity::TokenSigner& signer, std::string issuer, RevokedTokens& revoked)
      : signer_(signer), issuer_(std::move(issuer)), revoked_(revoked) {}

  std::string_view kind() const override { return "token"; }
  Result<nlohmann::json> target(const policy::CredentialSpec& spec, const Lease& lease) const override;
  Result<Issued> issue(const policy::CredentialSpec& spec, const Lease& lease, const LeaseContext& context) override;
  Status revoke(const Lease& lease, const std::string* value) override;

  // The claims issue() signs (for tests and the benchmark's reference row).
  Result<nlohmann::json> claims(const policy::CredentialSpec& spec, const Lease& lease,
                                const LeaseContext& context) const;

 private:
  const identity::TokenSigner& signer_;
  std::string issuer_;
  RevokedTokens& revoked_;
};

}  // namespace airlock::creds
