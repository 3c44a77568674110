// The JWT ids Airlock has revoked (its `token` credentials and the tokens of POST /v1/token),
// until the tokens expire: table revoked_tokens(jti, expires_ms) in the daemon's state
// database, and all of it in memory, so that asking costs a hash lookup. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/result.hpp"

struct sqlite3;

namespace airlock::creds {

class RevokedTokens {
 public:
  // An entry is kept this long after its token expires: verifiers accept a token for a
  // clock skew past its exp (identity::VerifierOptions::skew, 60 s).
  static constexpr std::chrono::seconds kKeepAfterExpiry{300};

  // Opens (creating the table when missing) `path`, its own connection (WAL, busy timeout),
  // and loads what is not yet expired. Error: "storage".
  static Result<std::unique_ptr<RevokedTokens>> open(const std::string& path);
  ~RevokedTokens();
  RevokedTokens(const RevokedTokens&) = delete;
  RevokedTokens& operator=(const RevokedTokens&) = delete;

  // Durable when it returns ok. Idempotent (a later expiry wins). Error: "storage"; the jti
  // is then revoked in memory all the same, for as long as this process lives.
  Status revoke(const std::string& jti, std::chrono::system_clock::time_point expires_at);
  bool is_revoked(std::string_view jti) const;
  std::size_t size() const;

 private:
  explicit RevokedTokens(sqlite3* db) : db_(db) {}
  Status load();
  bool purge_due(std::int64_t now_ms);  // with mu_ held exclusively; drops the expired
  void purge_table(std::int64_t now_ms);

  struct Hash {  // lets is_revoked look a string_view up without a copy
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  sqlite3* db_;
  std::mutex db_mu_;  // the connection: writes do not hold mu_, so lookups never wait on SQLite
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::int64_t, Hash, std::equal_to<>> revoked_;  // jti -> expires_ms
  std::int64_t next_purge_ms_ = 0;
};

}  // namespace airlock::creds
