#include "creds/revoked_tokens.hpp"

#include <sqlite3.h>

#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "common/utc_time.hpp"
#include "storage/sqlite_state.hpp"
#include "storage/state_location.hpp"

namespace airlock::creds {
namespace {

using Statement = storage::SqliteStatement;

// The SQLite store: the table, and all of it in memory.
class SqliteRevokedTokens final : public RevokedTokens {
 public:
  explicit SqliteRevokedTokens(sqlite3* db) : db_(db) {}
  ~SqliteRevokedTokens() override { sqlite3_close(db_); }
  Status revoke(const std::string& jti, std::chrono::system_clock::time_point expires_at) override;
  bool is_revoked(std::string_view jti) const override;
  std::size_t size() const override;
  Status load();

 private:
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

}  // namespace

Result<std::unique_ptr<RevokedTokens>> RevokedTokens::open(const std::string& path) {
  auto db = storage::open_sqlite_state(
      path, "CREATE TABLE IF NOT EXISTS revoked_tokens (jti TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL)",
      "revoked tokens");
  if (!db) return db.error();
  auto out = std::make_unique<SqliteRevokedTokens>(db->release());
  if (auto loaded = out->load(); !loaded) return loaded.error();
  return std::unique_ptr<RevokedTokens>(std::move(out));
}

Result<std::unique_ptr<RevokedTokens>> RevokedTokens::open(const storage::StateLocation& location) {
  if (location.is_postgres()) return open_postgres_revoked_tokens(location);
  return open(location.sqlite_path);
}

Status SqliteRevokedTokens::load() {
  purge_table(unix_ms_now());
  std::unique_lock lock(mu_);
  Statement s(db_, "SELECT jti, expires_ms FROM revoked_tokens");
  if (!s.ok()) return storage::sqlite_error(db_, "revoked tokens", "reading");
  int rc;
  while ((rc = s.step()) == SQLITE_ROW)
    if (!s.is_null(0)) revoked_[s.text(0)] = s.integer(1);
  if (rc != SQLITE_DONE) return storage::sqlite_error(db_, "revoked tokens", "reading");
  next_purge_ms_ = unix_ms_now() + kPurgeEveryMs;
  return {};
}

// At most once a minute (revoke asks): drops what expired more than kKeepAfterExpiry ago
// from memory, and says the table's turn has come.
bool SqliteRevokedTokens::purge_due(std::int64_t now) {
  if (now < next_purge_ms_) return false;
  next_purge_ms_ = now + kPurgeEveryMs;
  const std::int64_t before = now - kKeepAfterExpiryMs;
  std::erase_if(revoked_, [before](const auto& entry) { return entry.second < before; });
  return true;
}

void SqliteRevokedTokens::purge_table(std::int64_t now) {
  std::lock_guard db_lock(db_mu_);
  Statement s(db_, "DELETE FROM revoked_tokens WHERE expires_ms < ?");
  s.bind(1, now - kKeepAfterExpiryMs);
  (void)s.step();  // a purge that fails is retried at the next one
}

Status SqliteRevokedTokens::revoke(const std::string& jti, std::chrono::system_clock::time_point expires_at) {
  if (jti.empty()) return Error::make("invalid_argument", "a token without a jti cannot be revoked");
  const std::int64_t expires = unix_ms(expires_at), now = unix_ms_now();
  bool purge = false;
  {
    std::unique_lock lock(mu_);
    auto [it, added] = revoked_.emplace(jti, expires);
    if (!added) it->second = std::max(it->second, expires);
    purge = purge_due(now);
  }
  if (purge) purge_table(now);
  std::lock_guard db_lock(db_mu_);
  Statement s(db_,
              "INSERT INTO revoked_tokens (jti, expires_ms) VALUES (?, ?) "
              "ON CONFLICT(jti) DO UPDATE SET expires_ms = max(expires_ms, excluded.expires_ms)");
  s.bind(1, jti);
  s.bind(2, expires);
  if (!s.step_done()) return storage::sqlite_error(db_, "revoked tokens", "recording a revocation");
  return {};
}

bool SqliteRevokedTokens::is_revoked(std::string_view jti) const {
  std::shared_lock lock(mu_);
  return revoked_.find(jti) != revoked_.end();
}

std::size_t SqliteRevokedTokens::size() const {
  std::shared_lock lock(mu_);
  return revoked_.size();
}

}  // namespace airlock::creds
