#include "creds/secret_store.hpp"

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <mutex>

#include "common/utc_time.hpp"
#include "creds/sealing_key.hpp"
#include "policy/names.hpp"
#include "storage/sqlite_state.hpp"

namespace airlock::creds {
namespace {

constexpr std::size_t kMaxValueSize = 64 * 1024;

using Sealed = SealingKey::Sealed;

Status check_name(const std::string& name) {
  if (policy::valid_tool_name(name)) return {};
  return Error::make("invalid_argument",
                     "secret name '" + name + "' is not valid: " + policy::kToolNameRule);
}

Error corrupt(const std::string& name) {
  return Error::make(
      "secret_corrupt",
      "secret '" + name + "' does not decrypt: it was altered, or sealed with another key");
}

// The value, or secret_corrupt: the tag covers the name too (the associated data), so a row
// moved under another name does not open.
Result<std::string> open_sealed(const SealingKey& key, const std::string& name, const Sealed& in) {
  if (in.ciphertext.empty()) return corrupt(name);
  auto plain = key.open(name, in);
  if (!plain) return corrupt(name);
  return plain;
}

// --- SQLite ---

using Statement = storage::SqliteStatement;

constexpr const char* kSecretsSchema =
    "CREATE TABLE IF NOT EXISTS secrets ("
    " name TEXT PRIMARY KEY, nonce BLOB NOT NULL, ciphertext BLOB NOT NULL,"
    " tag BLOB NOT NULL, updated_ms INTEGER NOT NULL)";

// The data directory, 0700 when it is made here (the database file is made 0600 by
// open_sqlite_state).
Status make_dir(const std::string& data_dir) {
  std::error_code ec;
  if (std::filesystem::create_directories(data_dir, ec)) ::chmod(data_dir.c_str(), 0700);
  if (ec) return Error::make("storage", "cannot create " + data_dir + ": " + ec.message());
  return {};
}

}  // namespace

struct SecretStore::Impl {
  std::string db_path;
  std::shared_ptr<const SealingKey> key;
  sqlite3* db = nullptr;
  mutable std::mutex mu;  // one connection, used by one call at a time

  ~Impl() { sqlite3_close(db); }
};

std::string SecretStore::key_file_for(const std::string& data_dir) {
  return SealingKey::key_file_for(data_dir);
}

Result<std::unique_ptr<SecretStore>> SecretStore::open(const std::string& data_dir) {
  auto impl = std::make_unique<Impl>();
  impl->db_path = data_dir + "/secrets.db";
  if (auto s = make_dir(data_dir); !s) return s.error();
  auto key = SealingKey::load_or_create(key_file_for(data_dir));
  if (!key) return key.error();
  impl->key = std::move(*key);
  // Private (0600, -wal and -shm too); Impl::mu serialises the connection; every commit synced
  // (an acknowledged `airlock secrets set` is on disk). The CLI writes while the daemon reads:
  // the busy timeout makes each wait for the other's lock rather than fail.
  storage::SqliteStateOptions options;
  options.file_mode = 0600;
  options.serialized = false;
  options.synchronous = "FULL";
  auto db = storage::open_sqlite_state(impl->db_path, kSecretsSchema, "secrets database", options);
  if (!db) return db.error();
  impl->db = db->release();
  return std::unique_ptr<SecretStore>(new SecretStore(std::move(impl)));
}

SecretStore::SecretStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SecretStore::~SecretStore() = default;

Status SecretStore::set(const std::string& name, const std::string& value) {
  if (auto s = check_name(name); !s) return s;
  if (value.empty())
    return Error::make("invalid_argument", "secret '" + name + "': the value is empty");
  if (value.size() > kMaxValueSize)
    return Error::make("invalid_argument", "secret '" + name + "': the value is over " +
                                               std::to_string(kMaxValueSize) + " bytes");
  auto sealed = impl_->key->seal(name, value);
  if (!sealed) return sealed.error();
  std::lock_guard lock(impl_->mu);
  Statement s(
      impl_->db,
      "INSERT INTO secrets (name, nonce, ciphertext, tag, updated_ms) VALUES (?, ?, ?, ?, ?)"
      " ON CONFLICT (name) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext,"
      " tag = excluded.tag, updated_ms = excluded.updated_ms");
  s.bind(1, name);
  s.bind_blob(2, sealed->nonce);
  s.bind_blob(3, sealed->ciphertext);
  s.bind_blob(4, sealed->tag);
  s.bind(5, unix_ms_now());
  if (s.step() != SQLITE_DONE) return storage::sqlite_error(impl_->db, "secrets database", "setting '" + name + "'");
  return {};
}

// A fresh read each time: a value set by `airlock secrets set` is seen without a restart.
Result<std::string> SecretStore::get(const std::string& name) const {
  if (auto s = check_name(name); !s) return s.error();
  Sealed sealed;
  {
    std::lock_guard lock(impl_->mu);
    Statement s(impl_->db, "SELECT nonce, ciphertext, tag FROM secrets WHERE name = ?");
    s.bind(1, name);
    int rc = s.step();
    if (rc == SQLITE_DONE) return Error::make("unknown_secret", "no secret named '" + name + "'");
    if (rc != SQLITE_ROW) return storage::sqlite_error(impl_->db, "secrets database", "reading '" + name + "'");
    sealed = {s.blob(0), s.blob(1), s.blob(2)};
  }
  return open_sealed(*impl_->key, name, sealed);
}

Result<std::vector<SecretStore::Entry>> SecretStore::list() const {
  std::lock_guard lock(impl_->mu);
  Statement s(impl_->db, "SELECT name, updated_ms FROM secrets ORDER BY name");
  std::vector<Entry> entries;
  int rc = SQLITE_ROW;
  while ((rc = s.step()) == SQLITE_ROW) entries.push_back({s.blob(0), s.integer(1)});
  if (rc != SQLITE_DONE) return storage::sqlite_error(impl_->db, "secrets database", "listing");
  return entries;
}

Status SecretStore::remove(const std::string& name) {
  if (auto s = check_name(name); !s) return s;
  std::lock_guard lock(impl_->mu);
  Statement s(impl_->db, "DELETE FROM secrets WHERE name = ?");
  s.bind(1, name);
  if (s.step() != SQLITE_DONE) return storage::sqlite_error(impl_->db, "secrets database", "removing '" + name + "'");
  if (sqlite3_changes(impl_->db) == 0)
    return Error::make("unknown_secret", "no secret named '" + name + "'");
  return {};
}

}  // namespace airlock::creds
