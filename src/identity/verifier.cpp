#include "identity/verifier.hpp"

#include <cmath>
#include <limits>

#include "common/digest.hpp"
#include "common/json_limits.hpp"
#include "identity/base64url.hpp"
#include "identity/signature.hpp"

namespace airlock::identity {
namespace {

// JOSE headers are flat; claims nest a little (an "act" chain, structured custom claims).
constexpr std::size_t kMaxJsonDepth = 16;

Error fail(const char* code, const std::string& message) {
  return Error::make(code, message);
}

// The compact serialization taken apart and decoded, before any key is looked at.
struct Compact {
  std::string_view signing_input;  // header.payload, as signed
  nlohmann::json header;
  nlohmann::json claims;
  std::string signature;
  Alg alg = Alg::RS256;
  std::string kid;
};

Result<nlohmann::json> decode_object(std::string_view segment, const char* what) {
  auto bytes = base64url_decode(segment);
  if (!bytes) return fail("malformed", std::string("the ") + what + " is not base64url");
  auto json = parse_json_unique_keys(*bytes, kMaxJsonDepth);
  // Which of two values a member has would be the parser's choice, and another reader of the
  // same token may choose the other one: refused (RFC 7515 4, RFC 7519 4).
  if (!json && json.error().code == "duplicate_key")
    return fail("malformed", std::string("the ") + what + " names a member twice");
  if (!json || !json->is_object())
    return fail("malformed", std::string("the ") + what + " is not a JSON object");
  return json;
}

// The header's "alg", refused unless it is one of the three asymmetric algorithms we verify.
Result<Alg> header_alg(const nlohmann::json& header) {
  auto it = header.find("alg");
  if (it == header.end() || !it->is_string()) return fail("malformed", "the header has no \"alg\"");
  const auto& name = it->get_ref<const std::string&>();
  if (auto alg = alg_from_name(name)) return *alg;
  // Only fixed strings in the messages: the header's own text is not echoed.
  if (name == "none" || name.empty())
    return fail("alg_not_allowed", "unsigned tokens (alg none) are refused");
  if (name.rfind("HS", 0) == 0)
    return fail("alg_not_allowed", "HMAC algorithms are refused (shared secrets, key confusion)");
  return fail("alg_not_allowed", "the algorithm is not one of RS256, ES256, EdDSA");
}

Result<Compact> parse_compact(std::string_view token) {
  const auto dot1 = token.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
    return fail("malformed", "not a compact JWS (three dot-separated segments)");
  Compact out;
  out.signing_input = token.substr(0, dot2);
  auto header = decode_object(token.substr(0, dot1), "header");
  if (!header) return header.error();
  out.header = std::move(*header);
  auto alg = header_alg(out.header);
  if (!alg) return alg.error();
  out.alg = *alg;
  // We implement no JWS extension, so a critical one cannot be honoured (RFC 7515 4.1.11).
  if (out.header.contains("crit")) return fail("malformed", "the header lists critical extensions");
  auto kid = out.header.find("kid");
  if (kid == out.header.end() || !kid->is_string() || kid->get_ref<const std::string&>().empty())
    return fail("malformed", "the header has no \"kid\"");
  out.kid = kid->get<std::string>();
  auto claims = decode_object(token.substr(dot1 + 1, dot2 - dot1 - 1), "payload");
  if (!claims) return claims.error();
  out.claims = std::move(*claims);
  auto signature = base64url_decode(token.substr(dot2 + 1));
  if (!signature) return fail("malformed", "the signature is not base64url");
  out.signature = std::move(*signature);
  return out;
}

// A NumericDate claim: absent, or a finite number (RFC 7519 allows fractions).
Result<std::optional<double>> numeric_date(const nlohmann::json& claims, const char* name) {
  auto it = claims.find(name);
  if (it == claims.end()) return std::optional<double>();
  if (!it->is_number() || !std::isfinite(it->get<double>()))
    return fail("malformed", std::string("the \"") + name + "\" claim is not a number");
  return std::optional<double>(it->get<double>());
}

Status check_times(const nlohmann::json& claims, double now, double skew) {
  auto exp = numeric_date(claims, "exp");
  auto nbf = numeric_date(claims, "nbf");
  auto iat = numeric_date(claims, "iat");
  if (!exp) return exp.error();
  if (!nbf) return nbf.error();
  if (!iat) return iat.error();
  if (!*exp) return fail("malformed", "the token has no \"exp\" claim");
  if (now >= **exp + skew) return fail("expired", "the token has expired");
  if (*nbf && now + skew < **nbf) return fail("not_yet_valid", "the token is not valid yet (nbf)");
  if (*iat && **iat > now + skew)
    return fail("issued_in_future", "the token is issued in the future (iat)");
  return Status::success();
}

// "aud" as a list of strings; a string or an array of strings (RFC 7519 4.1.3).
Result<std::vector<std::string>> audiences(const nlohmann::json& claims) {
  std::vector<std::string> out;
  auto it = claims.find("aud");
  if (it == claims.end()) return out;
  if (it->is_string()) return std::vector<std::string>{it->get<std::string>()};
  if (!it->is_array())
    return fail("malformed", "the \"aud\" claim is neither a string nor an array");
  for (const auto& a : *it) {
    if (!a.is_string()) return fail("malformed", "the \"aud\" array holds a non-string");
    out.push_back(a.get<std::string>());
  }
  return out;
}

std::string optional_string(const nlohmann::json& claims, const char* name) {
  auto it = claims.find(name);
  return it != claims.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t whole_seconds(double t) {
  constexpr double kMax = 9.2e18;  // inside the int64 range: the cast stays defined
  if (t >= kMax) return std::numeric_limits<std::int64_t>::max();
  if (t <= -kMax) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(std::floor(t));
}

}  // namespace

Verifier::Verifier(VerifierOptions options) : options_(std::move(options)) {}

Status Verifier::add_issuer(const IssuerConfig& config) {
  const int sources =
      !config.jwks_file.empty() + !config.jwks_url.empty() + !config.jwks_document.empty();
  if (config.name.empty() || config.issuer.empty() || config.audiences.empty())
    return fail("invalid_config", "an issuer needs a name, an iss and at least one audience");
  if (sources != 1)
    return fail("invalid_config",
                "issuer " + config.name + ": exactly one of jwks_file, jwks_url, jwks_document");
  if (issuers_.count(config.issuer) != 0)
    return fail("invalid_config", "issuer " + config.name + ": its iss is configured twice");
  JwksSourceOptions source;
  source.file = config.jwks_file;
  source.url = config.jwks_url;
  source.document = config.jwks_document;
  source.fetch.ca_file = config.ca_file;
  source.refetch_interval = config.refetch_interval;
  source.max_age = config.max_age;
  source.now = options_.now;
  issuers_.emplace(config.issuer, Issuer{config, std::make_shared<JwksSource>(std::move(source))});
  return Status::success();
}

std::shared_ptr<JwksSource> Verifier::source(const std::string& iss) const {
  auto it = issuers_.find(iss);
  return it == issuers_.end() ? nullptr : it->second.keys;
}

Status Verifier::check_claims(const Issuer& issuer, const nlohmann::json& claims,
                              const VerifyOptions& options) const {
  const double now = std::chrono::duration<double>(options_.now().time_since_epoch()).count();
  if (auto times = check_times(claims, now, static_cast<double>(options_.skew.count())); !times)
    return times;
  auto aud = audiences(claims);
  if (!aud) return aud.error();
  bool audience_ok = false;
  for (const auto& a : *aud)
    for (const auto& wanted : issuer.config.audiences) audience_ok = audience_ok || a == wanted;
  if (!audience_ok && !options.any_audience) return fail("wrong_audience", "the token is not meant for this audience");
  for (const char* name : {"sub", "jti"})
    if (claims.contains(name) && !claims[name].is_string())
      return fail("malformed", std::string("the \"") + name + "\" claim is not a string");
  if (claims.contains("act") && !claims["act"].is_object())
    return fail("malformed", "the \"act\" claim is not an object");
  if (claims.contains("act") && !options.allow_act)
    return fail("delegation_not_allowed", "a delegated token (act) is refused as a subject token");
  return Status::success();
}

VerifiedToken Verifier::verified(const Issuer& issuer, nlohmann::json claims) const {
  VerifiedToken out;
  out.issuer_name = issuer.config.name;
  out.iss = issuer.config.issuer;
  out.sub = optional_string(claims, "sub");
  out.aud = *audiences(claims);
  out.exp = whole_seconds(claims["exp"].get<double>());
  out.jti = optional_string(claims, "jti");
  if (claims.contains("act")) out.act = claims["act"];
  out.claims = std::move(claims);
  return out;
}

std::optional<Verifier::CachedToken> Verifier::cached(const std::string& digest) const {
  if (options_.cache_entries == 0) return std::nullopt;
  std::lock_guard lock(cache_->mu);
  auto it = cache_->tokens.find(digest);
  if (it == cache_->tokens.end()) return std::nullopt;
  return it->second;
}

void Verifier::remember(const std::string& digest, CachedToken entry) const {
  if (options_.cache_entries == 0) return;
  std::lock_guard lock(cache_->mu);
  auto& tokens = cache_->tokens;
  if (tokens.size() >= options_.cache_entries) tokens.erase(tokens.begin());  // any one: bounded
  tokens.insert_or_assign(digest, std::move(entry));
}

Result<VerifiedToken> Verifier::verify(std::string_view token, const VerifyOptions& options) const {
  if (token.size() > kMaxTokenBytes)
    return fail("token_too_large", "the token is larger than 16 KiB");
  // The same bytes verified before with the issuer's current keys: only the claims are
  // checked again (time passes; the options may differ).
  const std::string digest = options_.cache_entries ? sha256_hex(token) : std::string();
  if (auto hit = cached(digest); hit && issuers_.count(hit->iss)) {
    const Issuer& issuer = issuers_.find(hit->iss)->second;
    auto keys = issuer.keys->keys();
    if (keys && keys->get() == hit->keys.get()) {
      if (auto claims = check_claims(issuer, hit->claims, options); !claims) return claims.error();
      return verified(issuer, std::move(hit->claims));
    }
  }
  auto compact = parse_compact(token);
  if (!compact) return compact.error();
  auto iss = compact->claims.find("iss");
  if (iss == compact->claims.end() || !iss->is_string())
    return fail("malformed", "the token has no \"iss\" claim");
  auto issuer = issuers_.find(iss->get_ref<const std::string&>());
  if (issuer == issuers_.end()) return fail("wrong_issuer", "the token's issuer is not trusted");
  auto keys = issuer->second.keys->keys();
  if (!keys) return keys.error();
  const Jwk* key = (*keys)->find(compact->kid);
  if (key == nullptr) {  // perhaps a key the issuer rotated in since we fetched
    keys = issuer->second.keys->refetch();
    if (!keys) return keys.error();
    key = (*keys)->find(compact->kid);
  }
  if (key == nullptr)
    return fail("unknown_kid",
                "issuer " + issuer->second.config.name + " has no key with this kid");
  if (key->alg != compact->alg)
    return fail("alg_key_mismatch", "the header's alg does not match the key's type");
  if (!verify_signature(compact->alg, key->key.get(), compact->signing_input, compact->signature))
    return fail("bad_signature", "the signature does not verify");
  // Remembered once the signature verified, even if a claim fails now (nbf may pass later).
  remember(digest, CachedToken{issuer->first, *keys, compact->claims});
  if (auto claims = check_claims(issuer->second, compact->claims, options); !claims)
    return claims.error();
  return verified(issuer->second, std::move(compact->claims));
}

}  // namespace airlock::identity
