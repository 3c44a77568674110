// Owning pointers for the OpenSSL objects the identity library creates (internal header).
#pragma once

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <memory>

namespace airlock::identity::ossl {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(ECDSA_SIG* p) const { ECDSA_SIG_free(p); }
  void operator()(OSSL_PARAM_BLD* p) const { OSSL_PARAM_BLD_free(p); }
  void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
};

template <typename T>
using Ptr = std::unique_ptr<T, Free>;

// A shared key: JWKs are held by several KeySet snapshots and verifying threads.
inline std::shared_ptr<EVP_PKEY> share(EVP_PKEY* key) {
  return std::shared_ptr<EVP_PKEY>(key, [](EVP_PKEY* p) { EVP_PKEY_free(p); });
}

}  // namespace airlock::identity::ossl
