// The JWT ids Airlock has revoked (its `token` credentials and the tokens of POST /v1/token),
// until the tokens expire: table revoked_tokens(jti, expires_ms) in the daemon's state
// database. SQLite (one daemon): all of it in memory too, so that asking costs a hash lookup.
// PostgreSQL (replicas): each question asks the shared table. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock::storage {
struct StateLocation;
}

namespace airlock::creds {

class RevokedTokens {
 public:
  // An entry is kept this long after its token expires: verifiers accept a token for a
  // clock skew past its exp (identity::VerifierOptions::skew, 60 s).
  static constexpr std::chrono::seconds kKeepAfterExpiry{300};
  static constexpr std::int64_t kKeepAfterExpiryMs = std::chrono::milliseconds(kKeepAfterExpiry).count();
  // Entries past kKeepAfterExpiry are purged at most this often (a revoke does it).
  static constexpr std::int64_t kPurgeEveryMs = 60'000;

  // The store `location` names: SQLite below, or PostgreSQL (storage.postgres), where every
  // replica asks the shared table, so a token revoked on one is refused on all.
  static Result<std::unique_ptr<RevokedTokens>> open(const storage::StateLocation& location);
  // Opens (creating the table when missing) the SQLite file `path`, its own connection (WAL,
  // busy timeout), and loads what is not yet expired. Error: "storage".
  static Result<std::unique_ptr<RevokedTokens>> open(const std::string& path);
  RevokedTokens() = default;
  virtual ~RevokedTokens() = default;
  RevokedTokens(const RevokedTokens&) = delete;
  RevokedTokens& operator=(const RevokedTokens&) = delete;

  // Durable when it returns ok. Idempotent (a later expiry wins). Error: "storage"; the jti
  // is then revoked in memory all the same, for as long as this process lives.
  virtual Status revoke(const std::string& jti, std::chrono::system_clock::time_point expires_at) = 0;
  // PostgreSQL: true also when the database cannot say (fail closed).
  virtual bool is_revoked(std::string_view jti) const = 0;
  virtual std::size_t size() const = 0;  // entries not yet purged
};

// The PostgreSQL store (creds/revoked_tokens_pg.cpp).
Result<std::unique_ptr<RevokedTokens>> open_postgres_revoked_tokens(const storage::StateLocation& location);

}  // namespace airlock::creds
