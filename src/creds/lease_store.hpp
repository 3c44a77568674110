// Where leases are kept: the table `leases` in the daemon's state database (state.db, or
// storage.postgres). A lease is written
// before its credential exists and marked revoked only once the credential is ended, so a
// daemon that dies at any point leaves a row saying what its successor must revoke.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "creds/lease.hpp"

namespace airlock::storage {
struct StateLocation;
}

namespace airlock::creds {

// One interface, two stores: SQLite (<dataDir>/state.db, one daemon) and PostgreSQL
// (storage.postgres, every replica's leases in one table, so a replica can revoke what a dead
// one leased).
class LeaseStore {
 public:
  // The store `location` names (the table created when missing).
  static Result<std::unique_ptr<LeaseStore>> open(const storage::StateLocation& location);
  // The SQLite store in the file at `path`: its own connection, so it can share state.db
  // with the invocation store.
  static Result<std::unique_ptr<LeaseStore>> open(const std::string& path);
  virtual ~LeaseStore() = default;

  virtual Status add(const Lease& lease) = 0;  // a new lease, in state leasing
  // Its state and what issuing learned (scopes, expiry).
  virtual Status update(const Lease& lease) = 0;
  // Leases not revoked yet (leasing, active, revoke_failed), oldest first.
  virtual Result<std::vector<Lease>> outstanding() = 0;
  virtual Result<std::vector<Lease>> of_invocation(const std::string& invocation_id) = 0;
};

// The PostgreSQL store (creds/lease_store_pg.cpp).
Result<std::unique_ptr<LeaseStore>> open_postgres_lease_store(const storage::StateLocation& location);

// 32 random hex digits (128 bits from OpenSSL's generator).
Result<std::string> new_lease_id();

}  // namespace airlock::creds
