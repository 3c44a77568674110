// AuditLog: durable appends, the record envelope, checkpoints (every N, every T, on request,
// on close), group commit from many threads, several writers on one file, the key file, and
// failing closed.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <set>
#include <sqlite3.h>
#include <thread>

#include "audit/canonical_json.hpp"
#include "audit/invocation_record.hpp"
#include "audit/merkle.hpp"
#include "audit_test_support.hpp"

using namespace airlock;
using namespace airlock::audit;
using namespace airlock::audit::testing;
using nlohmann::json;

namespace {

unsigned file_mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

std::vector<SignedCheckpoint> checkpoints_of(const std::string& path) {
  auto reader = LogReader::open(path);
  EXPECT_TRUE(reader);
  auto checkpoints = reader->checkpoints();
  EXPECT_TRUE(checkpoints);
  return *checkpoints;
}

std::vector<std::uint64_t> checkpoint_sizes(const std::string& path) {
  std::vector<std::uint64_t> sizes;
  for (const auto& cp : checkpoints_of(path)) sizes.push_back(cp.checkpoint.size);
  return sizes;
}

}  // namespace

TEST(AuditLog, CreatesLogAndKeyOwnerOnly) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(file_mode(path), 0600u);
  EXPECT_EQ(file_mode(AuditLog::key_path(path)), 0600u);
  EXPECT_EQ((*log)->origin().rfind("airlock-audit/", 0), 0u);
  auto reader = LogReader::open(path);
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->public_key(), (*log)->public_key());
}

TEST(AuditLog, AppendsChainedRecordsAndContinuesAfterReopen) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  std::vector<Hash> leaves;
  {
    auto log = AuditLog::open(path);
    ASSERT_TRUE(log);
    for (int i = 0; i < 3; ++i) {
      auto receipt = (*log)->append(sample_fields(i));
      ASSERT_TRUE(receipt) << receipt.error().message;
      EXPECT_EQ(receipt->index, static_cast<std::uint64_t>(i));
      leaves.push_back(receipt->leaf_hash);
    }
  }
  {
    auto log = AuditLog::open(path);
    ASSERT_TRUE(log);
    auto receipt = (*log)->append({{"note", "after reopen"}});
    ASSERT_TRUE(receipt);
    EXPECT_EQ(receipt->index, 3u);
    leaves.push_back(receipt->leaf_hash);
  }
  auto reader = LogReader::open(path);
  ASSERT_TRUE(reader);
  EXPECT_EQ(*reader->size(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    std::string record = *reader->record(i);
    // Stored in canonical form, hashed as stored, chained to the previous leaf.
    EXPECT_EQ(*canonical_json(json::parse(record)), record);
    EXPECT_EQ(leaf_hash(as_bytes(record)), leaves[i]);
    auto parsed = json::parse(record);
    EXPECT_EQ(parsed["index"], i);
    EXPECT_EQ(parsed["prev"], i == 0 ? std::string(64, '0') : to_hex(leaves[i - 1]));
    EXPECT_TRUE(parsed["time"].is_number_integer());
  }
  EXPECT_EQ(json::parse(*reader->record(0))["invocation_id"], "inv-0");
  auto report = verify_path(path);
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, 4u);
}

TEST(AuditLog, RejectsRecordsWithoutACanonicalFormAndWritesNothing) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log);
  for (const json& bad : {json::array({1}), json("text"), json{{"index", 5}}, json{{"prev", "x"}},
                          json{{"time", 1}}, json{{"ratio", 0.5}},
                          json{{"out", std::string("\xff\xfe")}},
                          json{{std::string("k\xc0"), 1}}}) {
    auto receipt = (*log)->append(bad);
    ASSERT_FALSE(receipt) << bad.dump();
    EXPECT_EQ(receipt.error().code, "invalid_record");
  }
  // A rejected record is the caller's fault, not the log's: later appends still work.
  auto receipt = (*log)->append({{"ok", true}});
  ASSERT_TRUE(receipt);
  EXPECT_EQ(receipt->index, 0u);
}

TEST(AuditLog, SignsACheckpointEveryNRecordsAndOnClose) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  AuditLogOptions options;
  options.checkpoint_every_records = 10;
  write_sample_log(path, 35, options);
  EXPECT_EQ(checkpoint_sizes(path), (std::vector<std::uint64_t>{10, 20, 30, 35}));
  auto reader = LogReader::open(path);
  auto checkpoints = reader->checkpoints();
  ASSERT_TRUE(checkpoints);
  for (const auto& cp : *checkpoints) {
    EXPECT_TRUE(verify_checkpoint_signature(cp, reader->public_key()));
    EXPECT_EQ(cp.checkpoint.root, *reader->root(cp.checkpoint.size));
    EXPECT_EQ(cp.checkpoint.origin, reader->origin());
  }
}

TEST(AuditLog, SignsACheckpointAfterTheIntervalWhileRecordsAreUnsigned) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  AuditLogOptions options;
  options.checkpoint_interval = std::chrono::milliseconds(100);
  auto log = AuditLog::open(path, options);
  ASSERT_TRUE(log);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*log)->append(sample_fields(i)));
  EXPECT_TRUE(checkpoint_sizes(path).empty());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (checkpoint_sizes(path).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(checkpoint_sizes(path), std::vector<std::uint64_t>{3});
  // Nothing new: no new checkpoint, however long we wait.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(checkpoint_sizes(path), std::vector<std::uint64_t>{3});
}

TEST(AuditLog, CheckpointOnRequestCoversEverythingCommitted) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log);
  auto empty = (*log)->checkpoint();
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->checkpoint.size, 0u);
  EXPECT_EQ(empty->checkpoint.root, empty_tree_root());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*log)->append(sample_fields(i)));
  auto cp = (*log)->checkpoint();
  ASSERT_TRUE(cp);
  EXPECT_EQ(cp->checkpoint.size, 5u);
  EXPECT_TRUE(verify_checkpoint_signature(*cp, (*log)->public_key()));
  auto again = (*log)->checkpoint();  // nothing new: the same checkpoint, not a new one
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, cp->body);
  EXPECT_EQ(checkpoint_sizes(path), (std::vector<std::uint64_t>{0, 5}));
}

TEST(AuditLog, EightWritersAtOnceYieldOneConsistentLog) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  constexpr int kWriters = 8, kPerWriter = 400;
  std::vector<std::vector<AppendReceipt>> receipts(kWriters);
  {
    AuditLogOptions options;
    options.checkpoint_every_records = 500;
    auto log = AuditLog::open(path, options);
    ASSERT_TRUE(log);
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w)
      writers.emplace_back([&, w] {
        for (int i = 0; i < kPerWriter; ++i) {
          auto receipt = (*log)->append({{"writer", w}, {"seq", i}});
          if (receipt) receipts[w].push_back(*receipt);
        }
      });
    for (auto& t : writers) t.join();
    // Group commit: the writers shared transactions (one fsync each) instead of taking turns.
    AuditLogStats stats = (*log)->stats();
    EXPECT_EQ(stats.records, static_cast<std::uint64_t>(kWriters * kPerWriter));
    EXPECT_GE(stats.records, 2 * stats.transactions)
        << stats.records << " records in " << stats.transactions << " transactions";
  }
  std::set<std::uint64_t> indexes;
  auto reader = LogReader::open(path);
  ASSERT_TRUE(reader);
  for (int w = 0; w < kWriters; ++w) {
    ASSERT_EQ(receipts[w].size(), static_cast<std::size_t>(kPerWriter));
    std::uint64_t previous = 0;
    for (int i = 0; i < kPerWriter; ++i) {
      const AppendReceipt& r = receipts[w][i];
      indexes.insert(r.index);
      // Each writer's records appear in the order it appended them, with its content.
      if (i > 0) {
        EXPECT_GT(r.index, previous);
      }
      previous = r.index;
      auto record = json::parse(*reader->record(r.index));
      EXPECT_EQ(record["writer"], w);
      EXPECT_EQ(record["seq"], i);
      EXPECT_EQ(leaf_hash(as_bytes(*reader->record(r.index))), r.leaf_hash);
    }
  }
  EXPECT_EQ(indexes.size(), static_cast<std::size_t>(kWriters * kPerWriter));
  EXPECT_EQ(*indexes.rbegin(), static_cast<std::uint64_t>(kWriters * kPerWriter - 1));
  auto report = verify_path(path);
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.signed_size, static_cast<std::uint64_t>(kWriters * kPerWriter));
}

TEST(AuditLog, TwoWritersOnOneFileStayInStep) {
  // Two connections (as two processes would have): each must notice the other's appends.
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  auto a = AuditLog::open(path);
  ASSERT_TRUE(a);
  auto b = AuditLog::open(path);
  ASSERT_TRUE(b) << b.error().message;
  std::vector<std::uint64_t> order;
  for (int round = 0; round < 5; ++round) {
    order.push_back((*a)->append({{"from", "a"}, {"round", round}})->index);
    order.push_back((*b)->append({{"from", "b"}, {"round", round}})->index);
    order.push_back((*b)->append({{"from", "b"}, {"round", round}})->index);
  }
  ASSERT_TRUE((*a)->checkpoint());
  ASSERT_TRUE((*b)->close());
  ASSERT_TRUE((*a)->close());
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
  auto report = verify_path(path);
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, 15u);
  EXPECT_EQ(report.signed_size, 15u);
}

TEST(AuditLog, AWriteLockHeldElsewhereFailsTheBatchButNotTheLog) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  AuditLogOptions options;
  options.busy_timeout = std::chrono::milliseconds(100);
  auto log = AuditLog::open(path, options);
  ASSERT_TRUE(log);
  ASSERT_TRUE((*log)->append({{"n", 0}}));
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto blocked = (*log)->append({{"n", 1}});
  ASSERT_FALSE(blocked);  // fail closed: not logged, and the caller knows
  EXPECT_EQ(blocked.error().code, "audit_storage") << blocked.error().message;
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  auto after = (*log)->append({{"n", 2}});  // nothing was written: the log carries on
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->index, 1u);
  ASSERT_TRUE((*log)->close());
  auto report = verify_path(path);
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, 2u);
}

TEST(AuditLog, AppendAfterCloseFails) {
  ScratchDir dir;
  auto log = AuditLog::open(dir.file("audit.db"));
  ASSERT_TRUE(log);
  ASSERT_TRUE((*log)->close());
  auto receipt = (*log)->append({{"late", true}});
  ASSERT_FALSE(receipt);
  EXPECT_EQ(receipt.error().code, "audit_closed");
  EXPECT_TRUE((*log)->close());  // idempotent
}

TEST(AuditLog, RefusesAKeyFileOthersCanRead) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  write_sample_log(path, 1);
  ASSERT_EQ(::chmod(AuditLog::key_path(path).c_str(), 0644), 0);
  auto log = AuditLog::open(path);
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().message.find("0644"), std::string::npos) << log.error().message;
}

TEST(AuditLog, RefusesAMissingOrForeignKey) {
  ScratchDir dir;
  std::string path = dir.file("audit.db"), other = dir.file("other.db");
  write_sample_log(path, 1);
  write_sample_log(other, 1);
  std::filesystem::copy_file(AuditLog::key_path(path), dir.file("saved.key"));
  std::filesystem::remove(AuditLog::key_path(path));
  EXPECT_FALSE(AuditLog::open(path));  // a log whose key is gone is not silently re-keyed
  std::filesystem::copy_file(AuditLog::key_path(other), AuditLog::key_path(path));
  auto log = AuditLog::open(path);
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().code, "audit_key");
}

TEST(AuditLog, RefusesToAppendToALogInconsistentWithItsCheckpoint) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  write_sample_log(path, 10);
  // Cut the last record off with SQLite directly: the checkpoint at 10 now covers a missing one.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DELETE FROM records WHERE idx = 9", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto log = AuditLog::open(path);
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().code, "log_inconsistent") << log.error().message;
}

TEST(AuditLog, CredentialFingerprintsAreKeyedPerLog) {
  ScratchDir dir;
  auto a = AuditLog::open(dir.file("a.db"));
  auto b = AuditLog::open(dir.file("b.db"));
  ASSERT_TRUE(a && b);
  std::string fa = (*a)->credential_fingerprint("hunter2");
  EXPECT_EQ(fa.size(), 64u);
  EXPECT_EQ(fa, (*a)->credential_fingerprint("hunter2"));
  EXPECT_NE(fa, (*a)->credential_fingerprint("hunter3"));
  EXPECT_NE(fa, (*b)->credential_fingerprint("hunter2"));  // another log, another key
  EXPECT_NE(fa, to_hex(sha256("hunter2")));                // not a plain (guessable) hash
}

// Fail closed: when the disk refuses writes (here RLIMIT_FSIZE), append returns an error,
// every later append does too, and nothing that was acknowledged is lost.
TEST(AuditLog, FailsClosedWhenStorageFails) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  std::uint64_t acknowledged = 0;
  {
    auto log = AuditLog::open(path);
    ASSERT_TRUE(log);
    ASSERT_TRUE((*log)->append({{"warm", "up"}}));
    ++acknowledged;
    struct rlimit saved {};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = saved;
    limit.rlim_cur = 256 * 1024;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
    std::string big(16 * 1024, 'x');
    bool failed = false;
    for (int i = 0; i < 200 && !failed; ++i) {
      auto receipt = (*log)->append({{"payload", big}, {"i", i}});
      if (receipt) {
        ++acknowledged;
      } else {
        failed = true;
        EXPECT_EQ(receipt.error().code, "audit_storage") << receipt.error().message;
      }
    }
    EXPECT_TRUE(failed) << "the file size limit never made an append fail";
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
    std::signal(SIGXFSZ, previous_handler);
    // The disk is fine again, but this log no longer knows what reached it: it stays closed.
    auto after = (*log)->append({{"after", "failure"}});
    ASSERT_FALSE(after);
    EXPECT_EQ(after.error().code, "audit_unavailable");
    EXPECT_FALSE((*log)->close());
  }
  auto log = AuditLog::open(path);  // reopening recovers from what is on disk
  ASSERT_TRUE(log) << log.error().message;
  ASSERT_TRUE((*log)->close());
  auto report = verify_path(path);
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, acknowledged);
}

TEST(InvocationRecord, HoldsDigestsAndFingerprintsNeverSecrets) {
  ScratchDir dir;
  auto log = AuditLog::open(dir.file("audit.db"));
  ASSERT_TRUE(log);
  const std::string secret = "sk-live-0123456789abcdef";
  InvocationRecord record;
  record.invocation_id = new_invocation_id();
  record.principal = "user:alice";
  record.tool = "http.fetch";
  record.command = {"curl", "https://example.com"};
  record.limits = {{"wall_time_ms", 30000}};
  record.verdict = "ok";
  record.exit_code = 0;
  record.usage = {{"wall_ms", 12}};
  record.egress.push_back({"example.com", 443, "93.184.216.34", true, "allow example.com", 10, 20, 5});
  record.input = ContentDigest::of("{\"url\":\"https://example.com\"}");
  record.output = ContentDigest::of("body with " + secret);
  record.output->redacted = "body with [REDACTED:api_key] \xff";
  record.findings.push_back({"no-subprocess", "high", "subprocess.run call", 3});
  record.credentials.push_back({"EXAMPLE_TOKEN", (*log)->credential_fingerprint(secret), "", "", {}, 0});
  auto receipt = (*log)->append(to_fields(record));
  ASSERT_TRUE(receipt) << receipt.error().message;
  ASSERT_TRUE((*log)->close());

  auto reader = LogReader::open(dir.file("audit.db"));
  std::string text = *reader->record(0);
  EXPECT_EQ(text.find(secret), std::string::npos);
  auto stored = json::parse(text);
  EXPECT_EQ(stored["schema"], kInvocationSchema);
  EXPECT_EQ(stored["invocation_id"].get<std::string>().size(), 36u);
  EXPECT_EQ(stored["credentials"][0]["hmac_sha256"], (*log)->credential_fingerprint(secret));
  EXPECT_EQ(stored["output"]["sha256"], to_hex(sha256("body with " + secret)));
  EXPECT_EQ(stored["output"]["redacted"], "body with [REDACTED:api_key] \xef\xbf\xbd");
  EXPECT_EQ(stored["egress"][0]["host"], "example.com");
  EXPECT_EQ(stored["findings"][0]["line"], 3);
  EXPECT_TRUE(stored["stderr"].is_null());
  EXPECT_EQ(stored["exit"]["code"], 0);
}

TEST(RecordProof, ProvesARecordAThirdPartyCanCheck) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  write_sample_log(path, 21);
  auto reader = LogReader::open(path);
  ASSERT_TRUE(reader);
  for (std::uint64_t index : {0, 7, 20}) {
    auto proof = prove_record(*reader, index);
    ASSERT_TRUE(proof) << proof.error().message;
    EXPECT_EQ((*proof)["tree_size"], 21u);
    EXPECT_TRUE(verify_record_proof(*proof));
    EXPECT_TRUE(verify_record_proof(*proof, reader->public_key()));
  }
  EXPECT_FALSE(prove_record(*reader, 21));
}

TEST(RecordProof, RejectsEveryAlteredPart) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  write_sample_log(path, 9);
  auto reader = LogReader::open(path);
  auto proof = *prove_record(*reader, 5);
  auto altered = [&](auto change) {
    json copy = proof;
    change(copy);
    return verify_record_proof(copy);
  };
  EXPECT_FALSE(altered([](json& p) {
    auto record = p["record"].get<std::string>();
    record[record.find("alice")] = 'A';
    p["record"] = record;
  }));
  EXPECT_FALSE(altered([](json& p) { p["index"] = 4; }));
  EXPECT_FALSE(altered([](json& p) { p["tree_size"] = 10; }));
  EXPECT_FALSE(altered([](json& p) {
    auto node = p["inclusion_proof"][1].get<std::string>();
    node[0] = node[0] == '0' ? '1' : '0';
    p["inclusion_proof"][1] = node;
  }));
  EXPECT_FALSE(altered([](json& p) { p["inclusion_proof"].erase(p["inclusion_proof"].begin()); }));
  EXPECT_FALSE(altered([](json& p) { p["checkpoint"]["checkpoint"]["size"] = 10; }));
  EXPECT_FALSE(altered([](json& p) {
    auto sig = p["checkpoint"]["signature"].get<std::string>();
    sig[10] = sig[10] == 'a' ? 'b' : 'a';
    p["checkpoint"]["signature"] = sig;
  }));
  // Signed by a key the verifier does not trust.
  auto other = SigningKey::generate();
  EXPECT_FALSE(verify_record_proof(proof, other->public_key()));
}

TEST(LogReader, RefusesWhatIsNotAnAuditLog) {
  ScratchDir dir;
  EXPECT_FALSE(LogReader::open(dir.file("missing.db")));
  std::ofstream(dir.file("text.db")) << "not a database at all, just some text\n";
  EXPECT_FALSE(LogReader::open(dir.file("text.db")));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file("other.db").c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto reader = LogReader::open(dir.file("other.db"));
  ASSERT_FALSE(reader);
  EXPECT_EQ(reader.error().code, "not_an_audit_log");
}
