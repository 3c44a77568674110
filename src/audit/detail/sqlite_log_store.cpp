#include "audit/detail/sqlite_log_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.hpp"
#include "storage/wal_checkpoints.hpp"

namespace airlock::audit::detail {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records(
  idx INTEGER PRIMARY KEY,
  record BLOB NOT NULL,
  leaf_hash BLOB NOT NULL,
  subtree_hashes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints(
  size INTEGER PRIMARY KEY,
  body BLOB NOT NULL,
  signature BLOB NOT NULL);
)sql";

// How long a reader waits for a writer holding an exclusive lock (only WAL recovery does).
constexpr int kBusyTimeoutMs = 10'000;

// SQLite creates files with the process umask; the log may hold redacted tool output, so it
// is created owner-only first (SQLite gives its -wal and -shm files the same mode).
Status create_private_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    if (errno == EEXIST) return {};
    return Error::make("audit_storage", "cannot create " + path + ": " + std::strerror(errno));
  }
  // The new directory entry must survive a crash as surely as the records will.
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd || ::fsync(dir_fd.get()) != 0)
    return Error::make("audit_storage", "cannot sync directory " + dir + ": " + std::strerror(errno));
  return {};
}

// A cursor over a prepared SELECT of idx, record, leaf_hash, subtree_hashes.
class SqliteRecordCursor final : public RecordCursor {
 public:
  explicit SqliteRecordCursor(SqliteStatement statement) : statement_(std::move(statement)) {}
  Result<bool> next() override { return statement_.step(); }
  std::uint64_t index() const override {
    return static_cast<std::uint64_t>(statement_.column_int64(0));
  }
  ByteView record() const override { return statement_.column_blob(1); }
  ByteView leaf_hash() const override { return statement_.column_blob(2); }
  ByteView subtree_hashes() const override { return statement_.column_blob(3); }

 private:
  SqliteStatement statement_;
};

}  // namespace

Result<std::unique_ptr<LogStore>> SqliteLogStore::open_for_writing(const std::string& path,
                                                                   int busy_timeout_ms) {
  if (auto status = create_private_file(path); !status) return status.error();
  auto db = SqliteDatabase::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db) return db.error();
  sqlite3_busy_timeout(db->handle(), busy_timeout_ms);
  auto mode = db->query_text("PRAGMA journal_mode=WAL");
  if (!mode) return mode.error();
  if (*mode != "wal") return not_a_log(path, "cannot switch it to WAL mode (got " + *mode + ")");
  // FULL: in WAL mode every commit fsyncs the WAL, so a commit that returned is on disk.
  if (auto status = db->exec("PRAGMA synchronous=FULL"); !status) return status.error();
  storage::checkpoint_in_background(db->handle());  // not in the commit an appender waits for
  std::unique_ptr<SqliteLogStore> store(new SqliteLogStore(path, std::move(*db)));
  if (auto status = store->begin_write(); !status) return status.error();
  if (auto status = store->db_.exec(kSchema); !status) {
    store->rollback();
    return status.error();
  }
  if (auto status = store->commit(); !status) return status.error();
  return std::unique_ptr<LogStore>(std::move(store));
}

Result<std::unique_ptr<LogStore>> SqliteLogStore::open_for_reading(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0)
    return Error::make("audit_storage", "cannot open " + path + ": " + std::strerror(errno));
  auto db = SqliteDatabase::open(path, SQLITE_OPEN_READONLY);
  if (!db) return db.error();
  sqlite3_busy_timeout(db->handle(), kBusyTimeoutMs);
  auto tables = db->query_text(
      "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE type = 'table' "
      "AND name IN ('meta', 'records', 'checkpoints') ORDER BY name)");
  if (!tables) return not_a_log(path, tables.error().message);
  if (*tables != "checkpoints,meta,records") return not_a_log(path, "its tables are missing");
  return std::unique_ptr<LogStore>(new SqliteLogStore(path, std::move(*db)));
}

Status SqliteLogStore::begin_write() { return db_.exec("BEGIN IMMEDIATE"); }
Status SqliteLogStore::begin_read() { return db_.exec("BEGIN DEFERRED"); }
Status SqliteLogStore::commit() { return db_.exec("COMMIT"); }
void SqliteLogStore::rollback() {
  if (!sqlite3_get_autocommit(db_.handle())) (void)db_.exec("ROLLBACK");
}

Result<SqliteStatement*> SqliteLogStore::statement(SqliteStatement& slot, const char* sql) {
  if (!slot) {
    auto prepared = db_.prepare(sql);
    if (!prepared) return prepared.error();
    slot = std::move(*prepared);
  }
  slot.reset();
  return &slot;
}

Result<std::int64_t> SqliteLogStore::data_version() {
  auto st = statement(data_version_, "PRAGMA data_version");
  if (!st) return st.error();
  auto row = (*st)->step();
  if (!row) return row.error();
  std::int64_t version = (*st)->column_int64(0);
  (*st)->reset();
  return version;
}

Result<std::optional<LogMeta>> SqliteLogStore::read_meta() {
  auto query = db_.prepare("SELECT key, value FROM meta");
  if (!query) return query.error();
  std::optional<std::string> format, origin, public_key;
  while (true) {
    auto row = query->step();
    if (!row) return row.error();
    if (!*row) break;
    std::string key(query->column_text(0)), value(query->column_text(1));
    if (key == "format") format = value;
    if (key == "origin") origin = value;
    if (key == "public_key") public_key = value;
  }
  if (!format && !origin && !public_key) return std::optional<LogMeta>();
  if (format != kLogFormat)
    return not_a_log(path_, "format is " + format.value_or("missing") + ", expected " +
                                std::string(kLogFormat));
  if (!origin || !public_key) return not_a_log(path_, "its origin or public key is missing");
  auto key = PublicKey::from_hex(*public_key);
  if (!key) return not_a_log(path_, "its public key is not 32 bytes of hex");
  return std::optional<LogMeta>(LogMeta{*origin, *key});
}

Status SqliteLogStore::write_meta(const LogMeta& meta) {
  auto insert = db_.prepare("INSERT INTO meta(key, value) VALUES (?1, ?2)");
  if (!insert) return insert.error();
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"format", kLogFormat},
                                   {"origin", meta.origin},
                                   {"public_key", meta.public_key.hex()}}) {
    insert->reset();
    insert->bind_text(1, key).bind_text(2, value);
    if (auto status = insert->run(); !status) return status;
  }
  return {};
}

Result<LogTail> SqliteLogStore::tail() {
  auto st = statement(select_tail_,
                      "SELECT idx, leaf_hash FROM records ORDER BY idx DESC LIMIT 1");
  if (!st) return st.error();
  auto row = (*st)->step();
  if (!row) return row.error();
  LogTail tail;
  if (*row) {
    tail.size = static_cast<std::uint64_t>((*st)->column_int64(0)) + 1;
    ByteView leaf = (*st)->column_blob(1);
    if (leaf.size() != kHashSize)
      return Error::make("audit_storage", "the last record's stored leaf hash is malformed");
    tail.last_leaf = hash_from(leaf);
  }
  (*st)->reset();
  return tail;
}

Result<Hash> SqliteLogStore::subtree(unsigned level, std::uint64_t index) {
  // A perfect subtree is stored in the row of its last leaf.
  std::uint64_t last_leaf = ((index + 1) << level) - 1;
  auto st = statement(select_subtree_,
                      "SELECT leaf_hash, subtree_hashes FROM records WHERE idx = ?1");
  if (!st) return st.error();
  (*st)->bind(1, static_cast<std::int64_t>(last_leaf));
  auto row = (*st)->step();
  if (!row) return row.error();
  std::optional<Hash> hash;
  if (*row) {
    ByteView bytes = level == 0 ? (*st)->column_blob(0) : (*st)->column_blob(1);
    std::size_t offset = level == 0 ? 0 : (level - 1) * kHashSize;
    if (bytes.size() >= offset + kHashSize) hash = hash_from(bytes.subspan(offset, kHashSize));
  }
  (*st)->reset();
  if (!hash)
    return Error::make("audit_storage", "tree node (level " + std::to_string(level) + ", index " +
                                            std::to_string(index) + ") is not stored in record " +
                                            std::to_string(last_leaf));
  return *hash;
}

Result<std::optional<std::string>> SqliteLogStore::record(std::uint64_t index) {
  auto st = statement(select_record_, "SELECT record FROM records WHERE idx = ?1");
  if (!st) return st.error();
  (*st)->bind(1, static_cast<std::int64_t>(index));
  auto row = (*st)->step();
  if (!row) return row.error();
  if (!*row) return std::optional<std::string>();
  ByteView bytes = (*st)->column_blob(0);
  std::optional<std::string> record(std::in_place, bytes.begin(), bytes.end());
  (*st)->reset();
  return record;
}

Result<std::optional<Hash>> SqliteLogStore::stored_leaf_hash(std::uint64_t index) {
  auto st = statement(select_leaf_, "SELECT leaf_hash FROM records WHERE idx = ?1");
  if (!st) return st.error();
  (*st)->bind(1, static_cast<std::int64_t>(index));
  auto row = (*st)->step();
  if (!row) return row.error();
  std::optional<Hash> leaf;
  if (*row && (*st)->column_blob(0).size() == kHashSize) leaf = hash_from((*st)->column_blob(0));
  (*st)->reset();
  return leaf;
}

Result<std::unique_ptr<RecordCursor>> SqliteLogStore::records_from(std::uint64_t index) {
  auto query = db_.prepare(
      "SELECT idx, record, leaf_hash, subtree_hashes FROM records WHERE idx >= ?1 ORDER BY idx");
  if (!query) return query.error();
  query->bind(1, static_cast<std::int64_t>(index));
  return std::unique_ptr<RecordCursor>(new SqliteRecordCursor(std::move(*query)));
}

Status SqliteLogStore::insert_record(std::uint64_t index, std::string_view record, const Hash& leaf,
                               const MerkleFrontier::Completed& completed) {
  auto st = statement(insert_record_,
                      "INSERT INTO records(idx, record, leaf_hash, subtree_hashes) "
                      "VALUES (?1, ?2, ?3, ?4)");
  if (!st) return st.error();
  (*st)->bind(1, static_cast<std::int64_t>(index))
      .bind(2, as_bytes(record))
      .bind(3, ByteView(leaf))
      .bind(4, ByteView(completed.hashes.front().data(), completed.count * kHashSize));
  return (*st)->run();
}

Status SqliteLogStore::insert_checkpoint(std::uint64_t size, std::string_view body, ByteView signature) {
  auto st = statement(insert_checkpoint_,
                      "INSERT INTO checkpoints(size, body, signature) VALUES (?1, ?2, ?3)");
  if (!st) return st.error();
  (*st)->bind(1, static_cast<std::int64_t>(size)).bind(2, as_bytes(body)).bind(3, signature);
  return (*st)->run();
}

namespace {
StoredCheckpoint checkpoint_from_row(const SqliteStatement& row) {
  ByteView body = row.column_blob(1), signature = row.column_blob(2);
  return {static_cast<std::uint64_t>(row.column_int64(0)), std::string(body.begin(), body.end()),
          std::string(signature.begin(), signature.end())};
}
}  // namespace

Result<std::vector<StoredCheckpoint>> SqliteLogStore::checkpoints() {
  auto query = db_.prepare("SELECT size, body, signature FROM checkpoints ORDER BY size");
  if (!query) return query.error();
  std::vector<StoredCheckpoint> out;
  while (true) {
    auto row = query->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(checkpoint_from_row(*query));
  }
  return out;
}

Result<std::optional<StoredCheckpoint>> SqliteLogStore::latest_checkpoint() {
  auto st = statement(select_latest_checkpoint_,
                      "SELECT size, body, signature FROM checkpoints ORDER BY size DESC LIMIT 1");
  if (!st) return st.error();
  auto row = (*st)->step();
  if (!row) return row.error();
  std::optional<StoredCheckpoint> latest;
  if (*row) latest = checkpoint_from_row(**st);
  (*st)->reset();
  return latest;
}

}  // namespace airlock::audit::detail
