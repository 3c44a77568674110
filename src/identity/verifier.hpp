// Strict, local verification of JWTs (RFC 7519) from configured issuers: the checks and their
// order are in docs/identity.md, "Token verification".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "identity/clock.hpp"
#include "identity/http_fetch.hpp"
#include "identity/jwks_source.hpp"

namespace airlock::identity {

// Tokens longer than this are refused before anything else is looked at.
inline constexpr std::size_t kMaxTokenBytes = 16 * 1024;

// One trusted issuer, as the configuration describes it. Exactly one of jwks_file, jwks_url
// and jwks_document is set (jwks_document: Airlock's own issuer, TokenSigner::jwks()).
struct IssuerConfig {
  std::string name;                    // the configured name, reported in VerifiedToken
  std::string issuer;                  // the exact "iss" string
  std::vector<std::string> audiences;  // "aud" must contain at least one of them
  std::string jwks_file;
  std::string jwks_url;
  std::string jwks_document;
  std::string ca_file;                        // https JWKS URLs: the CA bundle; empty: the system's
  std::chrono::seconds refetch_interval{30};  // at most one JWKS fetch per interval
  std::chrono::seconds max_age{600};          // cached keys older than this are fetched again
};

struct VerifyOptions {
  // A token with an "act" claim (RFC 8693 delegation) is refused as a subject token unless
  // the caller accepts a chain of delegation.
  bool allow_act = false;
  // Skips the audience check: token introspection (RFC 7662) answers about a token of any
  // audience, and the resource server asking checks `aud` itself. Nothing else may use it.
  bool any_audience = false;
};

struct VerifiedToken {
  std::string issuer_name;  // IssuerConfig::name
  std::string iss;
  std::string sub;               // empty if absent
  std::vector<std::string> aud;  // "aud" as a list, whether it was a string or an array
  std::int64_t exp = 0;          // seconds since the epoch
  std::string jti;               // empty if absent
  nlohmann::json claims;         // the whole payload
  std::optional<nlohmann::json> act;
};

// A NumericDate (RFC 7519 2: seconds, possibly fractional) as whole seconds: rounded down (a
// token valid until 99.5 is not valid at 100) and clamped into int64 before converting
// (2^64-1 or -1e300 would be undefined as a cast, and wrapped to a negative time before).
std::int64_t numeric_date_seconds(double t);
// The claim `name` of verified claims (where the verifier checked it is a finite number) as
// whole seconds; nullopt when absent or not a number.
std::optional<std::int64_t> numeric_date_claim(const nlohmann::json& claims, const char* name);

struct VerifierOptions {
  Clock now = system_clock();
  std::chrono::seconds skew{60};  // allowed clock difference for exp/nbf/iat
  // Tokens whose signature verified, remembered by their SHA-256 with the key set that
  // verified them: an agent sends the same user token on every call, and the signature is
  // most of the cost (docs/performance.md). 0: no cache.
  std::size_t cache_entries = 4096;
};

// Thread-safe for verify() once the issuers are added (add_issuer is not: configure first).
class Verifier {
 public:
  explicit Verifier(VerifierOptions options = {});

  // Errors: "invalid_config" (no name, iss or audience, not exactly one JWKS source, or an
  // "iss" already configured).
  Status add_issuer(const IssuerConfig& config);

  // Error codes: token_too_large, malformed, alg_not_allowed, wrong_issuer, jwks_unavailable,
  // unknown_kid, alg_key_mismatch, bad_signature, expired, not_yet_valid, issued_in_future,
  // wrong_audience, delegation_not_allowed. Messages never quote the token.
  Result<VerifiedToken> verify(std::string_view token, const VerifyOptions& options = {}) const;

  // The key source of a configured "iss" (nullptr if none): for tests and metrics.
  std::shared_ptr<JwksSource> source(const std::string& iss) const;

 private:
  struct Issuer {
    IssuerConfig config;
    std::shared_ptr<JwksSource> keys;
  };
  Status check_claims(const Issuer& issuer, const nlohmann::json& claims,
                      const VerifyOptions& options) const;
  VerifiedToken verified(const Issuer& issuer, nlohmann::json claims) const;

  // A token that verified: the claims (checked again on every use: exp, nbf, aud, act), its
  // issuer, and the key set that verified it (a new key set drops it).
  struct CachedToken {
    std::string iss;
    std::shared_ptr<const KeySet> keys;
    nlohmann::json claims;
  };
  std::optional<CachedToken> cached(const std::string& digest) const;
  void remember(const std::string& digest, CachedToken entry) const;

  VerifierOptions options_;
  std::map<std::string, Issuer, std::less<>> issuers_;  // by "iss"
  struct TokenCache {
    std::mutex mu;
    std::unordered_map<std::string, CachedToken> tokens;  // by the token's SHA-256
  };
  std::unique_ptr<TokenCache> cache_ = std::make_unique<TokenCache>();  // a Verifier moves
};

}  // namespace airlock::identity
