// One way to open a SQLite state database (<dataDir>/state.db, <dataDir>/secrets.db): the file,
// WAL, synchronous, a busy timeout, then the store's schema. Every SQLite state store opens its
// file here; what differs between them (a private file mode, who serialises the connection, how
// durable a commit is) is an option, not a copy of this preamble. The audit log keeps its own
// (src/audit/detail/sqlite_log_store.cpp: its schema is written in one transaction, its
// errors are "audit_storage").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/result.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace airlock::storage {

struct SqliteStateOptions {
  // Set: the file is made with this mode (no symlink followed) before SQLite opens it, and SQLite
  // does not create it; its -wal and -shm files take the same mode, so no umask (the whole
  // process's) has to change. Unset: SQLite creates it under the umask.
  std::optional<mode_t> file_mode;
  // true: one connection shared by threads under SQLite's own mutex (SQLITE_OPEN_FULLMUTEX);
  // false: its owner lets one call use it at a time (SQLITE_OPEN_NOMUTEX).
  bool serialized = true;
  // NORMAL: in WAL mode a commit survives the process being killed, a power cut may lose the
  // last ones. FULL: every commit is synced.
  const char* synchronous = "NORMAL";
  // The daemon and the CLI open the same files: each waits this long for the other's lock.
  int busy_timeout_ms = 5000;
};

struct SqliteCloser {
  void operator()(sqlite3* db) const;
};
using SqliteConnection = std::unique_ptr<sqlite3, SqliteCloser>;

// Opens path (read-write), switches it to WAL (an error if it does not take), sets synchronous
// and the busy timeout, and runs schema (statements separated by ';', each IF NOT EXISTS).
// Errors: code "storage", "<store>: <step> <path>: <reason>", store naming the store
// ("credential leases: opening /d/state.db: unable to open database file").
Result<SqliteConnection> open_sqlite_state(const std::string& path, const char* schema, const std::string& store,
                                           const SqliteStateOptions& options = {});

// Runs sql (one or more statements, no rows wanted). Errors: code "storage", "<store>: <reason>".
Status sqlite_exec(sqlite3* db, const char* sql, const std::string& store);

// A failed SQLite call of a state store: code "storage", "<store>: <what>: <SQLite's message>"
// ("<what>: ..." when store is empty; "out of memory" when there is no connection).
Error sqlite_error(sqlite3* db, const std::string& store, const std::string& what);

// A prepared statement of a state store: finalized when it goes (or, made from one the store
// keeps prepared, reset and kept). Text and blobs are bound by copy.
class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, const char* sql);
  // One of the store's prepared statements (may be null), reset for this use and kept afterwards.
  explicit SqliteStatement(sqlite3_stmt* kept);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  bool ok() const { return stmt_ != nullptr; }  // false: it did not prepare
  sqlite3_stmt* get() const { return stmt_; }
  void bind(int i, const std::string& text);
  void bind(int i, std::int64_t value);
  void bind_blob(int i, const std::string& bytes);
  int step();  // SQLite's code; SQLITE_ERROR when it did not prepare
  bool step_row();
  bool step_done();
  std::string text(int i) const;
  std::string blob(int i) const;
  std::int64_t integer(int i) const;
  bool is_null(int i) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  bool owned_ = true;
};

}  // namespace airlock::storage
