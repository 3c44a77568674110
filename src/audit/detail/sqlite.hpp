// A thin RAII layer over the SQLite C API: one connection, prepared statements, errors as
// values (code "audit_storage", message naming the operation and SQLite's reason).
// Internal to audit/.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "audit/hash.hpp"
#include "common/result.hpp"

namespace airlock::audit::detail {

class SqliteStatement {
 public:
  SqliteStatement() = default;
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  explicit operator bool() const { return stmt_ != nullptr; }

  // Call reset() before binding a statement again.
  SqliteStatement& reset();
  SqliteStatement& bind(int position, std::int64_t value);
  SqliteStatement& bind(int position, ByteView blob);  // copied by SQLite
  SqliteStatement& bind_text(int position, std::string_view text);

  // true: a row is available; false: done.
  Result<bool> step();
  Status run();  // steps to completion, expecting no rows

  std::int64_t column_int64(int column) const;
  ByteView column_blob(int column) const;  // valid until the next step or reset
  std::string_view column_text(int column) const;
  bool column_is_null(int column) const;

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteDatabase {
 public:
  SqliteDatabase() = default;
  SqliteDatabase(SqliteDatabase&& other) noexcept;
  SqliteDatabase& operator=(SqliteDatabase&& other) noexcept;
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;
  ~SqliteDatabase();

  // flags: SQLITE_OPEN_READONLY, or SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE. The connection
  // is used from one thread at a time (SQLITE_OPEN_NOMUTEX); its owner guarantees that.
  static Result<SqliteDatabase> open(const std::string& path, int flags);

  Status exec(const char* sql);
  Result<SqliteStatement> prepare(const char* sql);
  // The single text value a PRAGMA (or any one-row query) returns.
  Result<std::string> query_text(const char* sql);

  std::string last_error() const;
  sqlite3* handle() const { return db_; }

 private:
  explicit SqliteDatabase(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
};

Error storage_error(const std::string& what, sqlite3* db);

}  // namespace airlock::audit::detail
