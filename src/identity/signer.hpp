// Airlock's own tokens (the output of RFC 8693 token exchange): an Ed25519 key pair kept in a
// PEM file in the data directory, compact JWS signing, and the public JWKS to publish.
#pragma once

#include <openssl/types.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.hpp"

namespace airlock::identity {

class TokenSigner {
 public:
  // The key in `key_file` (a PKCS#8 PEM Ed25519 private key, mode 0600), created first if the
  // file does not exist. Errors: "key_file_error" (cannot read/write, not an Ed25519 key) and
  // "insecure_key_file" (readable or writable by group or others).
  static Result<TokenSigner> load_or_create(const std::filesystem::path& key_file);

  // A compact JWS of `claims` with the header {alg: EdDSA, typ: JWT, kid: kid()}. The claims
  // are signed as given (iss, aud, exp, ... are the caller's). Error: "invalid_claims" (not an
  // object), "sign_failed".
  Result<std::string> issue(const nlohmann::json& claims) const;

  // {"keys": [the public key as an OKP JWK, with kid, alg, use]}: /.well-known/jwks.json.
  nlohmann::json jwks() const;

  // The RFC 7638 thumbprint of the public key.
  const std::string& kid() const { return kid_; }

 private:
  explicit TokenSigner(std::shared_ptr<EVP_PKEY> key);

  std::shared_ptr<EVP_PKEY> key_;
  nlohmann::json public_jwk_;  // kty, crv, x
  std::string kid_;
};

}  // namespace airlock::identity
