// Group commit on PostgreSQL, made deterministic: the test holds the log's write lock (the
// audit_head row) from its own session, so the appends that arrive meanwhile queue up and form
// one batch when it lets go. Then: nobody in a batch is answered before its commit, a batch
// is bounded by records and bytes, and a batch that fails in the middle (a record the database
// refuses, the server stopped) fails every caller in it and leaves no gap.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "../unit/audit_test_support.hpp"
#include "audit/canonical_json.hpp"
#include "audit/detail/log_store.hpp"
#include "audit/merkle.hpp"
#include "audit_pg_support.hpp"

namespace airlock::audit::testing {
namespace {

using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& done) {
  for (auto deadline = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(2ms))
    if (done()) return true;
  return done();
}

// A session of the test's own that holds the audit_head row lock (the log's write lock) until
// release().
class WriteLockHolder {
 public:
  explicit WriteLockHolder(const LogLocation& location)
      : database_(database_of(location)),
        conn_(PQconnectdb(cluster().superuser_conninfo(database_).c_str())) {
    held_ = PQstatus(conn_) == CONNECTION_OK && run("BEGIN") &&
            run("SELECT 1 FROM audit_head WHERE id = 1 FOR UPDATE");
  }
  ~WriteLockHolder() { PQfinish(conn_); }
  bool held() const { return held_; }
  void release() { held_ = !run("ROLLBACK"); }
  // Another session (the log's writer) is blocked waiting for a lock in this database.
  bool someone_waits() const {
    auto waiting = cluster().column("SELECT count(*) FROM pg_stat_activity WHERE datname = '" +
                                    database_ + "' AND wait_event_type = 'Lock'");
    return waiting && !waiting->empty() && waiting->front() != "0";
  }

 private:
  bool run(const char* sql) {
    PGresult* result = PQexec(conn_, sql);
    bool ok = PQresultStatus(result) == PGRES_COMMAND_OK || PQresultStatus(result) == PGRES_TUPLES_OK;
    PQclear(result);
    return ok;
  }
  std::string database_;
  PGconn* conn_;
  bool held_ = false;
};

// Appends from threads of their own, and what each got.
class Appenders {
 public:
  explicit Appenders(AuditLog& log) : log_(log) {}
  ~Appenders() { join(); }
  void start(nlohmann::json fields) {
    std::size_t at = 0;
    {
      std::lock_guard lock(mutex_);
      results_.emplace_back();
      at = results_.size() - 1;
    }
    threads_.emplace_back([this, fields = std::move(fields), at] {
      auto receipt = log_.append(fields);
      std::lock_guard lock(mutex_);
      results_[at] = std::move(receipt);
      ++answered_;
    });
  }
  int answered() {
    std::lock_guard lock(mutex_);
    return answered_;
  }
  void join() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  const Result<AppendReceipt>& result(std::size_t i) const { return *results_.at(i); }  // joined
  std::size_t size() const { return results_.size(); }

 private:
  AuditLog& log_;
  std::mutex mutex_;
  std::deque<std::optional<Result<AppendReceipt>>> results_;  // deque: stable under emplace
  std::vector<std::thread> threads_;
  int answered_ = 0;
};

AuditLogOptions quiet_options() {
  AuditLogOptions options;
  options.checkpoint_interval = std::chrono::hours(1);  // no timed checkpoint transaction
  return options;
}

class PostgresGroupCommit : public ::testing::Test {
 protected:
  // While the test holds the write lock: `first` is taken by the writer, which then blocks on
  // the lock; `queued` arrive one after the other and wait in its queue, in that order.
  void queue_behind_a_blocked_writer(Appenders& appenders, WriteLockHolder& holder,
                                     AuditLog& log, const std::vector<nlohmann::json>& queued) {
    ASSERT_TRUE(holder.held());
    appenders.start(sample_fields(1000));
    ASSERT_TRUE(eventually([&] { return holder.someone_waits(); }));
    for (std::size_t i = 0; i < queued.size(); ++i) {
      appenders.start(queued[i]);
      ASSERT_TRUE(eventually([&] { return log.stats().queued == i + 1; }));
    }
  }

  std::vector<nlohmann::json> samples(std::size_t n) {
    std::vector<nlohmann::json> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(sample_fields(i));
    return out;
  }

  ScratchDir dir_;
  LogLocation location_ = fresh_postgres_log(dir_.file("batch.key"));
};

// Seven appends queued while the lock is held: none is answered before a commit could happen,
// then they commit as one transaction (the first, taken before the lock, as another), each
// with its own index.
TEST_F(PostgresGroupCommit, QueuedAppendsCommitAsOneTransactionAndAreAnsweredOnlyAfterIt) {
  auto log = AuditLog::open(location_, quiet_options());
  ASSERT_TRUE(log) << log.error().message;
  WriteLockHolder holder(location_);
  Appenders appenders(**log);
  queue_behind_a_blocked_writer(appenders, holder, **log, samples(7));
  EXPECT_EQ(appenders.answered(), 0) << "an append was answered before its commit";
  EXPECT_EQ((*log)->stats().transactions, 0u);
  holder.release();
  appenders.join();
  std::set<std::uint64_t> indices;
  for (std::size_t i = 0; i < appenders.size(); ++i) {
    ASSERT_TRUE(appenders.result(i)) << appenders.result(i).error().message;
    indices.insert(appenders.result(i)->index);
  }
  EXPECT_EQ(indices, (std::set<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  AuditLogStats stats = (*log)->stats();
  EXPECT_EQ(stats.records, 8u);
  EXPECT_EQ(stats.transactions, 2u) << "the seven queued appends were not one batch";
  ASSERT_TRUE((*log)->close());
  auto reader = LogReader::open(location_);
  ASSERT_TRUE(reader) << reader.error().message;
  auto report = verify_log(*reader);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->intact()) << findings_text(*report);
  EXPECT_EQ(report->records, 8u);
}

// The same seven queued appends with a batch bounded at 3 records (3 + 3 + 1), then at the
// bytes of about two and a half records (2 + 2 + 2 + 1).
TEST_F(PostgresGroupCommit, ABatchIsBoundedByRecordsAndByBytes) {
  const std::size_t record_bytes = canonical_json(sample_fields(0))->size();
  struct Case {
    std::size_t max_batch, max_batch_bytes;
    std::uint64_t transactions;  // the first append's, then the queued seven's
  };
  for (Case c : {Case{3, 4 << 20, 1 + 3}, Case{1024, record_bytes * 5 / 2, 1 + 4}}) {
    SCOPED_TRACE("max_batch " + std::to_string(c.max_batch) + ", max_batch_bytes " +
                 std::to_string(c.max_batch_bytes));
    AuditLogOptions options = quiet_options();
    options.max_batch = c.max_batch;
    options.max_batch_bytes = c.max_batch_bytes;
    LogLocation location = fresh_postgres_log(dir_.file("bounded-" + std::to_string(c.max_batch) + ".key"));
    auto log = AuditLog::open(location, options);
    ASSERT_TRUE(log) << log.error().message;
    WriteLockHolder holder(location);
    Appenders appenders(**log);
    queue_behind_a_blocked_writer(appenders, holder, **log, samples(7));
    holder.release();
    appenders.join();
    for (std::size_t i = 0; i < appenders.size(); ++i)
      EXPECT_TRUE(appenders.result(i)) << appenders.result(i).error().message;
    EXPECT_EQ((*log)->stats().records, 8u);
    EXPECT_EQ((*log)->stats().transactions, c.transactions);
  }
}

// A record the database refuses (a CHECK constraint added for the test), queued second of
// four: the whole batch fails, every caller in it gets the error and no receipt, and the next
// append takes the index right after the last committed one.
TEST_F(PostgresGroupCommit, ARefusedRecordMidBatchFailsEveryCallerInItAndLeavesNoGap) {
  auto log = AuditLog::open(location_, quiet_options());
  ASSERT_TRUE(log) << log.error().message;
  ASSERT_TRUE((*log)->append(sample_fields(1)));  // index 0
  ASSERT_TRUE(cluster().exec("ALTER TABLE audit_records ADD CONSTRAINT no_poison "
                             "CHECK (position('poison'::bytea in record) = 0)",
                             database_of(location_)));
  nlohmann::json poison = sample_fields(2);
  poison["note"] = "poison";
  WriteLockHolder holder(location_);
  Appenders appenders(**log);
  queue_behind_a_blocked_writer(appenders, holder, **log,
                                {sample_fields(3), poison, sample_fields(4), sample_fields(5)});
  holder.release();
  appenders.join();
  ASSERT_TRUE(appenders.result(0)) << appenders.result(0).error().message;  // its own batch
  EXPECT_EQ(appenders.result(0)->index, 1u);
  for (std::size_t i = 1; i < appenders.size(); ++i) {
    ASSERT_FALSE(appenders.result(i)) << "caller " << i << " of the refused batch got a receipt";
    EXPECT_NE(appenders.result(i).error().message.find("no_poison"), std::string::npos)
        << appenders.result(i).error().message;
  }
  auto after = (*log)->append(sample_fields(6));
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->index, 2u) << "the refused batch took indices";
  ASSERT_TRUE((*log)->close());
  auto reader = LogReader::open(location_);
  ASSERT_TRUE(reader) << reader.error().message;
  auto report = verify_log(*reader);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->intact()) << findings_text(*report);
  EXPECT_EQ(report->records, 3u);
  auto record = reader->record(1);
  ASSERT_TRUE(record);
  EXPECT_EQ(leaf_hash(as_bytes(*record)), appenders.result(0)->leaf_hash);
}

// Eight threads appending while the server is stopped and started again: every append fails
// or is in the log with its receipt's leaf hash, no index is acknowledged twice, the log has
// no gap and verifies, and appends work again afterwards.
TEST_F(PostgresGroupCommit, EightWritersAcrossADatabaseRestartLoseNothingAcknowledged) {
  auto log = AuditLog::open(location_);
  ASSERT_TRUE(log) << log.error().message;
  std::mutex mutex;
  std::vector<AppendReceipt> receipts;
  std::set<std::string> error_codes;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      for (std::uint64_t i = 0; !stop; ++i) {
        auto receipt = (*log)->append(sample_fields(static_cast<std::uint64_t>(t) * 1'000'000 + i));
        std::lock_guard lock(mutex);
        if (receipt) receipts.push_back(*receipt);
        else {
          error_codes.insert(receipt.error().code);
          ++failures;
        }
        if (!receipt) std::this_thread::sleep_for(20ms);  // a down server: do not spin
      }
    });
  auto acknowledged = [&] {
    std::lock_guard lock(mutex);
    return receipts.size();
  };
  EXPECT_TRUE(eventually([&] { return acknowledged() >= 200; }));
  cluster().stop_server();
  EXPECT_TRUE(eventually([&] { return failures >= 8; }));
  auto restarted = cluster().restart_server();
  ASSERT_TRUE(restarted) << restarted.error().message;
  const std::size_t before_restart = acknowledged();
  EXPECT_TRUE(eventually([&] { return acknowledged() >= before_restart + 200; }))
      << "appends did not resume after the restart";
  stop = true;
  for (auto& w : writers) w.join();
  ASSERT_TRUE((*log)->close());

  EXPECT_EQ(error_codes, std::set<std::string>{"storage_unavailable"});
  auto reader = LogReader::open(location_);
  ASSERT_TRUE(reader) << reader.error().message;
  std::set<std::uint64_t> indices;
  for (const auto& r : receipts) {
    EXPECT_TRUE(indices.insert(r.index).second) << "index " << r.index << " acknowledged twice";
    auto record = reader->record(r.index);
    ASSERT_TRUE(record) << "acknowledged record " << r.index << " is not in the log";
    EXPECT_EQ(leaf_hash(as_bytes(*record)), r.leaf_hash) << "record " << r.index;
  }
  auto report = verify_log(*reader);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->intact()) << findings_text(*report);  // a gap would be "missing"
  EXPECT_GE(report->records, receipts.size());
}

// One transaction of 20,000 records, through the store itself: 80,000 statement parameters,
// more than a statement may carry (65,535), so the store splits its INSERT.
TEST_F(PostgresGroupCommit, ABatchAboveTheProtocolsParameterLimitCommits) {
  auto store = detail::LogStore::open_for_writing(location_, 10'000);
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE((*store)->begin_write());
  MerkleFrontier frontier;
  Hash last{};
  constexpr std::uint64_t kRecords = 20'000;
  for (std::uint64_t i = 0; i < kRecords; ++i) {
    std::string record = "{\"index\":" + std::to_string(i) + "}";
    last = leaf_hash(as_bytes(record));
    auto completed = frontier.append(last);
    ASSERT_TRUE((*store)->insert_record(i, record, last, completed));
  }
  ASSERT_TRUE((*store)->set_edge({frontier, last, std::nullopt}));
  auto committed = (*store)->commit();
  ASSERT_TRUE(committed) << committed.error().message;
  auto tail = (*store)->tail();
  ASSERT_TRUE(tail) << tail.error().message;
  EXPECT_EQ(tail->size, kRecords);
  EXPECT_EQ(tail->last_leaf, last);
}

}  // namespace
}  // namespace airlock::audit::testing
