// The broker: leases a call's credentials before its sandbox starts and revokes them after it
// ends, with the lease store as the record of what is outstanding (docs/credentials.md,
// "Lifecycle").
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "creds/lease_store.hpp"
#include "creds/providers/provider.hpp"

namespace airlock::creds {

using Providers = std::map<std::string, std::shared_ptr<Provider>, std::less<>>;

// One credential a call holds: its lease, and the value (in memory only, for the call).
struct Leased {
  Lease lease;
  std::string value;
};

class Broker {
 public:
  Broker(LeaseStore& store, Providers providers) : store_(store), providers_(std::move(providers)) {}

  // Every credential of `specs`, in order, each stored as a lease before it is made. On a
  // failure the ones already made are revoked, and the error (its code the provider's:
  // credential_denied or credential_unavailable) names the variable and the provider.
  Result<std::vector<Leased>> lease(const std::vector<policy::CredentialSpec>& specs, const LeaseContext& context);

  // Ends each (every one is tried, newest first) and marks its lease revoked, or
  // revoke_failed when its provider could not end it (the credential's own expiry still
  // does). The values are wiped.
  Status revoke(std::vector<Leased>& leased);

  // At start: revokes every lease a previous daemon left outstanding.
  struct Recovery {
    int revoked = 0;
    int failed = 0;
    std::vector<std::string> errors;  // one per failure: lease id, provider, why
  };
  Recovery revoke_outstanding();
  // The same for one invocation's leases (failover: a dead replica's call; on a shared store
  // "every outstanding lease" would be the live replicas' too).
  Recovery revoke_of_invocation(const std::string& invocation_id);

 private:
  Result<Leased> lease_one(const policy::CredentialSpec& spec, const LeaseContext& context);
  Status revoke_one(Lease& lease, const std::string* value);
  Recovery revoke_left(Result<std::vector<Lease>> leases);  // those not revoked yet, without values
  Provider* provider(std::string_view kind) const;

  LeaseStore& store_;
  Providers providers_;
};

}  // namespace airlock::creds
