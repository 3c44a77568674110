// The session store in <dataDir>/state.db (session_store.hpp).
#include <sqlite3.h>

#include <mutex>

#include "server/sessions/session_store.hpp"
#include "storage/sqlite_state.hpp"

namespace airlock::server {
namespace {

constexpr const char* kSessionsStore = "sessions";

class SqliteSessionStore final : public SessionStore {
 public:
  explicit SqliteSessionStore(storage::SqliteConnection db) : db_(std::move(db)) {}
  Status add(const SessionRow& row) override;
  Status remove(const std::string& id) override;
  Result<std::vector<SessionRow>> all() override;

 private:
  std::mutex mu_;
  storage::SqliteConnection db_;
};

Status SqliteSessionStore::add(const SessionRow& row) {
  std::lock_guard lock(mu_);
  storage::SqliteStatement s(db_.get(),
                             "INSERT INTO sessions (id, template, principal, issuer, sub, created_ms) VALUES (?, ?, ?, ?, ?, ?)");
  s.bind(1, row.id);
  s.bind(2, row.template_name);
  s.bind(3, row.principal);
  s.bind(4, row.issuer);
  s.bind(5, row.sub);
  s.bind(6, row.created_ms);
  if (!s.step_done()) return storage::sqlite_error(db_.get(), kSessionsStore, "recording a session");
  return {};
}

Status SqliteSessionStore::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  storage::SqliteStatement s(db_.get(), "DELETE FROM sessions WHERE id = ?");
  s.bind(1, id);
  if (!s.step_done()) return storage::sqlite_error(db_.get(), kSessionsStore, "removing a session");
  return {};
}

Result<std::vector<SessionRow>> SqliteSessionStore::all() {
  std::lock_guard lock(mu_);
  storage::SqliteStatement s(db_.get(), "SELECT id, template, principal, issuer, sub, created_ms FROM sessions");
  std::vector<SessionRow> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW)
    out.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.integer(5)});
  if (rc != SQLITE_DONE) return storage::sqlite_error(db_.get(), kSessionsStore, "reading the sessions");
  return out;
}

}  // namespace

Result<std::unique_ptr<SessionStore>> SessionStore::open(const std::string& path) {
  storage::SqliteStateOptions options;
  options.synchronous = "FULL";  // a session acknowledged is a row that survives a power cut
  auto db = storage::open_sqlite_state(path,
                                       "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, template TEXT NOT NULL,"
                                       " principal TEXT NOT NULL, issuer TEXT NOT NULL, sub TEXT NOT NULL,"
                                       " created_ms INTEGER NOT NULL)",
                                       kSessionsStore, options);
  if (!db) return db.error();
  return std::unique_ptr<SessionStore>(new SqliteSessionStore(std::move(*db)));
}

}  // namespace airlock::server
