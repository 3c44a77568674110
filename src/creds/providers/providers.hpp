// The providers of one configuration, built from what the daemon shares with all of them:
// its token key and revocation list, and its secret store.
#pragma once

#include "creds/broker.hpp"
#include "policy/config.hpp"

namespace airlock::identity {
class TokenSigner;
}

namespace airlock::creds {

class RevokedTokens;

struct ProviderServices {
  const identity::TokenSigner* signer = nullptr;  // null: no token provider
  RevokedTokens* revoked = nullptr;
  SecretLookup secrets;  // empty: no provider that needs a secret
  std::string token_issuer = "airlock";
};

// One provider per kind the services allow; a kind left out fails its credentials with
// credential_unavailable ("no ... provider runs here").
Providers make_providers(const policy::Config& config, const ProviderServices& services);

}  // namespace airlock::creds
