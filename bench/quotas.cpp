// bench/quotas: one admission and its release (issue #22, quotas shared by the replicas): the
// memory book (one daemon) beside the PostgreSQL book (pipeline/quotas/quota_book_pg.hpp) on a
// throwaway cluster with fsync and synchronous_commit on (the durability a production server
// has), the book's writes committed synchronously (sync) and with SET LOCAL
// synchronous_commit = off for the admission (async; a release is always synchronous). 1 and 8 threads on one book (one replica: its one
// connection), each thread its own principal (Distinct) or all one principal (Same: every
// admission waits for the account row's lock). Every quota kind is set, so each admission
// reads the holds, the bucket and the CPU and writes the hold and the token.
#include <benchmark/benchmark.h>

#include <stdexcept>

#include "pg_cluster.hpp"
#include "pipeline/quotas/quota_book.hpp"
#include "pipeline/quotas/quota_book_pg.hpp"

namespace {

using namespace airlock;

test::PgCluster& bench_cluster() {
  static std::unique_ptr<test::PgCluster> cluster = [] {
    test::PgCluster::Options options;
    options.settings = {{"fsync", "on"}, {"synchronous_commit", "on"}};
    auto started = test::PgCluster::start(options);
    if (!started) throw std::runtime_error(started.error().message);
    if (!(*started)->exec("CREATE ROLE bench LOGIN PASSWORD 'bench-pw'")) throw std::runtime_error("role");
    return std::move(*started);
  }();
  return *cluster;
}

policy::QuotasConfig every_quota();

std::shared_ptr<pipeline::QuotaBook> pg_book(bool synchronous) {
  static int n = 0;
  const std::string database = "quotas_" + std::to_string(n++);
  if (!bench_cluster().exec("CREATE DATABASE " + database + " OWNER bench")) throw std::runtime_error("database");
  storage::pg::Database::Location location;
  location.url = bench_cluster().url("bench", "bench-pw", database);
  auto book = pipeline::PostgresQuotaBook::open(location, "bench", {synchronous});
  if (!book) throw std::runtime_error(book.error().message);
  // Warm-up, outside the timing: the first thousands of commits of a new cluster also create
  // its WAL segments.
  for (int i = 0; i < 2000; ++i) (void)(*book)->admit(every_quota(), "warm-up", "");
  return *book;
}

policy::QuotasConfig every_quota() {
  policy::QuotasConfig q;
  q.defaults.concurrent = 1000;
  q.defaults.rate = policy::QuotaRate{1e9, std::chrono::milliseconds(1000)};
  q.defaults.cpu_seconds = policy::QuotaRate{1e9, std::chrono::milliseconds(60000)};
  return q;
}

std::shared_ptr<pipeline::QuotaBook> book_of(int kind) {
  static std::shared_ptr<pipeline::QuotaBook> books[3];
  if (!books[kind]) books[kind] = kind == 0 ? pipeline::MemoryQuotaBook::create() : pg_book(kind == 1);
  return books[kind];
}

// range(0): 0 memory, 1 PostgreSQL sync, 2 PostgreSQL async; range(1): 1 one principal for all.
void BM_AdmitRelease(benchmark::State& state) {
  static const policy::QuotasConfig quotas = every_quota();
  auto book = book_of(static_cast<int>(state.range(0)));
  const std::string principal = state.range(1) ? "agent" : "agent-" + std::to_string(state.thread_index());
  for (auto _ : state) {
    auto admitted = book->admit(quotas, principal, "");
    if (!std::holds_alternative<std::shared_ptr<pipeline::QuotaHold>>(admitted)) {
      state.SkipWithError("not admitted");
      break;
    }
  }  // the hold is released as `admitted` goes
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(state.range(0) == 0 ? "memory" : state.range(0) == 1 ? "postgres sync" : "postgres async") +
                 (state.range(1) ? ", same principal" : ", distinct principals"));
}
BENCHMARK(BM_AdmitRelease)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Threads(1)
    ->Threads(8)
    ->UseRealTime()
    ->MinTime(2);

}  // namespace

BENCHMARK_MAIN();
