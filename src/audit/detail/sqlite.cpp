#include "audit/detail/sqlite.hpp"

#include <utility>

namespace airlock::audit::detail {

Error storage_error(const std::string& what, sqlite3* db) {
  std::string reason = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
  return Error::make("audit_storage", what + ": " + reason);
}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

SqliteStatement& SqliteStatement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  return *this;
}

SqliteStatement& SqliteStatement::bind(int position, std::int64_t value) {
  sqlite3_bind_int64(stmt_, position, value);
  return *this;
}

SqliteStatement& SqliteStatement::bind(int position, ByteView blob) {
  // A zero-length blob must still be a blob, not NULL: give SQLite a valid pointer.
  static const std::uint8_t kEmpty = 0;
  const void* data = blob.empty() ? &kEmpty : blob.data();
  sqlite3_bind_blob64(stmt_, position, data, blob.size(), SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement& SqliteStatement::bind_text(int position, std::string_view text) {
  sqlite3_bind_text64(stmt_, position, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Result<bool> SqliteStatement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error error = storage_error(std::string("step `") + sqlite3_sql(stmt_) + "`", db_);
  sqlite3_reset(stmt_);
  return error;
}

Status SqliteStatement::run() {
  auto row = step();
  if (!row) return row.error();
  sqlite3_reset(stmt_);
  return {};
}

std::int64_t SqliteStatement::column_int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

ByteView SqliteStatement::column_blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column));
  if (data == nullptr) return {};
  return {static_cast<const std::uint8_t*>(data), size};
}

std::string_view SqliteStatement::column_text(int column) const {
  const unsigned char* data = sqlite3_column_text(stmt_, column);
  auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column));
  if (data == nullptr) return {};
  return {reinterpret_cast<const char*>(data), size};
}

bool SqliteStatement::column_is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

SqliteDatabase::SqliteDatabase(SqliteDatabase&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)) {}

SqliteDatabase& SqliteDatabase::operator=(SqliteDatabase&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

SqliteDatabase::~SqliteDatabase() { sqlite3_close_v2(db_); }

Result<SqliteDatabase> SqliteDatabase::open(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteDatabase database(db);  // closes it on every path
  if (rc != SQLITE_OK) return storage_error("open " + path, db);
  sqlite3_extended_result_codes(db, 1);
  return database;
}

Status SqliteDatabase::exec(const char* sql) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
    return storage_error(std::string("exec `") + sql + "`", db_);
  return {};
}

Result<SqliteStatement> SqliteDatabase::prepare(const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK)
    return storage_error(std::string("prepare `") + sql + "`", db_);
  return SqliteStatement(db_, stmt);
}

Result<std::string> SqliteDatabase::query_text(const char* sql) {
  auto statement = prepare(sql);
  if (!statement) return statement.error();
  auto row = statement->step();
  if (!row) return row.error();
  if (!*row) return std::string();
  return std::string(statement->column_text(0));
}

std::string SqliteDatabase::last_error() const { return db_ ? sqlite3_errmsg(db_) : ""; }

}  // namespace airlock::audit::detail
