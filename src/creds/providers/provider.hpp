// A credential provider: makes a credential for a lease and ends it (docs/credentials.md).
// One instance per kind per configuration; thread-safe (calls run in parallel).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "creds/lease.hpp"
#include "policy/sections/credentials_config.hpp"

namespace airlock::creds {

// A secret's value by name (the daemon's SecretStore::get): how providers get admin URLs,
// client secrets and static values without holding the store.
using SecretLookup = std::function<Result<std::string>(const std::string& name)>;

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string_view kind() const = 0;  // "token", "postgres", "oauth-exchange", "secret"

  // What revoking the lease will need, decided before anything exists: the lease is stored
  // with it before issue() runs, so a crash in between leaves nothing unrevocable. Never a
  // secret. Error: the spec cannot be served (its server is not configured...).
  virtual Result<nlohmann::json> target(const policy::CredentialSpec& spec, const Lease& lease) const = 0;

  // Makes the credential. `lease` has its id and target. Errors name what failed and why,
  // never a secret value: "credential_unavailable" (an upstream or database failed),
  // "credential_denied" (the user may not have it: a scope, no user token).
  virtual Result<Issued> issue(const policy::CredentialSpec& spec, const Lease& lease,
                               const LeaseContext& context) = 0;

  // Ends it, so that it no longer works anywhere. `value`: the credential when this process
  // still holds it (a normal teardown); null at recovery after a crash. Idempotent: ending
  // what is already gone succeeds.
  virtual Status revoke(const Lease& lease, const std::string* value) = 0;
};

}  // namespace airlock::creds
