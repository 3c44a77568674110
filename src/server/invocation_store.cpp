#include "server/invocation_store.hpp"

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
  return store;
}

InvocationStore::~InvocationStore() { sqlite3_close(db_); }

Status InvocationStore::exec(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string m = message ? message : "unknown error";
    sqlite3_free(message);
    return Error::make("storage", "state database: " + m);
  }
  return {};
}

Status InvocationStore::begin(const std::string& id, const std::string& tool) {
  std::lock_guard lock(mu_);
  Statement s(db_, "INSERT INTO invocations (id, tool, status, started_ms) VALUES (?, ?, 'running', ?)");
  s.bind(1, id);
  s.bind(2, tool);
  s.bind(3, now_ms());
  if (sqlite3_step(s.get()) != SQLITE_DONE) return db_error(db_, "recording invocation " + id);
  return {};
}

Status InvocationStore::finish(const std::string& id, const std::string& status, const nlohmann::json& response) {
  std::lock_guard lock(mu_);
  Statement s(db_, "UPDATE invocations SET status = ?, response = ?, finished_ms = ? WHERE id = ?");
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

std::vector<InvocationStore::Running> InvocationStore::running() {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT id, tool FROM invocations WHERE status = 'running'");
  std::vector<Running> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back({s.text(0), s.text(1)});
  return out;
}

}  // namespace airlock::server
