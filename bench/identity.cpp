// bench/identity: what the authenticate and authorize stages cost per call (issue #15), with a
// user token and without, keys cached. One Authenticator (pipeline::Authenticator::create) over
// a configuration with three issuers (RS256 with a 2048-bit key, ES256 on P-256, EdDSA on
// Ed25519; each a jwksFile in a temporary directory), an agent with an API key and tools
// ["*"], a role allowing invoke on every tool bound to the users' group, and one tool:
//   Stages/api_key               Authorization: Bearer <API key> (the reference: no user)
//   Stages/api_key_user_rs256    ... and Airlock-Subject-Token: <RS256 user token>
//   Stages/api_key_user_es256    ... ES256
//   Stages/api_key_user_eddsa    ... EdDSA
//   Stages/user_bearer_eddsa     Authorization: Bearer <EdDSA user token>, no agent
// Each call runs AuthenticateStage::run then AuthorizeStage::run on a fresh copy of the same
// Invocation (the copy is not timed). Counters: p50_us / p99_us of both stages together, and
// authn_p50_us / authz_p50_us of each stage alone in the same calls.
// Where the time goes, on the same tokens:
//   Verify/ALG      identity::Verifier::verify alone (the Authenticator's verifier)
//   Signature/ALG   identity::verify_signature alone (EVP_DigestVerifyInit + EVP_DigestVerify)
//   OpensslFloor/ALG  reference: the crypto alone, a context set up once (as `openssl speed`)
//   Decode          base64url-decoding a user token's header and payload, parsing them as JSON
//   Decide/...      access::decide alone (the authorize stage's decision)
//   Clock           two steady_clock reads: what the timing itself adds to every row
#include <benchmark/benchmark.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "access/decide.hpp"
#include "common/digest.hpp"
#include "common/json_limits.hpp"
#include "identity/base64url.hpp"
#include "identity/jwk.hpp"
#include "identity/signature.hpp"
#include "pipeline/authenticator.hpp"
#include "pipeline/stages/access.hpp"
#include "policy/config.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace airlock;

constexpr int kCalls = 20000;
constexpr int kWarmup = 200;
const char* const kApiKey = "bench-key";

// ---- keys and tokens, made with OpenSSL here ----

struct Key {
  std::string alg;  // RS256, ES256, EdDSA
  std::string kid;
  std::shared_ptr<EVP_PKEY> pkey;
};

Key generate(const std::string& alg) {
  EVP_PKEY* k = nullptr;
  if (alg == "RS256") k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048));
  if (alg == "ES256") k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  if (alg == "EdDSA") k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (k == nullptr) std::abort();
  return {alg, "bench-" + alg, std::shared_ptr<EVP_PKEY>(k, EVP_PKEY_free)};
}

std::string to_string(const unsigned char* p, std::size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

// A big-number parameter of the key, base64url, left-padded to `width` bytes (0: its own size).
std::string b64_param(EVP_PKEY* k, const char* name, int width = 0) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(k, name, &bn) != 1) std::abort();
  std::vector<unsigned char> buf(static_cast<std::size_t>(width > 0 ? width : BN_num_bytes(bn)));
  BN_bn2binpad(bn, buf.data(), static_cast<int>(buf.size()));
  BN_free(bn);
  return identity::base64url_encode(to_string(buf.data(), buf.size()));
}

json jwks_of(const Key& key) {
  EVP_PKEY* k = key.pkey.get();
  json jwk = {{"kid", key.kid}, {"alg", key.alg}, {"use", "sig"}};
  if (key.alg == "RS256") {
    jwk.update({{"kty", "RSA"},
                {"n", b64_param(k, OSSL_PKEY_PARAM_RSA_N)},
                {"e", b64_param(k, OSSL_PKEY_PARAM_RSA_E)}});
  } else if (key.alg == "ES256") {
    jwk.update({{"kty", "EC"},
                {"crv", "P-256"},
                {"x", b64_param(k, OSSL_PKEY_PARAM_EC_PUB_X, 32)},
                {"y", b64_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, 32)}});
  } else {
    unsigned char raw[32];
    std::size_t n = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(k, raw, &n) != 1) std::abort();
    jwk.update(
        {{"kty", "OKP"}, {"crv", "Ed25519"}, {"x", identity::base64url_encode(to_string(raw, n))}});
  }
  return {{"keys", json::array({jwk})}};
}

// The JWS signature of `input`: PKCS#1 v1.5 for RS256, r||s for ES256, Ed25519 as is.
std::string sign(const Key& key, const std::string& input) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const EVP_MD* md = key.alg == "EdDSA" ? nullptr : EVP_sha256();
  if (EVP_DigestSignInit(ctx.get(), nullptr, md, nullptr, key.pkey.get()) != 1) std::abort();
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  std::size_t n = 0;
  if (EVP_DigestSign(ctx.get(), nullptr, &n, in, input.size()) != 1) std::abort();
  std::vector<unsigned char> sig(n);
  if (EVP_DigestSign(ctx.get(), sig.data(), &n, in, input.size()) != 1) std::abort();
  if (key.alg != "ES256") return to_string(sig.data(), n);
  const unsigned char* p = sig.data();
  ECDSA_SIG* der = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(n));
  if (der == nullptr) std::abort();
  unsigned char rs[64];
  BN_bn2binpad(ECDSA_SIG_get0_r(der), rs, 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(der), rs + 32, 32);
  ECDSA_SIG_free(der);
  return to_string(rs, sizeof rs);
}

std::string issuer_url(const std::string& alg) {
  return "https://" + alg + ".idp.example";
}

// A user's token as an OpenID provider would issue it: valid for an hour.
std::string user_token(const Key& key) {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const json header = {{"alg", key.alg}, {"typ", "JWT"}, {"kid", key.kid}};
  const json claims = {{"iss", issuer_url(key.alg)},
                       {"sub", "00u1a2b3c4d5e6f7g8h9"},
                       {"aud", "airlock"},
                       {"iat", now},
                       {"nbf", now},
                       {"exp", now + 3600},
                       {"jti", "5f0c2a8e-6d1b-4c3a-9e7f-1b2c3d4e5f60"},
                       {"email", "alice@corp.example"},
                       {"name", "Alice Example"},
                       {"groups", {"analysts", "staff"}}};
  const std::string input =
      identity::base64url_encode(header.dump()) + "." + identity::base64url_encode(claims.dump());
  return input + "." + identity::base64url_encode(sign(key, input));
}

// ---- the configuration, the Authenticator and the stages ----

struct Setup {
  std::string dir;
  Key rs = generate("RS256"), es = generate("ES256"), ed = generate("EdDSA");
  std::string rs_token, es_token, ed_token;
  std::shared_ptr<const policy::Config> config;
  std::shared_ptr<const pipeline::Authenticator> authenticator;  // its verified-token cache on
  std::shared_ptr<const pipeline::Authenticator> uncached;       // every call verifies the signature

  Setup() {
    dir = (fs::temp_directory_path() / ("airlock-bench-identity-" + std::to_string(::getpid())))
              .string();
    fs::create_directories(dir);
    std::string issuers, users;
    for (const Key* k : {&rs, &es, &ed}) {
      std::ofstream(dir + "/" + k->alg + "-jwks.json") << jwks_of(*k).dump();
      issuers += "    - {name: idp-" + k->alg + ", issuer: " + issuer_url(k->alg) +
                 ", audiences: [airlock], jwksFile: " + k->alg + "-jwks.json}\n";
      users += "      - {issuer: idp-" + k->alg + ", claim: groups, value: analysts}\n";
    }
    const std::string yaml =
        "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
        "identity:\n  issuers:\n" +
        issuers +
        "roles:\n  - name: analyst\n    rules:\n      - {effect: allow, actions: [invoke], tools: "
        "[\"*\"]}\n"
        "bindings:\n  - role: analyst\n    users:\n" +
        users + "principals:\n  - name: bench-agent\n    apiKeySha256: " + sha256_hex(kApiKey) +
        "\n"
        "    tools: [\"*\"]\n"
        "tools:\n  - {name: echo, risk: low, runtime: {type: command, command: [/bin/cat]}}\n";
    auto parsed = policy::parse_config(yaml, "identity-bench.yaml", dir);
    if (!parsed) {
      std::fprintf(stderr, "config: %s\n", parsed.error().message.c_str());
      std::abort();
    }
    config = std::make_shared<const policy::Config>(std::move(*parsed));
    auto created = pipeline::Authenticator::create(config, nullptr);
    if (!created) {
      std::fprintf(stderr, "authenticator: %s\n", created.error().message.c_str());
      std::abort();
    }
    authenticator = *created;
    identity::VerifierOptions no_cache;
    no_cache.cache_entries = 0;
    auto plain = pipeline::Authenticator::create(config, nullptr, no_cache);
    if (!plain) std::abort();
    uncached = *plain;
    rs_token = user_token(rs);
    es_token = user_token(es);
    ed_token = user_token(ed);
  }
  ~Setup() { fs::remove_all(dir); }
};

Setup& setup() {
  static Setup s;
  return s;
}

// ---- timing ----

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void report(benchmark::State& state, const std::vector<double>& us) {
  state.counters["p50_us"] = percentile(us, 0.50);
  state.counters["p99_us"] = percentile(us, 0.99);
}

double since_us(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

// `once` timed per call, after kWarmup untimed calls (the keys loaded, the allocator warm).
template <typename F>
void measure(benchmark::State& state, F once) {
  for (int i = 0; i < kWarmup; ++i) once();
  std::vector<double> us;
  us.reserve(kCalls);
  for (auto _ : state) {
    const auto start = Clock::now();
    once();
    const auto end = Clock::now();
    state.SetIterationTime(since_us(start, end) / 1e6);
    us.push_back(since_us(start, end));
  }
  report(state, us);
}

enum class Case {
  api_key,
  api_key_user_rs256,
  api_key_user_es256,
  api_key_user_eddsa,
  user_bearer_eddsa
};

pipeline::Invocation invocation(Case c) {
  auto& s = setup();
  pipeline::Invocation inv;
  inv.id = "inv-bench";
  inv.tool_name = "echo";
  inv.headers["content-type"] = "application/json";
  inv.headers["user-agent"] = "airlock-bench/1";
  inv.headers["authorization"] = std::string("Bearer ") + kApiKey;
  switch (c) {
    case Case::api_key:
      break;
    case Case::api_key_user_rs256:
      inv.headers[pipeline::kSubjectTokenHeader] = s.rs_token;
      break;
    case Case::api_key_user_es256:
      inv.headers[pipeline::kSubjectTokenHeader] = s.es_token;
      break;
    case Case::api_key_user_eddsa:
      inv.headers[pipeline::kSubjectTokenHeader] = s.ed_token;
      break;
    case Case::user_bearer_eddsa:
      inv.headers["authorization"] = "Bearer " + s.ed_token;
      break;
  }
  return inv;
}

void check(const pipeline::StageResult& r, const char* stage) {
  if (r.proceeds()) return;
  std::fprintf(stderr, "%s refused: %s\n", stage,
               r.error() ? r.error()->message.c_str() : "suspended");
  std::abort();
}

// Both stages per call on a fresh copy of the invocation, each stage timed too.
void BM_Stages(benchmark::State& state, Case c, bool cached) {
  auto& s = setup();
  pipeline::AuthenticateStage authenticate(cached ? s.authenticator : s.uncached);
  pipeline::AuthorizeStage authorize;
  const pipeline::Invocation prototype = invocation(c);
  const bool with_user = c != Case::api_key;
  const bool with_agent = c != Case::user_bearer_eddsa;
  auto call = [&](pipeline::Invocation& inv, Clock::time_point* between) {
    pipeline::StageContext ctx(*s.config);
    check(authenticate.run(inv, ctx), "authenticate");
    if (between) *between = Clock::now();
    check(authorize.run(inv, ctx), "authorize");
  };
  for (int i = 0; i < kWarmup; ++i) {
    pipeline::Invocation inv = prototype;
    call(inv, nullptr);
    if (inv.subject.has_value() != with_user || inv.actor.has_value() != with_agent) std::abort();
  }
  std::vector<double> both, authn, authz;
  both.reserve(kCalls);
  authn.reserve(kCalls);
  authz.reserve(kCalls);
  for (auto _ : state) {
    pipeline::Invocation inv = prototype;  // not timed
    Clock::time_point between;
    const auto start = Clock::now();
    call(inv, &between);
    const auto end = Clock::now();
    state.SetIterationTime(since_us(start, end) / 1e6);
    both.push_back(since_us(start, end));
    authn.push_back(since_us(start, between));
    authz.push_back(since_us(between, end));
  }
  report(state, both);
  state.counters["authn_p50_us"] = percentile(authn, 0.50);
  state.counters["authz_p50_us"] = percentile(authz, 0.50);
}

const Key& key_of(const std::string& alg) {
  auto& s = setup();
  return alg == "RS256" ? s.rs : alg == "ES256" ? s.es : s.ed;
}
const std::string& token_of(const std::string& alg) {
  auto& s = setup();
  return alg == "RS256" ? s.rs_token : alg == "ES256" ? s.es_token : s.ed_token;
}

// The three segments of a compact JWS.
std::vector<std::string_view> segments(std::string_view token) {
  const auto d1 = token.find('.'), d2 = token.find('.', d1 + 1);
  return {token.substr(0, d1), token.substr(d1 + 1, d2 - d1 - 1), token.substr(d2 + 1)};
}

void BM_Verify(benchmark::State& state, const std::string& alg) {
  const auto& verifier = setup().uncached->verifier();
  const std::string& token = token_of(alg);
  measure(state, [&] {
    auto v = verifier.verify(token, {/*allow_act=*/true});
    if (!v) std::abort();
    benchmark::DoNotOptimize(v);
  });
}

void BM_Signature(benchmark::State& state, const std::string& alg) {
  // The public key as the verifier holds it: parsed from the JWK.
  auto jwk = identity::parse_jwk(jwks_of(key_of(alg))["keys"][0]);
  if (!jwk) std::abort();
  const std::string& token = token_of(alg);
  const auto parts = segments(token);
  const std::string_view input(token.data(), parts[0].size() + 1 + parts[1].size());
  const std::string signature = *identity::base64url_decode(parts[2]);
  measure(state, [&] {
    if (!identity::verify_signature(jwk->alg, jwk->key.get(), input, signature)) std::abort();
  });
}

// Reference: the crypto alone, as `openssl speed` does it. The key's context is set up once and
// reused; per call only the SHA-256 of the signing input (RS256, ES256) and the verification.
void BM_OpensslFloor(benchmark::State& state, const std::string& alg) {
  auto jwk = identity::parse_jwk(jwks_of(key_of(alg))["keys"][0]);
  if (!jwk) std::abort();
  const std::string& token = token_of(alg);
  const auto parts = segments(token);
  const std::string input(token.data(), parts[0].size() + 1 + parts[1].size());
  std::string signature = *identity::base64url_decode(parts[2]);
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  if (alg == "EdDSA") {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, jwk->key.get()) != 1)
      std::abort();
    const auto* sig = reinterpret_cast<const unsigned char*>(signature.data());
    measure(state, [&] {
      if (EVP_DigestVerify(ctx.get(), sig, signature.size(), in, input.size()) != 1) std::abort();
    });
    return;
  }
  if (alg == "ES256") {  // r||s as DER, done once
    const auto* rs = reinterpret_cast<const unsigned char*>(signature.data());
    ECDSA_SIG* es = ECDSA_SIG_new();
    ECDSA_SIG_set0(es, BN_bin2bn(rs, 32, nullptr), BN_bin2bn(rs + 32, 32, nullptr));
    unsigned char* der = nullptr;
    const int n = i2d_ECDSA_SIG(es, &der);
    signature.assign(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
    OPENSSL_free(der);
    ECDSA_SIG_free(es);
  }
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(
      EVP_PKEY_CTX_new(jwk->key.get(), nullptr), EVP_PKEY_CTX_free);
  if (!ctx || EVP_PKEY_verify_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_signature_md(ctx.get(), EVP_sha256()) != 1)
    std::abort();
  if (alg == "RS256" && EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_PADDING) != 1)
    std::abort();
  const auto* sig = reinterpret_cast<const unsigned char*>(signature.data());
  measure(state, [&] {
    unsigned char digest[32];
    unsigned int size = sizeof digest;
    if (EVP_Digest(in, input.size(), digest, &size, EVP_sha256(), nullptr) != 1) std::abort();
    if (EVP_PKEY_verify(ctx.get(), sig, signature.size(), digest, size) != 1) std::abort();
  });
}

void BM_Decode(benchmark::State& state) {
  const auto parts = segments(setup().ed_token);
  measure(state, [&] {
    auto header = parse_json_bounded(*identity::base64url_decode(parts[0]), 16);
    auto claims = parse_json_bounded(*identity::base64url_decode(parts[1]), 16);
    if (!header || !claims) std::abort();
    benchmark::DoNotOptimize(claims);
  });
}

// access::decide alone: the agent alone, and the agent for a user (role and binding lookups).
void BM_Decide(benchmark::State& state, bool with_user) {
  auto& s = setup();
  auto user = s.authenticator->verify_user_token(s.ed_token);
  if (!user) std::abort();
  const access::Actor agent{"bench-agent"};
  measure(state, [&] {
    auto d = access::decide(*s.config, &agent, with_user ? &user->subject : nullptr,
                            policy::Action::invoke, "echo");
    if (!d.allowed) std::abort();
    benchmark::DoNotOptimize(d);
  });
}

void BM_Clock(benchmark::State& state) {
  measure(state, [] {});
}

}  // namespace

#define AIRLOCK_ROW(...) \
  __VA_ARGS__->Iterations(kCalls)->UseManualTime()->Unit(benchmark::kMicrosecond)
// The same token on every call (an agent resends its user's): after the first, the verified-
// token cache answers; then the same rows with the cache off (each call verifies).
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, api_key, Case::api_key, true));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, api_key_user_rs256, Case::api_key_user_rs256, true));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, api_key_user_es256, Case::api_key_user_es256, true));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, api_key_user_eddsa, Case::api_key_user_eddsa, true));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, user_bearer_eddsa, Case::user_bearer_eddsa, true));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, api_key_user_rs256_uncached, Case::api_key_user_rs256, false));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, api_key_user_es256_uncached, Case::api_key_user_es256, false));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, api_key_user_eddsa_uncached, Case::api_key_user_eddsa, false));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Stages, user_bearer_eddsa_uncached, Case::user_bearer_eddsa, false));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Verify, rs256, std::string("RS256")));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Verify, es256, std::string("ES256")));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Verify, eddsa, std::string("EdDSA")));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Signature, rs256, std::string("RS256")));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Signature, es256, std::string("ES256")));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Signature, eddsa, std::string("EdDSA")));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_OpensslFloor, rs256, std::string("RS256")));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_OpensslFloor, es256, std::string("ES256")));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_OpensslFloor, eddsa, std::string("EdDSA")));
AIRLOCK_ROW(BENCHMARK(BM_Decode));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Decide, agent, false));
AIRLOCK_ROW(BENCHMARK_CAPTURE(BM_Decide, agent_for_user, true));
AIRLOCK_ROW(BENCHMARK(BM_Clock));

BENCHMARK_MAIN();
