#include "identity/signer.hpp"

#include <fcntl.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/no_sigpipe.hpp"
#include "common/unique_fd.hpp"
#include "identity/base64url.hpp"
#include "identity/jwk.hpp"
#include "identity/ossl.hpp"

namespace airlock::identity {
namespace {

Error key_error(const std::filesystem::path& file, const std::string& why) {
  return Error::make("key_file_error", "key file " + file.string() + ": " + why);
}

std::string errno_text() {
  return std::strerror(errno);
}

Result<std::string> private_pem(EVP_PKEY* key) {
  ossl::Ptr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return Error::make("key_file_error", "cannot encode the private key");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

// A new key written to a 0600 temporary file, then link()ed into place: the key file appears
// whole or not at all, and a concurrent creator's key wins without being overwritten.
Status create_key_file(const std::filesystem::path& file) {
  ossl::Ptr<EVP_PKEY> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!key) return key_error(file, "cannot generate an Ed25519 key");
  auto pem = private_pem(key.get());
  if (!pem) return pem.error();
  const std::string tmp = file.string() + ".tmp." + std::to_string(::getpid());
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return key_error(file, "cannot create " + tmp + ": " + errno_text());
    if (!write_all(fd.get(), *pem) || ::fsync(fd.get()) != 0) {
      ::unlink(tmp.c_str());
      return key_error(file, "cannot write the key: " + errno_text());
    }
  }
  const int linked = ::link(tmp.c_str(), file.c_str());
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked != 0 && link_errno != EEXIST)
    return key_error(file, std::string("cannot install the key: ") + std::strerror(link_errno));
  return Status::success();
}

Result<std::shared_ptr<EVP_PKEY>> read_key_file(const std::filesystem::path& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return key_error(file, "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return key_error(file, "not a regular file");
  if ((st.st_mode & 077) != 0)
    return Error::make("insecure_key_file",
                       "key file " + file.string() + " is accessible to group or others");
  std::string pem;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0 && pem.size() < 65536)
    pem.append(buf, static_cast<std::size_t>(n));
  ossl::Ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  OPENSSL_cleanse(pem.data(), pem.size());
  if (key == nullptr) return key_error(file, "not a PEM private key");
  auto shared = ossl::share(key);
  if (EVP_PKEY_is_a(key, "ED25519") != 1) return key_error(file, "not an Ed25519 key");
  return shared;
}

}  // namespace

Result<TokenSigner> TokenSigner::load_or_create(const std::filesystem::path& key_file) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(key_file, ec))) {
    if (auto created = create_key_file(key_file); !created) return created.error();
  }
  auto key = read_key_file(key_file);
  if (!key) return key.error();
  return TokenSigner(std::move(*key));
}

TokenSigner::TokenSigner(std::shared_ptr<EVP_PKEY> key) : key_(std::move(key)) {
  unsigned char raw[32];
  std::size_t size = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(key_.get(), raw, &size) != 1) size = 0;
  public_jwk_ = {
      {"kty", "OKP"},
      {"crv", "Ed25519"},
      {"x", base64url_encode(std::string_view(reinterpret_cast<const char*>(raw), size))}};
  kid_ = jwk_thumbprint(public_jwk_).value();  // the members above are complete by construction
}

Result<std::string> TokenSigner::issue(const nlohmann::json& claims) const {
  if (!claims.is_object()) return Error::make("invalid_claims", "the claims are not a JSON object");
  const nlohmann::json header = {{"alg", "EdDSA"}, {"typ", "JWT"}, {"kid", kid_}};
  const std::string input = base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
  ossl::Ptr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  unsigned char sig[64];
  std::size_t sig_size = sizeof sig;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &sig_size,
                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
    return Error::make("sign_failed", "cannot sign the token");
  return input + "." +
         base64url_encode(std::string_view(reinterpret_cast<const char*>(sig), sig_size));
}

nlohmann::json TokenSigner::jwks() const {
  nlohmann::json jwk = public_jwk_;
  jwk["kid"] = kid_;
  jwk["alg"] = "EdDSA";
  jwk["use"] = "sig";
  return {{"keys", nlohmann::json::array({jwk})}};
}

}  // namespace airlock::identity
