#include "creds/secret_store.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "common/hex.hpp"
#include "common/unique_fd.hpp"
#include "policy/names.hpp"
#include "storage/sqlite_state.hpp"

namespace airlock::creds {
namespace {

constexpr std::size_t kKeySize = 32;
constexpr std::size_t kNonceSize = 12;  // GCM's natural nonce: no GHASH of the IV
constexpr std::size_t kTagSize = 16;
constexpr std::size_t kMaxValueSize = 64 * 1024;

using Key = std::array<unsigned char, kKeySize>;

// A byte buffer that is wiped when it goes away: plaintext and key material.
struct Wiped {
  std::string bytes;
  ~Wiped() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

struct Sealed {
  std::string nonce, ciphertext, tag;
};

std::string errno_text() {
  return std::strerror(errno);
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status check_name(const std::string& name) {
  if (policy::valid_tool_name(name)) return {};
  return Error::make("invalid_argument",
                     "secret name '" + name + "' is not valid: " + policy::kToolNameRule);
}

// --- the key file ---

Status check_key_file(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::make("storage", "stat " + path + ": " + errno_text());
  if (!S_ISREG(st.st_mode))
    return Error::make("storage", "key file " + path + " is not a regular file");
  if ((st.st_mode & 077) != 0)
    return Error::make(
        "insecure_key_file",
        "key file " + path + " may be read or written by group or others: chmod 600 it");
  if (st.st_size != static_cast<off_t>(kKeySize))
    return Error::make("storage", "key file " + path + " holds " + std::to_string(st.st_size) +
                                      " bytes, not " + std::to_string(kKeySize));
  return {};
}

Result<Key> read_key(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Error::make("storage", "cannot open key file " + path + ": " + errno_text());
  if (auto s = check_key_file(fd.get(), path); !s) return s.error();
  Key key{};
  if (::read(fd.get(), key.data(), key.size()) != static_cast<ssize_t>(key.size())) {
    OPENSSL_cleanse(key.data(), key.size());
    return Error::make("storage", "cannot read key file " + path);
  }
  return key;
}

// A new key, written whole to a private temporary file, then linked into place: a reader
// never sees a half-written key, and when two processes race the first link wins.
Status create_key(const std::string& path) {
  unsigned char suffix[8];  // not the pid alone: two threads may race too
  if (RAND_bytes(suffix, sizeof suffix) != 1)
    return Error::make("storage", "no random bytes for key file " + path);
  const std::string temp = path + ".tmp." + hex_encode(suffix, sizeof suffix);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return Error::make("storage", "cannot create key file " + temp + ": " + errno_text());
  Key key{};
  bool written = RAND_bytes(key.data(), static_cast<int>(key.size())) == 1 &&
                 ::write(fd.get(), key.data(), key.size()) == static_cast<ssize_t>(key.size()) &&
                 ::fsync(fd.get()) == 0;
  OPENSSL_cleanse(key.data(), key.size());
  fd.reset();
  bool linked = written && (::link(temp.c_str(), path.c_str()) == 0 || errno == EEXIST);
  const std::string reason = errno_text();
  ::unlink(temp.c_str());
  if (!linked) return Error::make("storage", "cannot create key file " + path + ": " + reason);
  return {};
}

Result<Key> load_or_create_key(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT)
    if (auto s = create_key(path); !s) return s.error();
  return read_key(path);
}

// --- AES-256-GCM ---

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

auto* bytes(std::string& s) {
  return reinterpret_cast<unsigned char*>(s.data());
}
auto* bytes(const std::string& s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

Result<Sealed> seal(const Key& key, const std::string& name, const std::string& value) {
  Sealed out{std::string(kNonceSize, '\0'), std::string(value.size(), '\0'),
             std::string(kTagSize, '\0')};
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0;
  bool ok = ctx && RAND_bytes(bytes(out.nonce), kNonceSize) == 1 &&
            EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(),
                               bytes(out.nonce)) == 1 &&
            EVP_EncryptUpdate(ctx.get(), nullptr, &len, bytes(name),
                              static_cast<int>(name.size())) == 1 &&
            EVP_EncryptUpdate(ctx.get(), bytes(out.ciphertext), &len, bytes(value),
                              static_cast<int>(value.size())) == 1 &&
            EVP_EncryptFinal_ex(ctx.get(), bytes(out.ciphertext) + len, &len) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagSize, bytes(out.tag)) == 1;
  if (!ok) return Error::make("storage", "cannot encrypt secret '" + name + "'");
  return out;
}

Error corrupt(const std::string& name) {
  return Error::make(
      "secret_corrupt",
      "secret '" + name + "' does not decrypt: it was altered, or sealed with another key");
}

// The value, or secret_corrupt: the tag covers the name too, so a row moved under another
// name does not open.
Result<std::string> open_sealed(const Key& key, const std::string& name, const Sealed& in) {
  if (in.nonce.size() != kNonceSize || in.tag.size() != kTagSize || in.ciphertext.empty())
    return corrupt(name);
  Wiped plain{std::string(in.ciphertext.size(), '\0')};
  std::string tag = in.tag;  // EVP takes the expected tag as non-const
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0;
  bool ok =
      ctx &&
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), bytes(in.nonce)) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, bytes(name), static_cast<int>(name.size())) ==
          1 &&
      EVP_DecryptUpdate(ctx.get(), bytes(plain.bytes), &len, bytes(in.ciphertext),
                        static_cast<int>(in.ciphertext.size())) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagSize, bytes(tag)) == 1 &&
      EVP_DecryptFinal_ex(ctx.get(), bytes(plain.bytes) + len, &len) == 1;
  if (!ok) return corrupt(name);
  return std::string(plain.bytes);
}

// --- SQLite ---

using Statement = storage::SqliteStatement;

Error db_error(sqlite3* db, const std::string& what) {
  return Error::make("storage", "secrets database: " + what + ": " + sqlite3_errmsg(db));
}

constexpr const char* kSchema =
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
  Key key{};
  sqlite3* db = nullptr;
  mutable std::mutex mu;  // one connection, used by one call at a time

  ~Impl() {
    sqlite3_close(db);
    OPENSSL_cleanse(key.data(), key.size());
  }
};

std::string SecretStore::key_file_for(const std::string& data_dir) {
  if (const char* env = std::getenv("AIRLOCK_SECRETS_KEY_FILE"); env != nullptr && *env != '\0')
    return env;
  std::string dir = data_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + ".secrets-key";
}

Result<std::unique_ptr<SecretStore>> SecretStore::open(const std::string& data_dir) {
  auto impl = std::make_unique<Impl>();
  impl->db_path = data_dir + "/secrets.db";
  if (auto s = make_dir(data_dir); !s) return s.error();
  auto key = load_or_create_key(key_file_for(data_dir));
  if (!key) return key.error();
  impl->key = *key;
  OPENSSL_cleanse(key->data(), key->size());
  // Private (0600, -wal and -shm too); Impl::mu serialises the connection; every commit synced
  // (an acknowledged `airlock secrets set` is on disk). The CLI writes while the daemon reads:
  // the busy timeout makes each wait for the other's lock rather than fail.
  storage::SqliteStateOptions options;
  options.file_mode = 0600;
  options.serialized = false;
  options.synchronous = "FULL";
  auto db = storage::open_sqlite_state(impl->db_path, kSchema, "secrets database", options);
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
  auto sealed = seal(impl_->key, name, value);
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
  s.bind(5, now_ms());
  if (s.step() != SQLITE_DONE) return db_error(impl_->db, "setting '" + name + "'");
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
    if (rc != SQLITE_ROW) return db_error(impl_->db, "reading '" + name + "'");
    sealed = {s.blob(0), s.blob(1), s.blob(2)};
  }
  return open_sealed(impl_->key, name, sealed);
}

Result<std::vector<SecretStore::Entry>> SecretStore::list() const {
  std::lock_guard lock(impl_->mu);
  Statement s(impl_->db, "SELECT name, updated_ms FROM secrets ORDER BY name");
  std::vector<Entry> entries;
  int rc = SQLITE_ROW;
  while ((rc = s.step()) == SQLITE_ROW) entries.push_back({s.blob(0), s.integer(1)});
  if (rc != SQLITE_DONE) return db_error(impl_->db, "listing");
  return entries;
}

Status SecretStore::remove(const std::string& name) {
  if (auto s = check_name(name); !s) return s;
  std::lock_guard lock(impl_->mu);
  Statement s(impl_->db, "DELETE FROM secrets WHERE name = ?");
  s.bind(1, name);
  if (s.step() != SQLITE_DONE) return db_error(impl_->db, "removing '" + name + "'");
  if (sqlite3_changes(impl_->db) == 0)
    return Error::make("unknown_secret", "no secret named '" + name + "'");
  return {};
}

}  // namespace airlock::creds
