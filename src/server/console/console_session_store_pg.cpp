// The console's sessions in the database every replica shares (storage.postgres). A row is
// keyed by the SHA-256 of the session id (the id itself, the cookie's value, is never stored);
// the credential and the CSRF token are sealed with the secret store's key, their associated
// data naming the row and the column, so a database reader gets neither and a row's sealed
// values copied under another key do not open.
#include <algorithm>

#include "common/digest.hpp"
#include "creds/sealing_key.hpp"
#include "server/console/console_session_store.hpp"
#include "storage/pg_schema.hpp"
#include "storage/purge_throttle.hpp"

namespace airlock::server::console {
namespace {

namespace pg = storage::pg;

constexpr const char* kSessionsPgSchema = R"sql(
CREATE TABLE IF NOT EXISTS console_sessions(
  id_sha256 text PRIMARY KEY, credential_sealed text NOT NULL, csrf_sealed text NOT NULL,
  created_ms bigint NOT NULL, used_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS console_sessions_used ON console_sessions (used_ms);
)sql";

std::int64_t ms(std::chrono::seconds s) { return std::chrono::duration_cast<std::chrono::milliseconds>(s).count(); }

std::string associated(const std::string& key, const char* column) {
  return "console session " + key + " " + column;
}

Error failed(const std::string& what, const Error& e) {
  return Error::make(e.code, "the console's sessions (" + what + "): " + e.message);
}

class PgSessionStore final : public SessionStore {
 public:
  PgSessionStore(std::unique_ptr<pg::Database> db, std::shared_ptr<const creds::SealingKey> key, SessionOptions options,
                 WallMs now)
      : db_(std::move(db)),
        key_(std::move(key)),
        options_(options),
        now_(std::move(now)),
        idle_ms_(ms(options.idle)),
        absolute_ms_(ms(options.absolute)),
        // A use is a write only when the last touch is this old: every request would otherwise
        // write. So a session may end up to this much before its idle time is up, never after.
        touch_every_ms_(std::min<std::int64_t>(10'000, idle_ms_ / 10)) {}

  Result<Created> create(std::string credential) override {
    auto id = random_hex(32);
    auto csrf = random_hex(32);
    if (!id) return id.error();
    if (!csrf) return csrf.error();
    const std::string key = sha256_hex(*id);
    auto sealed_credential = key_->seal_text(associated(key, "credential"), credential);
    auto sealed_csrf = key_->seal_text(associated(key, "csrf"), *csrf);
    if (!sealed_credential) return failed("sealing a credential", sealed_credential.error());
    if (!sealed_csrf) return failed("sealing a CSRF token", sealed_csrf.error());
    const auto now = now_();
    purge_now_and_then(now);
    // Room and row in one transaction, under a lock every replica takes: two creations that
    // each counted max_sessions - 1 would otherwise both insert, and the table would hold more.
    Status done = db_->transaction("recording a console session", [&](pg::Database::Tx& tx) -> Status {
      if (auto locked = tx.exec("locking the console sessions", "SELECT pg_advisory_xact_lock(1095912523, 22)");
          !locked)
        return locked.error();
      if (auto room = make_room(tx); !room) return room.error();
      auto inserted = tx.exec("recording a console session",
                              "INSERT INTO console_sessions (id_sha256, credential_sealed, csrf_sealed, created_ms, used_ms)"
                              " VALUES ($1, $2, $3, $4, $4)",
                              {key, *sealed_credential, *sealed_csrf, std::to_string(now)});
      if (!inserted) return inserted.error();
      return {};
    });
    if (!done) return failed("signing in", done.error());
    return Created{*id, *csrf};
  }

  Result<std::optional<Session>> use(const std::string& id) override {
    if (id.empty()) return std::optional<Session>();
    const std::string key = sha256_hex(id);
    const auto now = now_();
    purge_now_and_then(now);
    auto rows = db_->exec("looking a console session up",
                          "SELECT credential_sealed, csrf_sealed, created_ms, used_ms FROM console_sessions"
                          " WHERE id_sha256 = $1",
                          {key});
    if (!rows) return failed("looking a session up", rows.error());
    if (rows->rows() != 1) return std::optional<Session>();
    const std::int64_t created = std::stoll(rows->value(0, 2)), used = std::stoll(rows->value(0, 3));
    if (now - used >= idle_ms_ || now - created >= absolute_ms_) {
      (void)remove(id);  // expired either way; a failed delete is purged later
      return std::optional<Session>();
    }
    auto session = open_row(key, rows->value(0, 0), rows->value(0, 1));
    if (!session) return session.error();
    if (now - used >= touch_every_ms_) {
      auto touched = db_->exec("touching a console session",
                               "UPDATE console_sessions SET used_ms = $2 WHERE id_sha256 = $1 AND used_ms < $2",
                               {key, std::to_string(now)});
      if (!touched) return failed("touching a session", touched.error());
    }
    return std::optional<Session>(std::move(*session));
  }

  Status remove(const std::string& id) override {
    auto done = db_->exec("ending a console session", "DELETE FROM console_sessions WHERE id_sha256 = $1",
                          {sha256_hex(id)});
    if (!done) return failed("signing out", done.error());
    return {};
  }

  Result<std::size_t> size() override {
    auto rows = db_->exec("counting console sessions", "SELECT count(*) FROM console_sessions");
    if (!rows) return failed("counting sessions", rows.error());
    return static_cast<std::size_t>(std::stoull(rows->value(0, 0)));
  }

 private:
  Result<Session> open_row(const std::string& key, const std::string& credential, const std::string& csrf) const {
    auto c = key_->open_text(associated(key, "credential"), credential);
    if (!c) return failed("opening a session's sealed credential", c.error());
    auto t = key_->open_text(associated(key, "csrf"), csrf);
    if (!t) return failed("opening a session's sealed CSRF token", t.error());
    return Session{std::move(*c), std::move(*t)};
  }

  // Full (max_sessions, counted over every replica's): the least recently used end, so that
  // the one about to be made fits.
  Status make_room(pg::Database::Tx& tx) const {
    auto done = tx.exec("making room for a console session",
                        "DELETE FROM console_sessions WHERE id_sha256 IN (SELECT id_sha256 FROM console_sessions"
                        " ORDER BY used_ms ASC LIMIT (SELECT greatest(count(*) - $1 + 1, 0) FROM console_sessions))",
                        {std::to_string(options_.max_sessions)});
    if (!done) return failed("ending the least recently used session", done.error());
    return {};
  }

  // Expired rows of sessions nobody comes back to are deleted at most once a minute (by
  // whichever replica creates or uses a session then); the others' at their next use.
  void purge_now_and_then(std::int64_t now) {
    if (!purge_.due(now)) return;
    (void)db_->exec("purging expired console sessions",
                    "DELETE FROM console_sessions WHERE used_ms <= $1 OR created_ms <= $2",
                    {std::to_string(now - idle_ms_), std::to_string(now - absolute_ms_)});
  }

  std::unique_ptr<pg::Database> db_;
  std::shared_ptr<const creds::SealingKey> key_;
  SessionOptions options_;
  WallMs now_;
  std::int64_t idle_ms_, absolute_ms_, touch_every_ms_;
  storage::PurgeThrottle purge_;
};

}  // namespace

Result<std::shared_ptr<SessionStore>> open_postgres_session_store(const pg::Database::Location& location,
                                                                 std::shared_ptr<const creds::SealingKey> key,
                                                                 SessionOptions options, WallMs now) {
  auto db = pg::Database::open(location, "the state database (console sessions)");
  if (!db) return db.error();
  if (auto made = pg::create_schema(**db, "creating the console sessions table", kSessionsPgSchema); !made) return made.error();
  return std::shared_ptr<SessionStore>(std::make_shared<PgSessionStore>(std::move(*db), std::move(key), options,
                                                                        std::move(now)));
}

}  // namespace airlock::server::console
