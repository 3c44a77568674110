#include "identity/signature.hpp"

#include <openssl/ecdsa.h>

#include <string>

#include "identity/ossl.hpp"

namespace airlock::identity {
namespace {

// r||s (32 bytes each, big-endian) as the DER ECDSA-Sig-Value OpenSSL verifies.
std::string es256_der(std::string_view raw) {
  if (raw.size() != 64) return {};
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  ossl::Ptr<BIGNUM> r(BN_bin2bn(bytes, 32, nullptr));
  ossl::Ptr<BIGNUM> s(BN_bin2bn(bytes + 32, 32, nullptr));
  ossl::Ptr<ECDSA_SIG> sig(ECDSA_SIG_new());
  if (!r || !s || !sig || ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) return {};
  (void)r.release();  // owned by sig now
  (void)s.release();
  unsigned char* der = nullptr;
  const int n = i2d_ECDSA_SIG(sig.get(), &der);
  if (n <= 0) return {};
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  return out;
}

// A second check of what KeySet already enforced: EVP would happily verify "RS256" with an EC key.
bool key_fits(Alg alg, EVP_PKEY* key) {
  switch (alg) {
    case Alg::RS256:
      return EVP_PKEY_is_a(key, "RSA") == 1;
    case Alg::ES256:
      return EVP_PKEY_is_a(key, "EC") == 1;
    case Alg::EdDSA:
      return EVP_PKEY_is_a(key, "ED25519") == 1;
  }
  return false;
}

}  // namespace

bool verify_signature(Alg alg, EVP_PKEY* key, std::string_view signing_input,
                      std::string_view signature) {
  if (key == nullptr || !key_fits(alg, key)) return false;
  std::string der;
  if (alg == Alg::ES256) {
    der = es256_der(signature);
    if (der.empty()) return false;
    signature = der;
  }
  ossl::Ptr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  // Ed25519 hashes internally: no digest is named for it.
  const EVP_MD* md = alg == Alg::EdDSA ? nullptr : EVP_sha256();
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key) != 1) return false;
  const int rc = EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
      reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size());
  return rc == 1;
}

}  // namespace airlock::identity
