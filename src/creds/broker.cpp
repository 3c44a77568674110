#include "creds/broker.hpp"

#include "creds/wipe.hpp"

namespace airlock::creds {

Provider* Broker::provider(std::string_view kind) const {
  auto it = providers_.find(kind);
  return it == providers_.end() ? nullptr : it->second.get();
}

Result<Leased> Broker::lease_one(const policy::CredentialSpec& spec, const LeaseContext& context) {
  const std::string what = spec.env + " (" + std::string(spec.provider()) + ")";
  Provider* p = provider(spec.provider());
  if (!p) return Error::make("credential_unavailable", what + ": no " + std::string(spec.provider()) + " provider runs here");
  auto id = new_lease_id();
  if (!id) return id.error();
  Leased out;
  Lease& lease = out.lease;
  lease.id = *id;
  lease.invocation_id = context.invocation_id;
  lease.tool = context.tool;
  lease.env = spec.env;
  lease.provider = std::string(spec.provider());
  lease.issued_at = context.now;
  lease.expires_at = context.now + context.max_ttl;
  auto target = p->target(spec, lease);
  if (!target) return Error::make(target.error().code, what + ": " + target.error().message);
  lease.target = std::move(*target);
  // Stored first: a daemon killed from here on leaves a row its successor revokes.
  if (auto s = store_.add(lease); !s)
    return Error::make("credential_unavailable", what + ": the lease could not be stored: " + s.error().message);
  auto issued = p->issue(spec, lease, context);
  if (!issued) {
    (void)revoke_one(lease, nullptr);  // whatever was half made
    return Error::make(issued.error().code, what + ": " + issued.error().message);
  }
  // The row is not written again until revocation (with the scopes and expiry learned here):
  // leasing and active are the same to recovery, and a write is most of a lease's cost.
  out.value = std::move(issued->value);
  lease.scopes = std::move(issued->scopes);
  if (issued->expires_at != Clock::time_point{}) lease.expires_at = issued->expires_at;
  lease.state = Lease::State::active;
  return out;
}

Result<std::vector<Leased>> Broker::lease(const std::vector<policy::CredentialSpec>& specs,
                                          const LeaseContext& context) {
  std::vector<Leased> leased;
  for (const auto& spec : specs) {
    auto one = lease_one(spec, context);
    if (!one) {
      (void)revoke(leased);
      return one.error();
    }
    leased.push_back(std::move(*one));
  }
  return leased;
}

Status Broker::revoke_one(Lease& lease, const std::string* value) {
  Provider* p = provider(lease.provider);
  Status ended = p ? p->revoke(lease, value)
                   : Status(Error::make("credential_unavailable", "no " + lease.provider + " provider runs here"));
  lease.state = ended ? Lease::State::revoked : Lease::State::revoke_failed;
  Status stored = store_.update(lease);
  if (!ended) return ended;
  return stored;
}

Status Broker::revoke(std::vector<Leased>& leased) {
  Status first;
  for (auto it = leased.rbegin(); it != leased.rend(); ++it) {
    Status s = revoke_one(it->lease, &it->value);
    wipe_secret(it->value);
    if (!s && first) first = Error::make(s.error().code, it->lease.env + " (" + it->lease.provider + "): " + s.error().message);
  }
  return first;
}

Broker::Recovery Broker::revoke_outstanding() { return revoke_left(store_.outstanding()); }

Broker::Recovery Broker::revoke_of_invocation(const std::string& invocation_id) {
  return revoke_left(store_.of_invocation(invocation_id));
}

Broker::Recovery Broker::revoke_left(Result<std::vector<Lease>> leases) {
  Recovery r;
  if (!leases) {
    r.errors.push_back(leases.error().message);
    ++r.failed;
    return r;
  }
  for (auto& lease : *leases) {
    if (lease.state == Lease::State::revoked) continue;
    if (auto s = revoke_one(lease, nullptr); s) {
      ++r.revoked;
    } else {
      ++r.failed;
      r.errors.push_back("lease " + lease.id + " (" + lease.provider + ", tool " + lease.tool + "): " + s.error().message);
    }
  }
  return r;
}

}  // namespace airlock::creds
