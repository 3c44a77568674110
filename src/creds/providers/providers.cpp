#include "creds/providers/providers.hpp"

#include "creds/providers/oauth_exchange_provider.hpp"
#include "creds/providers/postgres_provider.hpp"
#include "creds/providers/secret_provider.hpp"
#include "creds/providers/token_provider.hpp"

namespace airlock::creds {

Providers make_providers(const policy::Config& config, const ProviderServices& services) {
  Providers providers;
  if (services.signer && services.revoked)
    providers["token"] = std::make_shared<TokenProvider>(*services.signer, services.token_issuer, *services.revoked);
  if (!services.secrets) return providers;
  const SecretLookup& lookup = services.secrets;
  providers["secret"] = std::make_shared<SecretProvider>(lookup);
  providers["postgres"] = std::make_shared<PostgresProvider>(config.credential_servers, lookup);
  providers["oauth-exchange"] = std::make_shared<OAuthExchangeProvider>(lookup);
  return providers;
}

}  // namespace airlock::creds
