// bench/creds_postgres: what a postgres credential costs per call (issue #16), against a
// throwaway PostgreSQL 15 cluster on loopback (tests/support/pg_cluster) with the server's
// default durability (fsync on: the role's creation and drop are each a WAL flush). The admin
// is a CREATEROLE role that owns three tables; each lease grants select on two of them.
//   AdminConnect       reference: the admin's connect + disconnect (TCP, SCRAM-SHA-256), which
//                      issue and revoke each do once
//   Issue              PostgresProvider::issue alone (its revoke, untimed, follows)
//   Revoke             PostgresProvider::revoke alone of a role just issued (untimed)
//   LeaseRevoke        issue + revoke: a call's whole credential cost (target: <= 15 ms)
//   LeaseRevoke/threads:2  the same from two threads at once (one provider)
// Counters: p50_us / p99_us per call (thread 0's calls under threads:2).
#include <benchmark/benchmark.h>
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>

#include "creds/providers/postgres_provider.hpp"
#include "pg_cluster.hpp"

using namespace airlock;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kAdminPassword = "bench-admin-pw";

struct Setup {
  std::unique_ptr<test::PgCluster> cluster;
  std::string admin_url;
  std::unique_ptr<creds::PostgresProvider> provider;
  policy::CredentialSpec spec;

  Setup() {
    test::PgCluster::Options options;
    options.settings.clear();  // the server's defaults: fsync and synchronous_commit on
    auto started = test::PgCluster::start(options);
    if (!started) fail(started.error().message);
    cluster = std::move(*started);
    for (const char* sql : {"CREATE ROLE shop_admin LOGIN CREATEROLE PASSWORD 'bench-admin-pw'",
                            "CREATE DATABASE shop OWNER shop_admin",
                            "REVOKE CONNECT, TEMPORARY ON DATABASE shop FROM PUBLIC"})
      if (Status s = cluster->exec(sql); !s) fail(s.error().message);
    if (Status s = cluster->exec(
            "SET ROLE shop_admin; CREATE TABLE orders (id int); CREATE TABLE customers (id int);"
            "CREATE TABLE payroll (id int)",
            "shop");
        !s)
      fail(s.error().message);
    admin_url = cluster->url("shop_admin", kAdminPassword, "shop");
    policy::CredentialServer server;
    server.name = "shop";
    server.postgres = {cluster->host(), cluster->port(), "shop", "shop-admin"};
    provider = std::make_unique<creds::PostgresProvider>(
        std::vector<policy::CredentialServer>{server},
        [url = admin_url](const std::string&) -> Result<std::string> { return url; });
    policy::PostgresCredential pg;
    pg.server = "shop";
    pg.grant = {{"select", {"orders", "customers"}}};
    spec.env = "DATABASE_URL";
    spec.source = pg;
  }

  [[noreturn]] static void fail(const std::string& why) {
    std::fprintf(stderr, "bench_creds_postgres: %s\n", why.c_str());
    std::exit(1);
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

creds::Lease new_lease() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  creds::Lease lease;
  for (int i = 0; i < 32; ++i) lease.id += kHex[rng() % 16];
  lease.provider = "postgres";
  lease.target = *setup().provider->target(setup().spec, lease);
  return lease;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void report(benchmark::State& state, const std::vector<double>& us) {
  if (state.thread_index() != 0 || us.empty()) return;
  state.counters["p50_us"] = percentile(us, 0.50);
  state.counters["p99_us"] = percentile(us, 0.99);
}

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void check(const Status& s, benchmark::State& state) {
  if (!s) state.SkipWithError(s.error().message.c_str());
}

void BM_AdminConnect(benchmark::State& state) {
  const std::string url = setup().admin_url;
  std::vector<double> us;
  for (auto _ : state) {
    auto start = Clock::now();
    PGconn* c = PQconnectdb(url.c_str());
    if (PQstatus(c) != CONNECTION_OK) state.SkipWithError(PQerrorMessage(c));
    PQfinish(c);
    us.push_back(us_since(start));
  }
  report(state, us);
}

// One lease's issue and revoke; `timed` says which of them count.
enum class Timed { issue, revoke, both };

void lease_cycle(benchmark::State& state, Timed timed) {
  auto& s = setup();
  creds::LeaseContext context;
  std::vector<double> us;
  for (auto _ : state) {
    auto lease = new_lease();
    if (timed == Timed::revoke) state.PauseTiming();
    auto start = Clock::now();
    auto issued = s.provider->issue(s.spec, lease, context);
    if (!issued) state.SkipWithError(issued.error().message.c_str());
    if (timed == Timed::issue) {
      us.push_back(us_since(start));
      state.PauseTiming();
    }
    if (timed == Timed::revoke) {
      state.ResumeTiming();
      start = Clock::now();
    }
    check(s.provider->revoke(lease, issued ? &issued->value : nullptr), state);
    if (timed == Timed::issue)
      state.ResumeTiming();
    else
      us.push_back(us_since(start));
  }
  report(state, us);
}

void BM_Issue(benchmark::State& state) {
  lease_cycle(state, Timed::issue);
}
void BM_Revoke(benchmark::State& state) {
  lease_cycle(state, Timed::revoke);
}
void BM_LeaseRevoke(benchmark::State& state) {
  lease_cycle(state, Timed::both);
}

}  // namespace

// Fixed counts: MinTime would count only the timed part of Issue and Revoke and run for minutes.
BENCHMARK(BM_AdminConnect)->Unit(benchmark::kMillisecond)->Iterations(300);
BENCHMARK(BM_Issue)->Unit(benchmark::kMillisecond)->Iterations(500);
BENCHMARK(BM_Revoke)->Unit(benchmark::kMillisecond)->Iterations(500);
BENCHMARK(BM_LeaseRevoke)->Unit(benchmark::kMillisecond)->Iterations(1000);
BENCHMARK(BM_LeaseRevoke)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(500)
    ->Threads(2)
    ->UseRealTime();

// The cluster is started here, on the main thread: its postmaster dies with the thread that
// started it.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  setup();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
