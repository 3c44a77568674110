#include "audit/signing_key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/no_sigpipe.hpp"
#include "common/unique_fd.hpp"

namespace airlock::audit {

struct SigningKey::Impl {
  EVP_PKEY* pkey = nullptr;
  ~Impl() { EVP_PKEY_free(pkey); }
};

namespace {

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyContextDeleter {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct MdContextDeleter {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
struct BioDeleter {
  void operator()(BIO* p) const { BIO_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

std::string openssl_reason() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buffer[256];
  ERR_error_string_n(code, buffer, sizeof buffer);
  return buffer;
}

Error key_error(const std::string& message) {
  return Error::make("audit_key", message);
}

std::string errno_text() { return std::strerror(errno); }

std::optional<PublicKey> public_key_of(EVP_PKEY* pkey) {
  std::array<std::uint8_t, kPublicKeySize> raw{};
  std::size_t length = raw.size();
  if (EVP_PKEY_get_raw_public_key(pkey, raw.data(), &length) != 1 || length != raw.size())
    return std::nullopt;
  return PublicKey::from_bytes(ByteView(raw));
}

std::string bio_contents(BIO* bio) {
  char* data = nullptr;
  long length = BIO_get_mem_data(bio, &data);
  return length > 0 ? std::string(data, static_cast<std::size_t>(length)) : std::string();
}

Result<std::string> read_private_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return key_error("cannot open key file " + path + ": " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return key_error("cannot stat " + path + ": " + errno_text());
  if (!S_ISREG(st.st_mode)) return key_error(path + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return key_error("key file " + path + " has mode " + mode +
                     ": group or others can reach it; it must be 0600");
  }
  std::string contents;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return key_error("cannot read " + path + ": " + errno_text());
    if (n == 0) break;
    contents.append(buffer, static_cast<std::size_t>(n));
  }
  return contents;
}

std::string parent_directory(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Writes `pem` to a fresh file at `path` with mode 0600, durably, or fails with EEXIST
// semantics when `path` already exists (another process won the race to create it).
Result<bool> create_key_file(const std::string& path, const std::string& pem) {
  std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(std::random_device{}());
  {
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) return key_error("cannot create " + temp + ": " + errno_text());
    if (::fchmod(fd.get(), 0600) != 0) return key_error("cannot chmod " + temp + ": " + errno_text());
    if (!write_all(fd.get(), pem)) {
      const std::string why = errno_text();
      ::unlink(temp.c_str());
      return key_error("cannot write key file: " + why);
    }
    if (::fsync(fd.get()) != 0) {
      ::unlink(temp.c_str());
      return key_error("cannot fsync " + temp + ": " + errno_text());
    }
  }
  // link() never replaces an existing file: if another process created the key first, we
  // keep theirs.
  bool created = ::link(temp.c_str(), path.c_str()) == 0;
  int link_errno = errno;
  ::unlink(temp.c_str());
  if (!created && link_errno != EEXIST)
    return key_error("cannot create " + path + ": " + std::strerror(link_errno));
  UniqueFd dir(::open(parent_directory(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) ::fsync(dir.get());
  return created;
}

}  // namespace

std::optional<PublicKey> PublicKey::from_bytes(ByteView raw) {
  if (raw.size() != kPublicKeySize) return std::nullopt;
  PublicKey key;
  std::copy(raw.begin(), raw.end(), key.bytes.begin());
  return key;
}

std::optional<PublicKey> PublicKey::from_hex(std::string_view hex) {
  auto raw = airlock::audit::from_hex(hex);
  if (!raw) return std::nullopt;
  return from_bytes(as_bytes(*raw));
}

std::string PublicKey::key_id() const {
  Hash digest = sha256(ByteView(bytes));
  return to_hex(ByteView(digest.data(), 8));
}

std::string PublicKey::pem() const {
  PkeyPtr pkey(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, bytes.data(), bytes.size()));
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!pkey || !bio || PEM_write_bio_PUBKEY(bio.get(), pkey.get()) != 1) return {};
  return bio_contents(bio.get());
}

Status verify_signature(const PublicKey& key, ByteView message, ByteView signature) {
  if (signature.size() != kSignatureSize)
    return Error::make("bad_signature", "signature is " + std::to_string(signature.size()) +
                                            " bytes, not 64");
  PkeyPtr pkey(
      EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, key.bytes.data(), key.bytes.size()));
  std::unique_ptr<EVP_MD_CTX, MdContextDeleter> ctx(EVP_MD_CTX_new());
  if (!pkey || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1)
    return Error::make("bad_signature", "cannot use public key: " + openssl_reason());
  int verdict = EVP_DigestVerify(ctx.get(), signature.data(), signature.size(), message.data(),
                                 message.size());
  ERR_clear_error();
  if (verdict != 1)
    return Error::make("bad_signature",
                       "signature does not verify under key " + key.key_id());
  return {};
}

SigningKey::SigningKey(std::unique_ptr<Impl> impl, PublicKey public_key)
    : impl_(std::move(impl)), public_key_(public_key) {}
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;
SigningKey::~SigningKey() = default;

Result<SigningKey> SigningKey::generate() {
  std::unique_ptr<EVP_PKEY_CTX, PkeyContextDeleter> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, "ED25519", nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_generate(ctx.get(), &raw) != 1)
    return key_error("cannot generate an Ed25519 key: " + openssl_reason());
  auto impl = std::make_unique<Impl>();
  impl->pkey = raw;
  auto public_key = public_key_of(raw);
  if (!public_key) return key_error("cannot read the generated public key");
  return SigningKey(std::move(impl), *public_key);
}

Result<SigningKey> SigningKey::load(const std::string& path) {
  auto pem = read_private_file(path);
  if (!pem) return pem.error();
  BioPtr bio(BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size())));
  EVP_PKEY* raw = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  OPENSSL_cleanse(pem->data(), pem->size());
  if (raw == nullptr) return key_error("cannot parse " + path + ": " + openssl_reason());
  auto impl = std::make_unique<Impl>();
  impl->pkey = raw;
  if (!EVP_PKEY_is_a(raw, "ED25519")) return key_error(path + " is not an Ed25519 private key");
  auto public_key = public_key_of(raw);
  if (!public_key) return key_error("cannot read the public part of " + path);
  return SigningKey(std::move(impl), *public_key);
}

Result<SigningKey> SigningKey::load_or_create(const std::string& path) {
  if (::access(path.c_str(), F_OK) == 0) return load(path);
  auto key = generate();
  if (!key) return key;
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key->impl_->pkey, nullptr, nullptr, 0, nullptr,
                                       nullptr) != 1)
    return key_error("cannot encode the key: " + openssl_reason());
  std::string pem = bio_contents(bio.get());
  auto created = create_key_file(path, pem);
  OPENSSL_cleanse(pem.data(), pem.size());
  if (!created) return created.error();
  if (!*created) return load(path);  // lost the race: use the winner's key
  return key;
}

Result<Signature> SigningKey::sign(ByteView message) const {
  Signature signature{};
  std::size_t length = signature.size();
  std::unique_ptr<EVP_MD_CTX, MdContextDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, impl_->pkey) != 1 ||
      EVP_DigestSign(ctx.get(), signature.data(), &length, message.data(), message.size()) != 1 ||
      length != signature.size())
    return key_error("cannot sign: " + openssl_reason());
  return signature;
}

Hash SigningKey::derive_secret(std::string_view label) const {
  std::array<std::uint8_t, 32> seed{};
  std::size_t length = seed.size();
  EVP_PKEY_get_raw_private_key(impl_->pkey, seed.data(), &length);
  Hash secret = hmac_sha256(ByteView(seed), as_bytes(label));
  OPENSSL_cleanse(seed.data(), seed.size());
  return secret;
}

}  // namespace airlock::audit
