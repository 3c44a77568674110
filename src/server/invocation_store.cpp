#include "server/invocation_store.hpp"

#include "common/utc_time.hpp"

#include <sqlite3.h>

#include <chrono>

namespace airlock::server {
namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }
  void bind(int i, const std::string& s) { sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT); }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  std::string text(int i) const {
    auto* p = sqlite3_column_text(stmt_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i))) : "";
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

Error db_error(sqlite3* db, const std::string& what) {
  return Error::make("storage", what + ": " + sqlite3_errmsg(db));
}

}  // namespace

Result<std::unique_ptr<InvocationStore>> InvocationStore::open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    Error e = Error::make("storage", "opening " + path + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return e;
  }
  auto store = std::unique_ptr<InvocationStore>(new InvocationStore(db));
  sqlite3_busy_timeout(db, 5000);
  if (auto s = store->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                           "CREATE TABLE IF NOT EXISTS invocations ("
                           " id TEXT PRIMARY KEY, tool TEXT NOT NULL,"
                           " status TEXT NOT NULL, response TEXT, started_ms INTEGER, finished_ms INTEGER)");
      !s)
    return s.error();
  if (auto s = store->migrate(); !s) return s.error();
  return store;
}

InvocationStore::~InvocationStore() { sqlite3_close(db_); }

// The owner columns (added after the first version: rows from before get them from their
// stored response) and the indexes of GET /v1/invocations.
Status InvocationStore::migrate() {
  for (const char* column : {"principal", "subject_issuer", "subject_sub"}) {
    const std::string sql = std::string("ALTER TABLE invocations ADD COLUMN ") + column + " TEXT";
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK &&
        std::string(sqlite3_errmsg(db_)).find("duplicate column") == std::string::npos)
      return db_error(db_, "adding column " + std::string(column));
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

Status InvocationStore::exec(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string m = message ? message : "unknown error";
    sqlite3_free(message);
    return Error::make("storage", "state database: " + m);
  }
  return {};
}

Status InvocationStore::begin(const std::string& id, const std::string& tool, const Owner& owner) {
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
  if (sqlite3_step(s.get()) != SQLITE_DONE) return db_error(db_, "recording invocation " + id);
  return {};
}

Status InvocationStore::finish(const std::string& id, const std::string& status, const nlohmann::json& response) {
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
  if (sqlite3_step(s.get()) != SQLITE_DONE) return db_error(db_, "updating invocation " + id);
  return {};
}

std::optional<nlohmann::json> InvocationStore::get(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT status, response, tool FROM invocations WHERE id = ?");
  s.bind(1, id);
  if (sqlite3_step(s.get()) != SQLITE_ROW) return std::nullopt;
  std::string status = s.text(0), response = s.text(1);
  if (response.empty()) return nlohmann::json{{"id", id}, {"tool", s.text(2)}, {"status", status}};
  return nlohmann::json::parse(response, nullptr, false);
}

namespace {

// The time of a row as the API writes times ("" when it has none).
std::string rfc3339_or_null(std::int64_t ms, bool present) {
  if (!present) return "";
  return rfc3339_ms(ms);
}

nlohmann::json nullable(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

// The WHERE clause of a query; `params` gets its values in order.
std::string where_clause(const InvocationStore::Query& q, std::vector<std::string>& params) {
  std::string sql = " WHERE 1 = 1";
  auto add = [&](const char* cond, const std::string& value) {
    sql += cond;
    params.push_back(value);
  };
  if (!q.tool.empty()) add(" AND tool = ?", q.tool);
  if (!q.status.empty()) add(" AND status = ?", q.status);
  if (!q.agent.empty()) add(" AND principal = ?", q.agent);
  if (!q.user.empty()) add(" AND subject_sub = ?", q.user);
  if (q.since_ms) add(" AND started_ms >= CAST(? AS INTEGER)", std::to_string(*q.since_ms));
  if (q.until_ms) add(" AND started_ms < CAST(? AS INTEGER)", std::to_string(*q.until_ms));
  if (q.owner && !q.owner->principal.empty()) add(" AND principal = ?", q.owner->principal);
  if (q.owner && q.owner->principal.empty()) {
    add(" AND subject_issuer = ?", q.owner->issuer);
    add(" AND subject_sub = ?", q.owner->sub);
  }
  return sql;
}

}  // namespace

Result<nlohmann::json> InvocationStore::list(const Query& q) {
  std::vector<std::string> params;
  const std::string sql =
      "SELECT id, tool, status, principal, subject_issuer, subject_sub, started_ms, finished_ms,"
      " json_extract(response, '$.verdict'), json_extract(response, '$.error.kind'),"
      " finished_ms IS NOT NULL FROM invocations" +
      where_clause(q, params) + " ORDER BY started_ms DESC, id DESC LIMIT ?";
  std::lock_guard lock(mu_);
  Statement s(db_, sql.c_str());
  if (!s.get()) return db_error(db_, "listing invocations");
  int i = 1;
  for (const auto& p : params) s.bind(i++, p);
  s.bind(i, static_cast<std::int64_t>(q.limit));
  nlohmann::json out = nlohmann::json::array();
  int rc = 0;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    const std::string issuer = s.text(4), sub = s.text(5);
    std::string status = s.text(2);
    out.push_back({{"id", s.text(0)},
                   {"tool", s.text(1)},
                   {"status", status == "suspended" ? "pending_approval" : status},
                   {"actor", s.text(3).empty() ? nlohmann::json() : nlohmann::json{{"principal", s.text(3)}}},
                   {"subject", sub.empty() ? nlohmann::json() : nlohmann::json{{"issuer", issuer}, {"sub", sub}}},
                   {"started_at", nullable(rfc3339_or_null(sqlite3_column_int64(s.get(), 6), true))},
                   {"finished_at", nullable(rfc3339_or_null(sqlite3_column_int64(s.get(), 7),
                                                            sqlite3_column_int(s.get(), 10) != 0))},
                   {"verdict", nullable(s.text(8))},
                   {"error_kind", nullable(s.text(9))}});
  }
  if (rc != SQLITE_DONE) return db_error(db_, "listing invocations");
  return out;
}

std::vector<InvocationStore::Running> InvocationStore::running() {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT id, tool FROM invocations WHERE status = 'running'");
  std::vector<Running> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back({s.text(0), s.text(1)});
  return out;
}

}  // namespace airlock::server
