// The `secret` provider: a static value from Airlock's encrypted store, given as it is. There
// is nothing to end at revocation (the value outlives the call; rotate it with
// `airlock secrets set`), so a lease of it bounds only how long the tool holds it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "creds/providers/provider.hpp"

namespace airlock::creds {

class SecretStore;

class SecretProvider : public Provider {
 public:
  // The value of a secret by name; errors as SecretStore::get's ("unknown_secret", ...).
  using Lookup = SecretLookup;

  explicit SecretProvider(Lookup lookup) : lookup_(std::move(lookup)) {}
  // A lookup reading `store` afresh on every call.
  static Lookup lookup_in(std::shared_ptr<const SecretStore> store);

  std::string_view kind() const override { return "secret"; }
  // {"secret": NAME}.
  Result<nlohmann::json> target(const policy::CredentialSpec& spec,
                                const Lease& lease) const override;
  // The value, scopes ["secret:NAME"], ending with the lease's longest lifetime.
  Result<Issued> issue(const policy::CredentialSpec& spec, const Lease& lease,
                       const LeaseContext& context) override;
  // Nothing to end: succeeds.
  Status revoke(const Lease& lease, const std::string* value) override;

 private:
  Lookup lookup_;
};

}  // namespace airlock::creds
