// Where leases are kept: the table `leases` in the daemon's state database. A lease is written
// before its credential exists and marked revoked only once the credential is ended, so a
// daemon that dies at any point leaves a row saying what its successor must revoke.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "creds/lease.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace airlock::creds {

class LeaseStore {
 public:
  // Opens (creating the table in) the SQLite database at `path`: its own connection, so it
  // can share state.db with the invocation store.
  static Result<std::unique_ptr<LeaseStore>> open(const std::string& path);
  ~LeaseStore();

  Status add(const Lease& lease);  // a new lease, in state leasing
  // Its state and what issuing learned (scopes, expiry).
  Status update(const Lease& lease);
  // Leases not revoked yet (leasing, active, revoke_failed), oldest first.
  Result<std::vector<Lease>> outstanding();
  Result<std::vector<Lease>> of_invocation(const std::string& invocation_id);

 private:
  explicit LeaseStore(sqlite3* db) : db_(db) {}
  std::mutex mu_;
  sqlite3* db_;
  sqlite3_stmt* add_ = nullptr;
  sqlite3_stmt* update_ = nullptr;
};

// 32 random hex digits (128 bits from OpenSSL's generator).
Result<std::string> new_lease_id();

}  // namespace airlock::creds
