// The revoked token ids in PostgreSQL (storage.postgres). Every replica asks the shared table
// at each question (one indexed lookup), so a token revoked on one replica is refused by
// introspection and by the authenticator on every other one at once: no cache to go stale.
// A question the database cannot answer is answered "revoked" (fail closed: a call with
// Airlock's token then fails as every call does while the database is away). What this
// replica revoked is also kept in memory, so it is refused here even if recording it failed.
#include <mutex>
#include <unordered_map>

#include "creds/revoked_tokens.hpp"
#include "common/utc_time.hpp"
#include "storage/pg_schema.hpp"
#include "storage/state_location.hpp"

namespace airlock::creds {
namespace {

namespace pg = storage::pg;

constexpr const char* kRevokedPgSchema =
    "CREATE TABLE IF NOT EXISTS revoked_tokens (jti text PRIMARY KEY, expires_ms bigint NOT NULL);";

class PgRevokedTokens final : public RevokedTokens {
 public:
  explicit PgRevokedTokens(std::unique_ptr<pg::Database> db) : db_(std::move(db)) {}

  Status revoke(const std::string& jti, std::chrono::system_clock::time_point expires_at) override {
    if (jti.empty()) return Error::make("invalid_argument", "a token without a jti cannot be revoked");
    const std::int64_t expires = unix_ms(expires_at), now = unix_ms_now();
    bool purge = false;
    {
      std::lock_guard lock(mu_);
      auto [it, added] = local_.emplace(jti, expires);
      if (!added) it->second = std::max(it->second, expires);
      if (now >= next_purge_ms_) {
        next_purge_ms_ = now + kPurgeEveryMs;
        std::erase_if(local_, [before = now - kKeepAfterExpiryMs](const auto& e) { return e.second < before; });
        purge = true;
      }
    }
    const std::string before = std::to_string(now - kKeepAfterExpiryMs);
    if (purge)  // a purge that fails is retried at the next one
      (void)db_->exec("purging revoked tokens", "DELETE FROM revoked_tokens WHERE expires_ms < $1", {before});
    auto done = db_->exec("recording a revocation",
                          "INSERT INTO revoked_tokens (jti, expires_ms) VALUES ($1, $2) ON CONFLICT (jti)"
                          " DO UPDATE SET expires_ms = GREATEST(revoked_tokens.expires_ms, excluded.expires_ms)",
                          {jti, std::to_string(expires)});
    if (!done) return Error::make("storage", "revoked tokens: " + done.error().message);
    return {};
  }

  bool is_revoked(std::string_view jti) const override {
    {
      std::lock_guard lock(mu_);
      if (local_.count(std::string(jti))) return true;
    }
    auto row = db_->exec("looking a revocation up", "SELECT 1 FROM revoked_tokens WHERE jti = $1", {std::string(jti)});
    return !row || row->rows() > 0;
  }

  std::size_t size() const override {
    auto row = db_->exec("counting revoked tokens", "SELECT count(*) FROM revoked_tokens WHERE expires_ms >= $1",
                         {std::to_string(unix_ms_now() - kKeepAfterExpiryMs)});
    return row && row->rows() == 1 ? static_cast<std::size_t>(std::stoull(row->value(0, 0))) : 0;
  }

 private:
  std::unique_ptr<pg::Database> db_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::int64_t> local_;  // revoked here: jti -> expires_ms
  std::int64_t next_purge_ms_ = 0;
};

}  // namespace

Result<std::unique_ptr<RevokedTokens>> open_postgres_revoked_tokens(const storage::StateLocation& location) {
  auto db = pg::Database::open(location.postgres, "the state database (revoked tokens)");
  if (!db) return db.error();
  if (auto made = pg::create_schema(**db, "creating the revoked tokens table", kRevokedPgSchema); !made) return made.error();
  return std::unique_ptr<RevokedTokens>(std::make_unique<PgRevokedTokens>(std::move(*db)));
}

}  // namespace airlock::creds
