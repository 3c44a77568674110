#include "creds/sealing_key.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/digest.hpp"
#include "common/hex.hpp"
#include "common/unique_fd.hpp"
#include "identity/base64url.hpp"

namespace airlock::creds {
namespace {

using Key = std::array<unsigned char, SealingKey::kKeySize>;

// Plaintext that is wiped when it goes away.
struct Wiped {
  std::string bytes;
  ~Wiped() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

constexpr const char* kIdLabel = "airlock sealing key id v1";
constexpr std::size_t kIdHexDigits = 16;

std::string errno_text() {
  return std::strerror(errno);
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
  if (st.st_size != static_cast<off_t>(SealingKey::kKeySize))
    return Error::make("storage", "key file " + path + " holds " + std::to_string(st.st_size) +
                                      " bytes, not " + std::to_string(SealingKey::kKeySize));
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

// --- AES-256-GCM ---

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

auto* bytes(std::string& s) {
  return reinterpret_cast<unsigned char*>(s.data());
}
auto* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

Error corrupt(std::string_view associated) {
  return Error::make("sealed_corrupt", std::string(associated) +
                                           " does not decrypt: it was altered, or sealed with another key");
}

}  // namespace

std::string SealingKey::key_file_for(const std::string& data_dir) {
  if (const char* env = std::getenv("AIRLOCK_SECRETS_KEY_FILE"); env != nullptr && *env != '\0')
    return env;
  std::string dir = data_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + ".secrets-key";
}

Result<std::shared_ptr<const SealingKey>> SealingKey::load_or_create(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT)
    if (auto s = create_key(path); !s) return s.error();
  auto key = read_key(path);
  if (!key) return key.error();
  auto made = from_bytes(*key);
  OPENSSL_cleanse(key->data(), key->size());
  return made;
}

std::shared_ptr<const SealingKey> SealingKey::from_bytes(const Key& bytes) {
  return std::shared_ptr<const SealingKey>(new SealingKey(bytes));
}

SealingKey::SealingKey(const Key& bytes) : key_(bytes) {
  const std::string_view raw(reinterpret_cast<const char*>(key_.data()), key_.size());
  id_ = hmac_sha256_hex(raw, kIdLabel).substr(0, kIdHexDigits);
}

SealingKey::~SealingKey() { OPENSSL_cleanse(key_.data(), key_.size()); }

Result<SealingKey::Sealed> SealingKey::seal(std::string_view associated, std::string_view plain) const {
  Sealed out{std::string(kNonceSize, '\0'), std::string(plain.size(), '\0'), std::string(kTagSize, '\0')};
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0;
  bool ok = ctx && RAND_bytes(bytes(out.nonce), kNonceSize) == 1 &&
            EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key_.data(), bytes(out.nonce)) == 1 &&
            EVP_EncryptUpdate(ctx.get(), nullptr, &len, bytes(associated), static_cast<int>(associated.size())) == 1 &&
            EVP_EncryptUpdate(ctx.get(), bytes(out.ciphertext), &len, bytes(plain), static_cast<int>(plain.size())) == 1 &&
            EVP_EncryptFinal_ex(ctx.get(), bytes(out.ciphertext) + len, &len) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagSize, bytes(out.tag)) == 1;
  if (!ok) return Error::make("storage", "cannot encrypt " + std::string(associated));
  return out;
}

// The tag covers the associated data too: a value moved under another name does not open.
Result<std::string> SealingKey::open(std::string_view associated, const Sealed& in) const {
  if (in.nonce.size() != kNonceSize || in.tag.size() != kTagSize) return corrupt(associated);
  Wiped plain{std::string(in.ciphertext.size(), '\0')};
  std::string tag = in.tag;  // EVP takes the expected tag as non-const
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0;
  bool ok =
      ctx && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key_.data(), bytes(in.nonce)) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, bytes(associated), static_cast<int>(associated.size())) == 1 &&
      EVP_DecryptUpdate(ctx.get(), bytes(plain.bytes), &len, bytes(in.ciphertext),
                        static_cast<int>(in.ciphertext.size())) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagSize, bytes(tag)) == 1 &&
      EVP_DecryptFinal_ex(ctx.get(), bytes(plain.bytes) + len, &len) == 1;
  if (!ok) return corrupt(associated);
  return std::string(plain.bytes);
}

Result<std::string> SealingKey::seal_text(std::string_view associated, std::string_view plain) const {
  auto sealed = seal(associated, plain);
  if (!sealed) return sealed.error();
  return id_ + "." + identity::base64url_encode(sealed->nonce + sealed->ciphertext + sealed->tag);
}

bool SealingKey::is_sealed_text(std::string_view text) {
  if (text.size() <= kIdHexDigits || text[kIdHexDigits] != '.') return false;
  for (std::size_t i = 0; i < kIdHexDigits; ++i)
    if (hex_digit_value(text[i]) < 0) return false;
  return true;
}

Result<std::string> SealingKey::open_text(std::string_view associated, std::string_view text) const {
  if (!is_sealed_text(text)) return corrupt(associated);
  if (text.substr(0, kIdHexDigits) != id_)
    return Error::make("sealed_other_key", std::string(associated) + " was sealed with key " +
                                               std::string(text.substr(0, kIdHexDigits)) + ", not this one (" +
                                               id_ + "): give every replica the same key file");
  auto raw = identity::base64url_decode(text.substr(kIdHexDigits + 1));
  if (!raw || raw->size() < kNonceSize + kTagSize) return corrupt(associated);
  Sealed sealed{raw->substr(0, kNonceSize), raw->substr(kNonceSize, raw->size() - kNonceSize - kTagSize),
                raw->substr(raw->size() - kTagSize)};
  OPENSSL_cleanse(raw->data(), raw->size());
  return open(associated, sealed);
}

}  // namespace airlock::creds
