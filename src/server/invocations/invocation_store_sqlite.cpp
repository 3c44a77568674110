// The invocation store in SQLite: <dataDir>/state.db, one daemon.
#include "server/invocations/invocation_store.hpp"

#include <sqlite3.h>

#include <mutex>

#include "storage/sqlite_state.hpp"

namespace airlock::server {
namespace {

using detail::now_ms;

using Statement = storage::SqliteStatement;

class SqliteInvocationStore : public InvocationStore {
 public:
  explicit SqliteInvocationStore(sqlite3* db) : db_(db) {}
  ~SqliteInvocationStore() override { sqlite3_close(db_); }
  Status exec(const char* sql);
  Status migrate();
  Status begin(const std::string& id, const std::string& tool, const Owner& owner) override;
  Status finish(const std::string& id, const std::string& status, const nlohmann::json& response) override;
  std::optional<nlohmann::json> get(const std::string& id) override;
  std::optional<Owner> owner(const std::string& id) override;
  std::optional<std::int64_t> started_ms(const std::string& id) override;
  Result<nlohmann::json> list(const Query& query) override;
  std::vector<Running> running() override;

 private:
  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace

Result<std::unique_ptr<InvocationStore>> InvocationStore::open(const std::string& path) {
  auto db = storage::open_sqlite_state(path,
                                       "CREATE TABLE IF NOT EXISTS invocations ("
                                       " id TEXT PRIMARY KEY, tool TEXT NOT NULL,"
                                       " status TEXT NOT NULL, response TEXT, started_ms INTEGER, finished_ms INTEGER)",
                                       "state database (invocations)");
  if (!db) return db.error();
  auto store = std::make_unique<SqliteInvocationStore>(db->release());
  if (auto s = store->migrate(); !s) return s.error();
  return std::unique_ptr<InvocationStore>(std::move(store));
}

// The owner columns (added after the first version: rows from before get them from their
// stored response) and the indexes of GET /v1/invocations.
Status SqliteInvocationStore::migrate() {
  for (const char* column : {"principal", "subject_issuer", "subject_sub"}) {
    const std::string sql = std::string("ALTER TABLE invocations ADD COLUMN ") + column + " TEXT";
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK &&
        std::string(sqlite3_errmsg(db_)).find("duplicate column") == std::string::npos)
      return storage::sqlite_error(db_, "", "adding column " + std::string(column));
  }
  return exec(
      "UPDATE invocations SET principal = json_extract(response, '$.principal'),"
      " subject_issuer = json_extract(response, '$.subject.issuer'),"
      " subject_sub = json_extract(response, '$.subject.sub')"
      " WHERE principal IS NULL AND response IS NOT NULL AND json_valid(response);"
      "CREATE INDEX IF NOT EXISTS invocations_started ON invocations (started_ms);"
      "CREATE INDEX IF NOT EXISTS invocations_tool ON invocations (tool, started_ms);"
      "CREATE INDEX IF NOT EXISTS invocations_status ON invocations (status, started_ms);"
      "CREATE INDEX IF NOT EXISTS invocations_principal ON invocations (principal, started_ms);"
      "CREATE INDEX IF NOT EXISTS invocations_subject ON invocations (subject_sub, started_ms);");
}

Status SqliteInvocationStore::exec(const char* sql) {
  return storage::sqlite_exec(db_, sql, "state database");
}

Status SqliteInvocationStore::begin(const std::string& id, const std::string& tool, const Owner& owner) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "INSERT INTO invocations (id, tool, status, started_ms, principal, subject_issuer, subject_sub)"
              " VALUES (?, ?, 'running', ?, ?, ?, ?)");
  s.bind(1, id);
  s.bind(2, tool);
  s.bind(3, now_ms());
  s.bind(4, owner.principal);
  s.bind(5, owner.issuer);
  s.bind(6, owner.sub);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return storage::sqlite_error(db_, "", "recording invocation " + id);
  return {};
}

Status SqliteInvocationStore::finish(const std::string& id, const std::string& status, const nlohmann::json& response) {
  std::lock_guard lock(mu_);
  // The owner, when the response names one (a row recorded as aborted at start does not).
  Statement s(db_,
              "UPDATE invocations SET status = ?, response = ?, finished_ms = ?,"
              " principal = COALESCE(NULLIF(json_extract(?2, '$.principal'), ''), principal),"
              " subject_issuer = COALESCE(json_extract(?2, '$.subject.issuer'), subject_issuer),"
              " subject_sub = COALESCE(json_extract(?2, '$.subject.sub'), subject_sub) WHERE id = ?");
  s.bind(1, status);
  s.bind(2, response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  s.bind(3, now_ms());
  s.bind(4, id);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return storage::sqlite_error(db_, "", "updating invocation " + id);
  return {};
}

std::optional<nlohmann::json> SqliteInvocationStore::get(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT status, response, tool FROM invocations WHERE id = ?");
  s.bind(1, id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) return std::nullopt;
  std::string status = s.text(0), response = s.text(1);
  if (response.empty()) return nlohmann::json{{"id", id}, {"tool", s.text(2)}, {"status", status}};
  return nlohmann::json::parse(response, nullptr, false);
}

std::optional<InvocationStore::Owner> SqliteInvocationStore::owner(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT principal, subject_issuer, subject_sub FROM invocations WHERE id = ?");
  s.bind(1, id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) return std::nullopt;
  return Owner{s.text(0), s.text(1), s.text(2)};
}

std::optional<std::int64_t> SqliteInvocationStore::started_ms(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT started_ms FROM invocations WHERE id = ?");
  s.bind(1, id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) return std::nullopt;
  return sqlite3_column_int64(s.get(), 0);
}

namespace {

std::string question_mark(std::size_t) { return "?"; }

}  // namespace

Result<nlohmann::json> SqliteInvocationStore::list(const Query& q) {
  std::vector<std::string> params;
  const std::string sql =
      "SELECT id, tool, status, principal, subject_issuer, subject_sub, started_ms, finished_ms,"
      " json_extract(response, '$.verdict'), json_extract(response, '$.error.kind'),"
      " finished_ms IS NOT NULL FROM invocations" +
      detail::where_clause(q, params, question_mark) + " ORDER BY started_ms DESC, id DESC LIMIT ?";
  std::lock_guard lock(mu_);
  Statement s(db_, sql.c_str());
  if (!s.get()) return storage::sqlite_error(db_, "", "listing invocations");
  int i = 1;
  for (const auto& p : params) s.bind(i++, p);
  s.bind(i, static_cast<std::int64_t>(q.limit));
  nlohmann::json out = nlohmann::json::array();
  int rc = 0;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    detail::ListedRow row{s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(8), s.text(9),
                          sqlite3_column_int64(s.get(), 6), std::nullopt};
    if (sqlite3_column_int(s.get(), 10) != 0) row.finished_ms = sqlite3_column_int64(s.get(), 7);
    out.push_back(detail::summary(row));
  }
  if (rc != SQLITE_DONE) return storage::sqlite_error(db_, "", "listing invocations");
  return out;
}

std::vector<InvocationStore::Running> SqliteInvocationStore::running() {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT id, tool FROM invocations WHERE status = 'running'");
  std::vector<Running> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back({s.text(0), s.text(1)});
  return out;
}

}  // namespace airlock::server
