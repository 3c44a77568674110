#include "storage/sqlite_state.hpp"

#include <fcntl.h>
#include <sqlite3.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.hpp"
#include "storage/wal_checkpoints.hpp"

namespace airlock::storage {
namespace {

Error step_error(const std::string& store, const std::string& step, const std::string& path,
                 const std::string& reason) {
  return Error::make("storage", store + ": " + step + " " + path + ": " + reason);
}

std::string reason_of(sqlite3* db) { return db != nullptr ? sqlite3_errmsg(db) : "out of memory"; }

// The one-row text answer of a PRAGMA; nullopt when it fails.
std::optional<std::string> pragma_text(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) return std::nullopt;
  std::optional<std::string> out;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    const auto* text = sqlite3_column_text(stmt, 0);
    out = text != nullptr ? reinterpret_cast<const char*>(text) : "";
  }
  sqlite3_finalize(stmt);
  return out;
}

Status make_file(const std::string& path, mode_t mode, const std::string& store) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return step_error(store, "making", path, std::strerror(errno));
  return {};
}

// WAL lets a reader (the CLI) read while the daemon writes. A database that cannot take it
// (a file system without shared memory) is refused rather than used in another mode.
Status set_pragmas(sqlite3* db, const std::string& path, const std::string& store,
                   const SqliteStateOptions& options) {
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  auto mode = pragma_text(db, "PRAGMA journal_mode=WAL");
  if (!mode) return step_error(store, "setting WAL mode on", path, reason_of(db));
  if (*mode != "wal") return step_error(store, "setting WAL mode on", path, "the journal mode stayed " + *mode);
  const std::string synchronous = std::string("PRAGMA synchronous=") + options.synchronous;
  if (sqlite3_exec(db, synchronous.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    return step_error(store, "setting synchronous on", path, reason_of(db));
  return {};
}

}  // namespace

void SqliteCloser::operator()(sqlite3* db) const { sqlite3_close(db); }

Result<SqliteConnection> open_sqlite_state(const std::string& path, const char* schema, const std::string& store,
                                           const SqliteStateOptions& options) {
  int flags = SQLITE_OPEN_READWRITE | (options.serialized ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX);
  if (options.file_mode) {
    if (auto made = make_file(path, *options.file_mode, store); !made) return made.error();
  } else {
    flags |= SQLITE_OPEN_CREATE;
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  SqliteConnection db(raw);  // closed on every path (sqlite3_open_v2 may return a handle on failure)
  if (rc != SQLITE_OK) return step_error(store, "opening", path, reason_of(raw));
  if (auto set = set_pragmas(raw, path, store, options); !set) return set.error();
  if (sqlite3_exec(raw, schema, nullptr, nullptr, nullptr) != SQLITE_OK)
    return step_error(store, "creating the schema in", path, reason_of(raw));
  checkpoint_in_background(raw);
  return db;
}

Error sqlite_error(sqlite3* db, const std::string& store, const std::string& what) {
  const std::string reason = db ? sqlite3_errmsg(db) : "out of memory";
  return Error::make("storage", (store.empty() ? "" : store + ": ") + what + ": " + reason);
}

Status sqlite_exec(sqlite3* db, const char* sql, const std::string& store) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) == SQLITE_OK) return {};
  const std::string reason = message != nullptr ? message : reason_of(db);
  sqlite3_free(message);
  return Error::make("storage", store + ": " + reason);
}

SqliteStatement::SqliteStatement(sqlite3* db, const char* sql) {
  if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
  }
}

SqliteStatement::SqliteStatement(sqlite3_stmt* kept) : stmt_(kept), owned_(false) {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

SqliteStatement::~SqliteStatement() {
  if (owned_) sqlite3_finalize(stmt_);
  else sqlite3_reset(stmt_);
}

void SqliteStatement::bind(int i, const std::string& text) {
  sqlite3_bind_text64(stmt_, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

void SqliteStatement::bind(int i, std::int64_t value) { sqlite3_bind_int64(stmt_, i, value); }

void SqliteStatement::bind_blob(int i, const std::string& bytes) {
  sqlite3_bind_blob64(stmt_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
}

int SqliteStatement::step() { return stmt_ != nullptr ? sqlite3_step(stmt_) : SQLITE_ERROR; }
bool SqliteStatement::step_row() { return step() == SQLITE_ROW; }
bool SqliteStatement::step_done() { return step() == SQLITE_DONE; }

std::string SqliteStatement::text(int i) const {
  const auto* p = sqlite3_column_text(stmt_, i);
  return p != nullptr ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)))
                      : std::string();
}

std::string SqliteStatement::blob(int i) const {
  const void* p = sqlite3_column_blob(stmt_, i);
  return p != nullptr ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)))
                      : std::string();
}

std::int64_t SqliteStatement::integer(int i) const { return sqlite3_column_int64(stmt_, i); }
bool SqliteStatement::is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

}  // namespace airlock::storage
