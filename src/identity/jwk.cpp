#include "identity/jwk.hpp"

#include <openssl/core_names.h>
#include <openssl/sha.h>

#include <algorithm>
#include <set>
#include <vector>

#include "common/json_limits.hpp"
#include "identity/base64url.hpp"
#include "identity/ossl.hpp"

namespace airlock::identity {
namespace {

constexpr std::size_t kMaxJwksDepth = 16;  // {"keys": [{..., "x5c": [...]}]} is 4

Error invalid(const std::string& why) {
  return Error::make("invalid_key", "JWK: " + why);
}
Error unsupported(const std::string& why) {
  return Error::make("unsupported_key", "JWK: " + why);
}

// A required base64url member, decoded.
Result<std::string> member_bytes(const nlohmann::json& jwk, const char* name) {
  auto it = jwk.find(name);
  if (it == jwk.end() || !it->is_string())
    return invalid(std::string("no \"") + name + "\" member");
  auto bytes = base64url_decode(it->get_ref<const std::string&>());
  if (!bytes) return invalid(std::string("\"") + name + "\" is not base64url");
  return bytes;
}

std::string string_member(const nlohmann::json& jwk, const char* name) {
  auto it = jwk.find(name);
  return it != jwk.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// EVP_PKEY_fromdata for a public key of `type` ("RSA", "EC") from the built parameters.
Result<std::shared_ptr<EVP_PKEY>> from_params(const char* type, OSSL_PARAM_BLD* bld) {
  ossl::Ptr<OSSL_PARAM> params(OSSL_PARAM_BLD_to_param(bld));
  ossl::Ptr<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1)
    return invalid(std::string("not a valid ") + type + " public key");
  auto shared = ossl::share(key);
  // For EC this checks that the point is on the curve.
  ossl::Ptr<EVP_PKEY_CTX> check(EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1)
    return invalid(std::string("not a valid ") + type + " public key");
  return shared;
}

Result<std::shared_ptr<EVP_PKEY>> rsa_key(const nlohmann::json& jwk) {
  auto n = member_bytes(jwk, "n");
  if (!n) return n.error();
  auto e = member_bytes(jwk, "e");
  if (!e) return e.error();
  const auto* nb = reinterpret_cast<const unsigned char*>(n->data());
  const auto* eb = reinterpret_cast<const unsigned char*>(e->data());
  ossl::Ptr<BIGNUM> bn_n(BN_bin2bn(nb, static_cast<int>(n->size()), nullptr));
  ossl::Ptr<BIGNUM> bn_e(BN_bin2bn(eb, static_cast<int>(e->size()), nullptr));
  ossl::Ptr<OSSL_PARAM_BLD> bld(OSSL_PARAM_BLD_new());
  if (!bn_n || !bn_e || !bld ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1)
    return invalid("cannot build the RSA key");
  auto key = from_params("RSA", bld.get());
  if (!key) return key.error();
  if (EVP_PKEY_get_bits(key->get()) < 2048) return unsupported("RSA modulus under 2048 bits");
  return key;
}

Result<std::shared_ptr<EVP_PKEY>> p256_key(const nlohmann::json& jwk) {
  auto x = member_bytes(jwk, "x");
  if (!x) return x.error();
  auto y = member_bytes(jwk, "y");
  if (!y) return y.error();
  if (x->size() != 32 || y->size() != 32) return invalid("P-256 coordinates are not 32 bytes");
  const std::string point = std::string(1, '\x04') + *x + *y;  // uncompressed SEC1 point
  ossl::Ptr<OSSL_PARAM_BLD> bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) !=
          1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1)
    return invalid("cannot build the EC key");
  return from_params("EC", bld.get());
}

Result<std::shared_ptr<EVP_PKEY>> ed25519_key(const nlohmann::json& jwk) {
  auto x = member_bytes(jwk, "x");
  if (!x) return x.error();
  if (x->size() != 32) return invalid("an Ed25519 key is not 32 bytes");
  EVP_PKEY* key = EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(x->data()), x->size());
  if (key == nullptr) return invalid("not a valid Ed25519 public key");
  return ossl::share(key);
}

// The algorithm a kty/crv pair verifies, or an error for the ones we do not accept.
Result<Alg> alg_for(const std::string& kty, const std::string& crv) {
  if (kty == "RSA") return Alg::RS256;
  if (kty == "EC" && crv == "P-256") return Alg::ES256;
  if (kty == "OKP" && crv == "Ed25519") return Alg::EdDSA;
  return unsupported("no accepted algorithm for this kty/crv");
}

// "use" and "key_ops", when present, must allow signature verification.
bool usable_for_verify(const nlohmann::json& jwk) {
  if (jwk.contains("use") && jwk["use"] != "sig") return false;
  if (!jwk.contains("key_ops")) return true;
  const auto& ops = jwk["key_ops"];
  return ops.is_array() && std::find(ops.begin(), ops.end(), "verify") != ops.end();
}

}  // namespace

std::optional<Alg> alg_from_name(std::string_view name) {
  if (name == "RS256") return Alg::RS256;
  if (name == "ES256") return Alg::ES256;
  if (name == "EdDSA") return Alg::EdDSA;
  return std::nullopt;
}

std::string_view alg_name(Alg alg) {
  switch (alg) {
    case Alg::RS256:
      return "RS256";
    case Alg::ES256:
      return "ES256";
    case Alg::EdDSA:
      return "EdDSA";
  }
  return "";
}

Result<Jwk> parse_jwk(const nlohmann::json& jwk) {
  if (!jwk.is_object()) return invalid("not an object");
  if (jwk.contains("d")) return invalid("a private key in a public key set");
  if (!usable_for_verify(jwk)) return unsupported("not a signature key");
  Jwk out;
  out.kid = string_member(jwk, "kid");
  out.kty = string_member(jwk, "kty");
  out.crv = string_member(jwk, "crv");
  auto alg = alg_for(out.kty, out.crv);
  if (!alg) return alg.error();
  out.alg = *alg;
  if (jwk.contains("alg") && jwk["alg"] != alg_name(out.alg))
    return unsupported("its \"alg\" is not one Airlock accepts for this key type");
  auto key = out.alg == Alg::RS256   ? rsa_key(jwk)
             : out.alg == Alg::ES256 ? p256_key(jwk)
                                     : ed25519_key(jwk);
  if (!key) return key.error();
  out.key = std::move(*key);
  return out;
}

Result<KeySet> KeySet::parse(std::string_view document) {
  // A member named twice is refused, as in a token (verifier.cpp): a key whose "x" or "n" one
  // reader takes from the first and another from the second is not one key.
  auto parsed = parse_json_unique_members(document, kMaxJwksDepth);
  if (!parsed && parsed.error().code == "repeated_member")
    return Error::make("invalid_jwks", "the JWKS names a member twice: " + parsed.error().message);
  nlohmann::json doc = parsed ? std::move(*parsed) : nlohmann::json();
  if (!doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array())
    return Error::make("invalid_jwks", "the JWKS is not a JSON object with a \"keys\" array");
  std::map<std::string, Jwk> keys;
  std::set<std::string> duplicated;
  for (const auto& member : doc["keys"]) {
    auto jwk = parse_jwk(member);
    if (!jwk || jwk->kid.empty()) continue;
    if (!keys.emplace(jwk->kid, *jwk).second) duplicated.insert(jwk->kid);
  }
  for (const auto& kid : duplicated) keys.erase(kid);
  return from_keys(keys);
}

KeySet KeySet::from_keys(const std::map<std::string, Jwk>& keys) {
  KeySet set;
  for (const auto& [kid, jwk] : keys) set.keys_.emplace(kid, jwk);
  return set;
}

const Jwk* KeySet::find(std::string_view kid) const {
  auto it = keys_.find(kid);
  return it == keys_.end() ? nullptr : &it->second;
}

Result<std::string> jwk_thumbprint(const nlohmann::json& jwk) {
  static const std::map<std::string, std::vector<std::string>> kRequired = {
      {"RSA", {"e", "kty", "n"}}, {"EC", {"crv", "kty", "x", "y"}}, {"OKP", {"crv", "kty", "x"}}};
  const std::string kty = jwk.is_object() ? string_member(jwk, "kty") : "";
  auto required = kRequired.find(kty);
  if (required == kRequired.end()) return unsupported("no thumbprint for this kty");
  nlohmann::json members = nlohmann::json::object();  // std::map: sorted, as RFC 7638 wants
  for (const auto& name : required->second) {
    if (!jwk.contains(name) || !jwk[name].is_string()) return invalid("no \"" + name + "\" member");
    members[name] = jwk[name];
  }
  const std::string canonical = members.dump();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(canonical.data()), canonical.size(), digest);
  return base64url_encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

}  // namespace airlock::identity
