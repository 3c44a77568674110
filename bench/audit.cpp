// bench/audit: durable appends per second (1 and 8 writers, group commit) and verify
// throughput, beside raw SQLite inserts with the same durability (WAL, synchronous=FULL), one
// insert per transaction and batched, and beside the cost of one fsync on this disk; and the
// shared log: 1 writer, and 8 writers in 2 processes, on PostgreSQL (a throwaway PostgreSQL 15
// cluster with fsync and synchronous_commit on, on the same disk) beside the same on SQLite.
// Every figure comes from one run: bench/run.sh audit.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "audit/audit_log.hpp"
#include "audit/canonical_json.hpp"
#include "audit/invocation_record.hpp"
#include "audit/log_reader.hpp"
#include "audit/verify.hpp"
#include "pg_cluster.hpp"

using namespace airlock::audit;

namespace {

using Clock = std::chrono::steady_clock;

// One scratch directory for the whole run, on the disk the tests use (TMPDIR, else /tmp),
// removed with everything in it when the program exits.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "airlock-bench-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

std::string fresh_path(const std::string& name) {
  static int counter = 0;
  return (scratch_dir() / (name + "-" + std::to_string(counter++) + ".db")).string();
}

// A realistic invocation record (about 900 bytes canonical).
nlohmann::json invocation_fields(std::uint64_t n) {
  InvocationRecord r;
  r.invocation_id = new_invocation_id();
  r.principal = "user:alice@example.com";
  r.tool = "python.run";
  r.command = {"python3", "-I", "/work/main.py", "--seed", std::to_string(n)};
  r.limits = {{"wall_time_ms", 30000}, {"memory_bytes", 536870912}, {"pids", 64},
              {"output_bytes", 1048576}, {"disk_bytes", 67108864}, {"open_files", 256}};
  r.verdict = "ok";
  r.exit_code = 0;
  r.message = "python3 exited with status 0";
  r.usage = {{"wall_ms", 41}, {"cpu_user_ms", 30}, {"cpu_sys_ms", 8},
             {"memory_peak_bytes", 9437184}, {"pids_peak", 2}};
  r.egress.push_back({"pypi.org", 443, "151.101.0.223", true, "allow pypi.org:443", 812, 40213, 93});
  r.input = ContentDigest::of("{\"code\":\"print(sum(range(" + std::to_string(n) + ")))\"}");
  r.output = ContentDigest::of(std::to_string(n * (n + 1) / 2) + "\n");
  r.error_output = ContentDigest::of("");
  r.credentials.push_back({"PYPI_TOKEN", std::string(64, 'c'), "", "", {}, 0});
  return to_fields(r);
}

std::string percentile_us(std::vector<double>& latencies_us, double p) {
  std::sort(latencies_us.begin(), latencies_us.end());
  return std::to_string(latencies_us[static_cast<std::size_t>(p * (latencies_us.size() - 1))]);
}

// ---- The audit log -------------------------------------------------------------------------

void BM_AuditAppend(benchmark::State& state) {
  const int writers = static_cast<int>(state.range(0));
  const int per_writer = writers == 1 ? 2000 : 1000;
  auto log = AuditLog::open(fresh_path("append"));
  if (!log) {
    state.SkipWithError(log.error().message.c_str());
    return;
  }
  std::vector<nlohmann::json> fields;
  for (int i = 0; i < per_writer; ++i) fields.push_back(invocation_fields(static_cast<std::uint64_t>(i)));
  std::vector<double> latencies_us;
  std::mutex latencies_mutex;
  std::atomic<bool> failed{false};
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w)
      threads.emplace_back([&] {
        std::vector<double> mine;
        for (int i = 0; i < per_writer; ++i) {
          auto start = Clock::now();
          if (!(*log)->append(fields[static_cast<std::size_t>(i)])) failed = true;
          mine.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        }
        std::lock_guard lock(latencies_mutex);
        latencies_us.insert(latencies_us.end(), mine.begin(), mine.end());
      });
    for (auto& t : threads) t.join();
  }
  if (failed) state.SkipWithError("an append failed");
  AuditLogStats stats = (*log)->stats();
  state.SetItemsProcessed(state.iterations() * writers * per_writer);
  state.counters["appends_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * writers * per_writer), benchmark::Counter::kIsRate);
  state.counters["records_per_txn"] =
      static_cast<double>(stats.records) / static_cast<double>(std::max<std::uint64_t>(stats.transactions, 1));
  state.SetLabel("p50 " + percentile_us(latencies_us, 0.5) + " us, p99 " +
                 percentile_us(latencies_us, 0.99) + " us");
}
// 8 writers is the target; 4 and 16 show how group commit scales with concurrent callers.
BENCHMARK(BM_AuditAppend)->ArgName("writers")->Arg(1)->Arg(4)->Arg(8)->Arg(16)->Iterations(3)
    ->UseRealTime()->Unit(benchmark::kMillisecond);

// Verify reads every record back, recomputes every hash, checks every signature: records in a
// warm page cache, so this is the CPU cost.
void BM_AuditVerify(benchmark::State& state) {
  static const std::string path = [] {
    std::string p = fresh_path("verify");
    auto log = AuditLog::open(p);
    std::vector<std::thread> threads;
    for (int w = 0; w < 8; ++w)
      threads.emplace_back([&, w] {
        for (std::uint64_t i = 0; i < 6250; ++i) (void)(*log)->append(invocation_fields(w * 6250 + i));
      });
    for (auto& t : threads) t.join();
    (void)(*log)->close();
    return p;
  }();
  auto reader = LogReader::open(path);
  std::uint64_t bytes = 0, records = 0;
  for (auto _ : state) {
    auto report = verify_log(*reader);
    if (!report || !report->intact()) {
      state.SkipWithError("verify failed");
      return;
    }
    bytes += report->record_bytes;
    records = report->records;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["records"] = static_cast<double>(records);
  state.counters["record_MB_per_s"] =
      benchmark::Counter(static_cast<double>(bytes) / 1e6, benchmark::Counter::kIsRate);
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(records * state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AuditVerify)->Iterations(5)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- The shared log: writer processes, SQLite and PostgreSQL ------------------------------

// One cluster for the run, durable as a production server: every commit waits for its WAL
// flush (the test clusters turn that off).
airlock::test::PgCluster* bench_cluster() {
  static std::unique_ptr<airlock::test::PgCluster> cluster = [] {
    airlock::test::PgCluster::Options options;
    options.settings = {{"fsync", "on"}, {"synchronous_commit", "on"}};
    // More server settings to try, as name=value,name=value (e.g. commit_delay=500).
    if (const char* extra = std::getenv("AIRLOCK_BENCH_PG_SETTINGS")) {
      std::string list = extra;
      for (std::size_t at = 0; at < list.size();) {
        std::size_t end = std::min(list.find(',', at), list.size());
        std::string item = list.substr(at, end - at);
        if (auto eq = item.find('='); eq != std::string::npos)
          options.settings[item.substr(0, eq)] = item.substr(eq + 1);
        at = end + 1;
      }
    }
    auto started = airlock::test::PgCluster::start(options);
    if (!started) return std::unique_ptr<airlock::test::PgCluster>();
    if (!(*started)->exec("CREATE ROLE bench LOGIN PASSWORD 'bench-pw'")) return std::unique_ptr<airlock::test::PgCluster>();
    return std::move(*started);
  }();
  return cluster.get();
}

airlock::Result<LogLocation> fresh_location(bool postgres) {
  static int counter = 0;
  std::string name = "shared" + std::to_string(counter++);
  if (!postgres) return LogLocation::sqlite(fresh_path(name));
  auto* cluster = bench_cluster();
  if (cluster == nullptr) return airlock::Error::make("setup_error", "no PostgreSQL cluster");
  if (auto made = cluster->exec("CREATE DATABASE " + name + " OWNER bench"); !made) return made.error();
  LogLocation location;
  location.postgres_url = cluster->url("bench", "bench-pw", name);
  location.key_file = fresh_path(name + "-key");
  return location;
}

// A writer process: opens the log, says it is ready, waits for the start, appends
// `per_thread` records from each of `threads` threads, sends its stats and exits.
pid_t start_writer_process(const LogLocation& location, const AuditLogOptions& options,
                           int threads, int per_thread, int ready_fd, int go_fd, int stats_fd) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Every path writes its stats (zero records: failed), so the parent never waits forever.
  std::uint64_t out[2] = {0, 0};
  auto leave = [&](int code) {
    if (::write(stats_fd, out, sizeof out) != sizeof out) code = 1;
    ::_exit(code);  // never exit(): the parent's cluster would be stopped
  };
  auto log = AuditLog::open(location, options);
  char byte = log ? 'r' : 'x';
  if (::write(ready_fd, &byte, 1) != 1 || !log) leave(1);
  if (::read(go_fd, &byte, 1) != 1) leave(1);
  std::vector<nlohmann::json> fields;
  for (int i = 0; i < per_thread; ++i) fields.push_back(invocation_fields(static_cast<std::uint64_t>(i)));
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i)
        if (!(*log)->append(fields[static_cast<std::size_t>(i)])) failed = true;
    });
  for (auto& w : workers) w.join();
  AuditLogStats stats = (*log)->stats();
  out[0] = failed ? 0 : stats.records;
  out[1] = stats.transactions;
  leave(failed ? 1 : 0);  // the log's final checkpoint is not in the measured time
  return pid;
}

// writers: 1 (one process, one thread) or 8 (two processes of four threads), all appending to
// one log at once; the time is from the start signal to the last process's last append.
// batched 0: max_batch = 1, one transaction (and one flush) per record, the reference for
// group commit.
void BM_SharedLogAppend(benchmark::State& state) {
  const bool postgres = state.range(0) == 1;
  const int writers = static_cast<int>(state.range(1));
  AuditLogOptions options;
  if (state.range(2) == 0) options.max_batch = 1;
  const int processes = writers == 1 ? 1 : 2;
  const int threads = writers / processes;
  const int per_thread = writers == 1 ? 2000 : 1000;
  std::uint64_t records = 0, transactions = 0;
  for (auto _ : state) {
    auto location = fresh_location(postgres);
    if (!location) {
      state.SkipWithError(location.error().message.c_str());
      return;
    }
    // The log exists before the writers start, as when replicas start on a deployed database
    // (its key is the one file every replica is given).
    if (auto made = AuditLog::open(*location); !made || !(*made)->close()) {
      state.SkipWithError("cannot create the log");
      return;
    }
    int ready[2], go[2], stats[2];
    if (::pipe(ready) != 0 || ::pipe(go) != 0 || ::pipe(stats) != 0) std::abort();
    std::vector<pid_t> pids;
    for (int p = 0; p < processes; ++p)
      pids.push_back(
          start_writer_process(*location, options, threads, per_thread, ready[1], go[0], stats[1]));
    bool all_ready = true;
    for (int p = 0; p < processes; ++p) {
      char byte = 0;
      all_ready = ::read(ready[0], &byte, 1) == 1 && byte == 'r' && all_ready;
    }
    auto start = Clock::now();
    std::string go_bytes(static_cast<std::size_t>(processes), 'g');
    if (::write(go[1], go_bytes.data(), go_bytes.size()) < 0) all_ready = false;
    bool ok = all_ready;
    for (int p = 0; p < processes; ++p) {
      std::uint64_t in[2] = {0, 0};
      ok = ::read(stats[0], in, sizeof in) == sizeof in && in[0] > 0 && ok;
      records += in[0];
      transactions += in[1];
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
    for (pid_t pid : pids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    for (int fd : {ready[0], ready[1], go[0], go[1], stats[0], stats[1]}) ::close(fd);
    if (!ok) {
      state.SkipWithError("a writer process failed");
      return;
    }
  }
  const auto appends = state.iterations() * writers * per_thread;
  state.SetLabel(std::string(postgres ? "PostgreSQL" : "SQLite") +
                (options.max_batch == 1 ? ", no batching" : ""));
  state.counters["appends_per_s"] =
      benchmark::Counter(static_cast<double>(appends), benchmark::Counter::kIsRate);
  state.counters["records_per_txn"] =
      static_cast<double>(records) / static_cast<double>(std::max<std::uint64_t>(transactions, 1));
}
BENCHMARK(BM_SharedLogAppend)->ArgNames({"postgres", "writers", "batched"})
    ->Args({0, 1, 1})->Args({1, 1, 1})->Args({0, 8, 1})->Args({1, 8, 1})->Args({0, 8, 0})
    ->Args({1, 8, 0})->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);

// The cluster's durable-commit floor: one session committing one small WAL record per
// transaction (a logical message) with synchronous_commit on, so each waits for its WAL flush.
// No append on PostgreSQL is acknowledged sooner than this, so 8 synchronous writers cannot
// exceed 8 x this rate; pg_test_fsync measures the disk alone.
void BM_PgDurableCommit(benchmark::State& state) {
  auto* cluster = bench_cluster();
  if (cluster == nullptr) {
    state.SkipWithError("no PostgreSQL cluster");
    return;
  }
  PGconn* conn = PQconnectdb(cluster->superuser_conninfo().c_str());
  auto run = [&](const char* sql) {
    PGresult* result = PQexec(conn, sql);
    bool ok = PQresultStatus(result) == PGRES_TUPLES_OK || PQresultStatus(result) == PGRES_COMMAND_OK;
    PQclear(result);
    return ok;
  };
  if (PQstatus(conn) != CONNECTION_OK || !run("SET synchronous_commit = on")) {
    state.SkipWithError("cannot connect to the cluster");
    PQfinish(conn);
    return;
  }
  for (auto _ : state)
    if (!run("SELECT pg_logical_emit_message(true, 'bench', '')")) state.SkipWithError("commit failed");
  PQfinish(conn);
  state.counters["commits_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PgDurableCommit)->Iterations(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---- The reference: raw SQLite, same durability --------------------------------------------

void check(int rc, sqlite3* db, benchmark::State& state) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE) state.SkipWithError(sqlite3_errmsg(db));
}

// INSERTs of the same record bytes into a table like ours, in WAL mode with synchronous=FULL,
// `batch` inserts per transaction, from one thread.
void BM_RawSqliteInsert(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const int inserts = 2000;
  sqlite3* db = nullptr;
  sqlite3_open(fresh_path("raw").c_str(), &db);
  check(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                         "CREATE TABLE records(idx INTEGER PRIMARY KEY, record BLOB NOT NULL)",
                     nullptr, nullptr, nullptr), db, state);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO records(idx, record) VALUES (?1, ?2)", -1, &insert, nullptr);
  std::vector<std::string> records;
  for (int i = 0; i < inserts; ++i) records.push_back(*canonical_json(invocation_fields(i)));
  std::int64_t next = 0;
  for (auto _ : state) {
    for (int i = 0; i < inserts; i += batch) {
      sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
      for (int k = i; k < std::min(i + batch, inserts); ++k) {
        sqlite3_bind_int64(insert, 1, next++);
        const std::string& r = records[static_cast<std::size_t>(k)];
        sqlite3_bind_blob(insert, 2, r.data(), static_cast<int>(r.size()), SQLITE_STATIC);
        check(sqlite3_step(insert), db, state);
        sqlite3_reset(insert);
      }
      check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, state);
    }
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
  state.SetItemsProcessed(state.iterations() * inserts);
  state.counters["inserts_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * inserts), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RawSqliteInsert)->ArgName("per_txn")->Arg(1)->Arg(8)->Arg(64)->Iterations(3)
    ->UseRealTime()->Unit(benchmark::kMillisecond);

// What the disk charges for durability: append 4 KiB and fdatasync, as a WAL commit does.
void BM_Fdatasync(benchmark::State& state) {
  std::string path = fresh_path("fsync");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::string page(4096, 'x');
  for (auto _ : state) {
    if (::write(fd, page.data(), page.size()) != static_cast<ssize_t>(page.size()) ||
        ::fdatasync(fd) != 0)
      state.SkipWithError("write/fdatasync failed");
  }
  ::close(fd);
  state.counters["syncs_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Fdatasync)->Iterations(2000)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
