// The audit log on each of its stores: the same tests run on SQLite (a file) and PostgreSQL
// (a throwaway PostgreSQL 15 cluster), through the public API only.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <mutex>
#include <set>
#include <thread>

#include "../unit/audit_test_support.hpp"
#include "audit/merkle.hpp"
#include "audit/log_location.hpp"
#include "audit_pg_support.hpp"

namespace airlock::audit::testing {
namespace {

// A log on SQLite, and how an attacker with write access to the file edits a record.
struct SqliteStore {
  static constexpr const char* kName = "SQLite";
  ScratchDir dir;
  LogLocation location() const { return LogLocation::sqlite(dir.file("audit.db")); }
  std::string key_file(const std::string& name) const { return dir.file(name); }
  void replace_in_record(std::uint64_t index, const std::string& from, const std::string& to) {
    std::string sql = "UPDATE records SET record = CAST(replace(CAST(record AS TEXT), '" + from +
                      "', '" + to + "') AS BLOB) WHERE idx = " + std::to_string(index);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(location().sqlite_path.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
    sqlite3_free(error);
    sqlite3_close(db);
  }
};

// A log in its own PostgreSQL database, and the same edit made with SQL.
struct PostgresStore {
  static constexpr const char* kName = "PostgreSQL";
  ScratchDir dir;
  LogLocation where = fresh_postgres_log(dir.file("audit.key"));
  LogLocation location() const { return where; }
  std::string key_file(const std::string& name) const { return dir.file(name); }
  void replace_in_record(std::uint64_t index, const std::string& from, const std::string& to) {
    auto status = cluster().exec(
        "UPDATE audit_records SET record = convert_to(replace(convert_from(record, 'UTF8'), '" +
            from + "', '" + to + "'), 'UTF8') WHERE idx = " + std::to_string(index),
        database_of(where));
    ASSERT_TRUE(status) << status.error().message;
  }
};

template <typename Store>
class AuditStore : public ::testing::Test {
 protected:
  std::unique_ptr<AuditLog> open_log(AuditLogOptions options = {}) {
    auto log = AuditLog::open(store_.location(), options);
    EXPECT_TRUE(log.ok()) << (log.ok() ? "" : log.error().message);
    return log.ok() ? std::move(*log) : nullptr;
  }
  VerifyReport verify() {
    auto reader = LogReader::open(store_.location());
    if (!reader) throw std::runtime_error("open failed: " + reader.error().message);
    auto report = verify_log(*reader);
    if (!report) throw std::runtime_error("verify failed: " + report.error().message);
    return std::move(*report);
  }
  Store store_;
};

struct StoreNames {
  template <typename Store>
  static std::string GetName(int) {
    return Store::kName;
  }
};
using Stores = ::testing::Types<SqliteStore, PostgresStore>;
TYPED_TEST_SUITE(AuditStore, Stores, StoreNames);

TYPED_TEST(AuditStore, AppendsReadBackInOrderAndVerify) {
  auto log = this->open_log();
  ASSERT_TRUE(log);
  for (std::uint64_t i = 0; i < 40; ++i) {
    auto receipt = log->append(sample_fields(i));
    ASSERT_TRUE(receipt) << receipt.error().message;
    EXPECT_EQ(receipt->index, i);
  }
  ASSERT_TRUE(log->close());
  auto reader = LogReader::open(this->store_.location());
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ(*reader->size(), 40u);
  auto record = reader->record(17);
  ASSERT_TRUE(record);
  EXPECT_NE(record->find("\"invocation_id\":\"inv-17\""), std::string::npos);
  EXPECT_NE(record->find("\"index\":17"), std::string::npos);
  VerifyReport report = this->verify();
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, 40u);
  EXPECT_EQ(report.signed_size, 40u);  // close() signs a final checkpoint
}

TYPED_TEST(AuditStore, ReopenedLogContinuesTheChain) {
  for (int round = 0; round < 3; ++round) {
    auto log = this->open_log();
    ASSERT_TRUE(log);
    for (std::uint64_t i = 0; i < 10; ++i) {
      auto receipt = log->append(sample_fields(i));
      ASSERT_TRUE(receipt) << receipt.error().message;
      EXPECT_EQ(receipt->index, round * 10 + i);
    }
  }
  VerifyReport report = this->verify();
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, 30u);
  EXPECT_EQ(report.checkpoints, 3u);
}

// Two writers (two connections, as two daemons would have) and eight threads: every index is
// handed out once, none is skipped, and the log verifies.
TYPED_TEST(AuditStore, ConcurrentWritersGetGapFreeIndices) {
  AuditLogOptions options;
  options.checkpoint_every_records = 64;  // checkpoints signed by both writers, interleaved
  auto a = this->open_log(options);
  auto b = this->open_log(options);
  ASSERT_TRUE(a && b);
  std::mutex mutex;
  std::vector<std::uint64_t> indices;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      AuditLog& log = t % 2 == 0 ? *a : *b;
      for (std::uint64_t i = 0; i < 60; ++i) {
        auto receipt = log.append(sample_fields(static_cast<std::uint64_t>(t) * 1000 + i));
        ASSERT_TRUE(receipt) << receipt.error().message;
        std::lock_guard lock(mutex);
        indices.push_back(receipt->index);
      }
    });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(a->close());
  ASSERT_TRUE(b->close());
  std::set<std::uint64_t> unique(indices.begin(), indices.end());
  ASSERT_EQ(unique.size(), 480u) << "an index was handed out twice";
  EXPECT_EQ(*unique.rbegin(), 479u) << "an index was skipped";
  VerifyReport report = this->verify();
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, 480u);
  EXPECT_EQ(report.signed_size, 480u);
}

TYPED_TEST(AuditStore, ProofOfARecordChecksAgainstTheSignedCheckpoint) {
  auto log = this->open_log();
  ASSERT_TRUE(log);
  for (std::uint64_t i = 0; i < 13; ++i) ASSERT_TRUE(log->append(sample_fields(i)));
  auto checkpoint = log->checkpoint();
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  EXPECT_EQ(checkpoint->checkpoint.size, 13u);
  auto reader = LogReader::open(this->store_.location());
  ASSERT_TRUE(reader) << reader.error().message;
  auto proof = prove_record(*reader, 5);
  ASSERT_TRUE(proof) << proof.error().message;
  EXPECT_TRUE(verify_record_proof(*proof, log->public_key()));
  auto consistency = reader->consistency_proof(5, 13);
  ASSERT_TRUE(consistency);
  EXPECT_TRUE(verify_consistency(5, 13, *consistency, *reader->root(5), checkpoint->checkpoint.root));
}

// The attack: a record rewritten in the store by someone with write access to it.
TYPED_TEST(AuditStore, ARewrittenRecordIsReportedAtItsIndex) {
  auto log = this->open_log();
  ASSERT_TRUE(log);
  for (std::uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(log->append(sample_fields(i)));
  ASSERT_TRUE(log->close());
  ASSERT_TRUE(this->verify().intact());
  this->store_.replace_in_record(7, "user:alice", "user:mallory");
  VerifyReport report = this->verify();
  ASSERT_FALSE(report.intact());
  EXPECT_EQ(report.findings.front().kind, TamperKind::modified) << findings_text(report);
  EXPECT_EQ(report.findings.front().index, std::optional<std::uint64_t>(7));
}

TYPED_TEST(AuditStore, ReservedMembersAreRefusedAndTheLogGoesOn) {
  auto log = this->open_log();
  ASSERT_TRUE(log);
  auto refused = log->append({{"index", 3}, {"tool", "x"}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "invalid_record");
  auto receipt = log->append(sample_fields(0));
  ASSERT_TRUE(receipt) << receipt.error().message;
  EXPECT_EQ(receipt->index, 0u);
}

// A writer with another key cannot append to (or re-key) a log: its checkpoints would not
// verify under the key the log was created with.
TYPED_TEST(AuditStore, AWriterWithAnotherKeyIsRefused) {
  ASSERT_TRUE(this->open_log());
  LogLocation other = this->store_.location();
  other.key_file = this->store_.key_file("other.key");
  auto refused = AuditLog::open(other);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "audit_key") << refused.error().message;
}

}  // namespace
}  // namespace airlock::audit::testing
