// bench/creds_token: what a `token` credential costs per call (issue #16): TokenProvider's
// issue (the claims, the scope narrowing, the Ed25519 signature) and revoke (a row in
// revoked_tokens, SQLite WAL, synchronous=NORMAL, in a temporary directory), beside a bare
// TokenSigner::issue of the same claims in the same run.
//   Token/sign_only       identity::TokenSigner::issue alone (the floor: the signature)
//   Token/issue           TokenProvider::issue (a new lease id each call)
//   Token/revoke          TokenProvider::revoke of a fresh lease
//   Token/issue_revoke    both, as the broker does once per credential per call (target: 200 µs)
//   Token/is_revoked      RevokedTokens::is_revoked (what each Airlock token's use adds)
//   Clock                 two steady_clock reads: what the timing adds to every row
// Counters: p50_us / p99_us per call.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "creds/revoked_tokens.hpp"
#include "creds/providers/token_provider.hpp"

namespace {

using namespace airlock;
using Clock = std::chrono::steady_clock;

constexpr int kCalls = 20000;
constexpr int kWarmup = 200;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "bench/creds_token: %s failed\n", what);
    std::abort();
  }
}

struct Setup {
  std::string dir;
  std::optional<identity::TokenSigner> signer;
  std::unique_ptr<creds::RevokedTokens> revoked;
  std::unique_ptr<creds::TokenProvider> provider;
  policy::CredentialSpec spec;
  creds::LeaseContext context;
  std::uint64_t next_lease = 0;

  Setup() {
    char tmpl[] = "/tmp/bench-creds-XXXXXX";
    check(::mkdtemp(tmpl) != nullptr, "mkdtemp");
    dir = tmpl;
    auto made = identity::TokenSigner::load_or_create(dir + "/token.key");
    check(made.ok(), "the token key");
    signer.emplace(std::move(*made));
    auto opened = creds::RevokedTokens::open(dir + "/state.db");
    check(opened.ok(), "RevokedTokens::open");
    revoked = std::move(*opened);
    provider = std::make_unique<creds::TokenProvider>(*signer, "airlock", *revoked);
    spec.env = "PAYMENTS_TOKEN";
    spec.source = policy::TokenCredential{"payments", {"payments:read", "payments:write"}, std::chrono::seconds(60)};
    context.invocation_id = "0123456789abcdef0123456789abcdef";
    context.tool = "pay";
    context.agent = "agent";
    context.user_issuer = "corp";
    context.user_sub = "alice@corp.example";
    context.user_scopes = std::vector<std::string>{"payments:read", "payments:write", "profile"};
  }
  ~Setup() { std::filesystem::remove_all(dir); }

  creds::Lease lease() {
    char id[33];
    std::snprintf(id, sizeof id, "%032llx", static_cast<unsigned long long>(++next_lease));
    creds::Lease l;
    l.id = id;
    l.target = {{"jti", l.id}};
    l.expires_at = std::chrono::system_clock::now() + std::chrono::seconds(60);
    return l;
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

double since_us(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

// `once` timed per call, after kWarmup untimed calls; `prepare` runs untimed before each.
template <typename Prepare, typename F>
void measure(benchmark::State& state, Prepare prepare, F once) {
  for (int i = 0; i < kWarmup; ++i) once(prepare());
  std::vector<double> us;
  us.reserve(kCalls);
  for (auto _ : state) {
    auto input = prepare();
    const auto start = Clock::now();
    once(std::move(input));
    const auto end = Clock::now();
    state.SetIterationTime(since_us(start, end) / 1e6);
    us.push_back(since_us(start, end));
  }
  state.counters["p50_us"] = percentile(us, 0.50);
  state.counters["p99_us"] = percentile(us, 0.99);
}

void BM_SignOnly(benchmark::State& state) {
  auto& s = setup();
  auto claims = s.provider->claims(s.spec, s.lease(), s.context);
  check(claims.ok(), "claims");
  measure(state, [] { return 0; }, [&](int) { check(s.signer->issue(*claims).ok(), "sign"); });
}

void BM_Issue(benchmark::State& state) {
  auto& s = setup();
  measure(state, [&] { return s.lease(); },
          [&](creds::Lease l) { check(s.provider->issue(s.spec, l, s.context).ok(), "issue"); });
}

void BM_Revoke(benchmark::State& state) {
  auto& s = setup();
  measure(state, [&] { return s.lease(); }, [&](creds::Lease l) { check(s.provider->revoke(l, nullptr).ok(), "revoke"); });
}

void BM_IssueRevoke(benchmark::State& state) {
  auto& s = setup();
  measure(state, [&] { return s.lease(); }, [&](creds::Lease l) {
    auto issued = s.provider->issue(s.spec, l, s.context);
    check(issued.ok(), "issue");
    check(s.provider->revoke(l, &issued->value).ok(), "revoke");
  });
}

void BM_IsRevoked(benchmark::State& state) {
  auto& s = setup();
  measure(state, [&] { return s.lease(); }, [&](creds::Lease l) { benchmark::DoNotOptimize(s.revoked->is_revoked(l.id)); });
}

void BM_Clock(benchmark::State& state) {
  measure(state, [] { return 0; }, [](int) {});
}

}  // namespace

#define AIRLOCK_ROW(...) __VA_ARGS__->Iterations(kCalls)->UseManualTime()->Unit(benchmark::kMicrosecond)
AIRLOCK_ROW(BENCHMARK(BM_SignOnly)->Name("Token/sign_only"));
AIRLOCK_ROW(BENCHMARK(BM_Issue)->Name("Token/issue"));
AIRLOCK_ROW(BENCHMARK(BM_Revoke)->Name("Token/revoke"));
AIRLOCK_ROW(BENCHMARK(BM_IssueRevoke)->Name("Token/issue_revoke"));
AIRLOCK_ROW(BENCHMARK(BM_IsRevoked)->Name("Token/is_revoked"));
AIRLOCK_ROW(BENCHMARK(BM_Clock)->Name("Clock"));
BENCHMARK_MAIN();
