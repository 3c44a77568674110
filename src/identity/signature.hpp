// JWS signature verification with OpenSSL's EVP_DigestVerify (internal to the identity library,
// exposed for the tests' known-answer vectors).
#pragma once

#include <openssl/types.h>

#include <string_view>

#include "identity/jwk.hpp"

namespace airlock::identity {

// Whether `signature` (the decoded third JWS segment) signs `signing_input` under `key` with
// `alg`. ES256 signatures are the 64-byte r||s of RFC 7518 section 3.4; any other length fails.
bool verify_signature(Alg alg, EVP_PKEY* key, std::string_view signing_input,
                      std::string_view signature);

}  // namespace airlock::identity
