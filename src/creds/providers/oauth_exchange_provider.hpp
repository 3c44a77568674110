// The `oauth-exchange` provider: the user's token exchanged (RFC 8693) at an upstream security
// token service for one with the tool's audience and scopes, revoked (RFC 7009) at the
// upstream's revocation endpoint when the call ends.
//
// Client authentication, from the spec: client_id and client_secret -> HTTP Basic (RFC 6749
// 2.3.1); client_secret alone -> `Authorization: Bearer <the secret's value>` (how an agent
// authenticates to Airlock's own POST /v1/token); client_id alone -> client_id in the form.
//
// After a crash the token's value is gone (it is never stored): revoke() can then do nothing,
// succeeds, and the upstream token expires on its own (its expires_in, at most the call's
// max_ttl as Airlock records it; the upstream decides its real lifetime).
#pragma once

#include <functional>
#include <string>

#include "creds/providers/provider.hpp"
#include "identity/http_fetch.hpp"

namespace airlock::creds {

inline constexpr const char* kTokenExchangeGrantType = "urn:ietf:params:oauth:grant-type:token-exchange";
inline constexpr const char* kJwtTokenType = "urn:ietf:params:oauth:token-type:jwt";

class OAuthExchangeProvider : public Provider {
 public:
  // A secret's value by its name (SecretStore::get).


  explicit OAuthExchangeProvider(SecretLookup secrets, identity::FetchOptions fetch = default_fetch())
      : secrets_(std::move(secrets)), fetch_(std::move(fetch)) {}

  std::string_view kind() const override { return "oauth-exchange"; }
  // {"token_endpoint", "revocation_endpoint", "client_id", "client_secret_name", "ca_file"}:
  // what revoking needs; the secret's name, never its value.
  Result<nlohmann::json> target(const policy::CredentialSpec& spec, const Lease& lease) const override;
  Result<Issued> issue(const policy::CredentialSpec& spec, const Lease& lease, const LeaseContext& context) override;
  Status revoke(const Lease& lease, const std::string* value) override;

  static identity::FetchOptions default_fetch();

 private:
  struct Client;
  Result<Client> client(const nlohmann::json& target) const;

  SecretLookup secrets_;
  identity::FetchOptions fetch_;
};

}  // namespace airlock::creds
