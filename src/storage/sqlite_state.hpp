// One way to open a SQLite state database (<dataDir>/state.db, <dataDir>/secrets.db): the file,
// WAL, synchronous, a busy timeout, then the store's schema. Every SQLite state store opens its
// file here; what differs between them (a private file mode, who serialises the connection, how
// durable a commit is) is an option, not a copy of this preamble. The audit log keeps its own
// (src/audit/detail/sqlite_log_store.cpp: its schema is written in one transaction, its
// errors are "audit_storage").
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "common/result.hpp"

struct sqlite3;

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

}  // namespace airlock::storage
