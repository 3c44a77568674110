// bench/creds: what a credential costs a call, lease + revoke through the broker as the
// pipeline does it (the lease row in state.db before the credential exists, its state after
// issuing and after revoking, SQLite WAL in a temporary directory), for each provider, beside
// a call with no credentials in the same run (issue #16; docs/performance.md).
//   Lease/none      the broker with no credentials to lease (the floor)
//   Lease/secret    a static secret from the encrypted store (AES-256-GCM)   target 0.1 ms
//   Lease/token     a minted EdDSA JWT, revoked into revoked_tokens          target 0.2 ms
//   Lease/postgres  a role made and dropped on a throwaway PostgreSQL 15     target 15 ms
// Counters: p50_us / p99_us per call.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "creds/broker.hpp"
#include "creds/providers/postgres_provider.hpp"
#include "creds/revoked_tokens.hpp"
#include "creds/providers/secret_provider.hpp"
#include "creds/secret_store.hpp"
#include "creds/providers/token_provider.hpp"
#include "identity/signer.hpp"
#include "pg_cluster.hpp"

namespace {

using namespace airlock;
using Clock = std::chrono::steady_clock;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "bench/creds: %s failed\n", what);
    std::abort();
  }
}

// Everything the four rows share: one data directory, one lease store, every provider.
struct Setup {
  std::string dir;
  std::unique_ptr<creds::LeaseStore> leases;
  std::unique_ptr<creds::SecretStore> secrets;
  std::optional<identity::TokenSigner> signer;
  std::unique_ptr<creds::RevokedTokens> revoked;
  std::unique_ptr<test::PgCluster> pg;
  std::unique_ptr<creds::Broker> broker;
  creds::LeaseContext context;

  Setup() {
    char tmpl[] = "/tmp/bench-creds-XXXXXX";
    check(::mkdtemp(tmpl) != nullptr, "mkdtemp");
    dir = tmpl;
    ::setenv("AIRLOCK_SECRETS_KEY_FILE", (dir + "/secrets.key").c_str(), 1);
    auto l = creds::LeaseStore::open(dir + "/state.db");
    check(l.ok(), "LeaseStore::open");
    leases = std::move(*l);
    auto s = creds::SecretStore::open(dir + "/data");
    check(s.ok(), "SecretStore::open");
    secrets = std::move(*s);
    check(secrets->set("api-key", "sk-live-0123456789abcdef0123456789abcdef").ok(), "secrets set");
    auto k = identity::TokenSigner::load_or_create(dir + "/token.key");
    check(k.ok(), "the token key");
    signer.emplace(std::move(*k));
    auto r = creds::RevokedTokens::open(dir + "/state.db");
    check(r.ok(), "RevokedTokens::open");
    revoked = std::move(*r);
    start_postgres();
    creds::SecretLookup lookup = [this](const std::string& name) { return secrets->get(name); };
    policy::CredentialServer server{"shop", {"127.0.0.1", pg->port(), "shop", "shop-admin"}};
    broker = std::make_unique<creds::Broker>(
        *leases, creds::Providers{{"secret", std::make_shared<creds::SecretProvider>(lookup)},
                                  {"token", std::make_shared<creds::TokenProvider>(*signer, "airlock", *revoked)},
                                  {"postgres", std::make_shared<creds::PostgresProvider>(
                                                   std::vector<policy::CredentialServer>{server}, lookup)}});
    context.invocation_id = "0123456789abcdef0123456789abcdef";
    context.tool = "report";
    context.agent = "agent";
    context.user_sub = "alice";
    context.user_issuer = "corp";
  }
  ~Setup() {
    broker.reset();
    pg.reset();
    std::filesystem::remove_all(dir);
  }

  void start_postgres() {
    auto c = test::PgCluster::start();
    check(c.ok(), "PgCluster::start");
    pg = std::move(*c);
    check(pg->exec("CREATE ROLE shop_admin LOGIN CREATEROLE PASSWORD 'bench-admin'").ok(), "admin role");
    check(pg->exec("CREATE DATABASE shop OWNER shop_admin").ok(), "database");
    check(pg->exec("SET ROLE shop_admin; CREATE TABLE orders (id int); CREATE TABLE customers (id int)", "shop").ok(),
          "tables");
    check(secrets->set("shop-admin", pg->url("shop_admin", "bench-admin", "shop")).ok(), "admin secret");
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

policy::CredentialSpec spec_of(const std::string& provider) {
  policy::CredentialSpec spec;
  spec.env = "CREDENTIAL";
  if (provider == "secret") spec.source = policy::SecretCredential{"api-key"};
  if (provider == "token")
    spec.source = policy::TokenCredential{"https://reports.internal", {"reports:write"}, std::chrono::seconds(60)};
  if (provider == "postgres") {
    policy::PostgresCredential pg;
    pg.server = "shop";
    pg.grant = {{"select", {"orders", "customers"}}};
    spec.source = pg;
  }
  return spec;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void BM_LeaseRevoke(benchmark::State& state, const std::string& provider) {
  auto& s = setup();
  std::vector<policy::CredentialSpec> specs;
  if (provider != "none") specs.push_back(spec_of(provider));
  auto once = [&] {
    s.context.now = creds::Clock::now();
    auto leased = s.broker->lease(specs, s.context);
    check(leased.ok(), "lease");
    check(s.broker->revoke(*leased).ok(), "revoke");
  };
  for (int i = 0; i < 20; ++i) once();
  std::vector<double> us;
  for (auto _ : state) {
    const auto start = Clock::now();
    once();
    const double took = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    state.SetIterationTime(took / 1e6);
    us.push_back(took);
  }
  state.counters["p50_us"] = percentile(us, 0.50);
  state.counters["p99_us"] = percentile(us, 0.99);
}

}  // namespace

BENCHMARK_CAPTURE(BM_LeaseRevoke, none, std::string("none"))->Name("Lease/none")->Iterations(5000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LeaseRevoke, secret, std::string("secret"))->Name("Lease/secret")->Iterations(5000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LeaseRevoke, token, std::string("token"))->Name("Lease/token")->Iterations(5000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LeaseRevoke, postgres, std::string("postgres"))->Name("Lease/postgres")->Iterations(300)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
