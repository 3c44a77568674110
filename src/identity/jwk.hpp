// JSON Web Keys (RFC 7517) for signature verification: the three algorithms Airlock accepts,
// one parsed public key, a parsed JWKS, and the RFC 7638 thumbprint.
#pragma once

#include <openssl/types.h>

#include <cstddef>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock::identity {

// The JWS algorithms accepted. Everything else ("none", HS*, PS*, RS384, ...) is refused.
enum class Alg { RS256, ES256, EdDSA };

std::optional<Alg> alg_from_name(std::string_view name);
std::string_view alg_name(Alg alg);

// One public signing key. `alg` is the one algorithm the key may verify, derived from
// kty/crv and, when the JWK names one, its "alg" (which must agree).
struct Jwk {
  std::string kid;
  std::string kty;  // "RSA", "EC" or "OKP"
  std::string crv;  // "P-256", "Ed25519", or empty for RSA
  Alg alg = Alg::RS256;
  std::shared_ptr<EVP_PKEY> key;
};

// One JWK object as a key. Errors: "unsupported_key" (another kty/crv/alg/use, an RSA
// modulus under 2048 bits) and "invalid_key" (missing or undecodable members).
Result<Jwk> parse_jwk(const nlohmann::json& jwk);

// A parsed JWKS: kid -> key. Keys that cannot verify one of our algorithms (encryption keys,
// other curves, no kid) are skipped, not fatal: identity providers publish such keys too. A kid
// that appears twice is dropped altogether, since which key it names is ambiguous.
class KeySet {
 public:
  // Errors: "invalid_jwks" (not JSON, or no "keys" array).
  static Result<KeySet> parse(std::string_view document);
  static KeySet from_keys(const std::map<std::string, Jwk>& keys);

  const Jwk* find(std::string_view kid) const;
  std::size_t size() const { return keys_.size(); }

 private:
  std::map<std::string, Jwk, std::less<>> keys_;
};

// RFC 7638: base64url(SHA-256(the required members, sorted, no whitespace)). Errors:
// "unsupported_key" for a kty other than RSA, EC and OKP, "invalid_key" for missing members.
Result<std::string> jwk_thumbprint(const nlohmann::json& jwk);

}  // namespace airlock::identity
