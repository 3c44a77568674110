// The executable threat model of the audit log: each test edits the SQLite file directly, as
// an attacker with write access to it would, and asserts that verify catches the edit and
// names it (kind and first bad index).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>

#include "audit/merkle.hpp"
#include "audit_test_support.hpp"

using namespace airlock;
using namespace airlock::audit;
using namespace airlock::audit::testing;
using nlohmann::json;

namespace {

constexpr std::uint64_t kRecords = 100;

// Direct access to the log's tables, bypassing everything the library checks.
class TamperDb {
 public:
  explicit TamperDb(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("open");
  }
  ~TamperDb() { sqlite3_close(db_); }

  void exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message ? message : "?";
      sqlite3_free(message);
      throw std::runtime_error(sql + ": " + text);
    }
  }

  std::string blob(const std::string& sql, std::int64_t key) {
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    sqlite3_bind_int64(stmt, 1, key);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW)
      out.assign(static_cast<const char*>(sqlite3_column_blob(stmt, 0)),
                 static_cast<std::size_t>(sqlite3_column_bytes(stmt, 0)));
    sqlite3_finalize(stmt);
    return out;
  }

  void set_blob(const std::string& sql, std::int64_t key, const std::string& value) {
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    sqlite3_bind_blob(stmt, 1, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(stmt, 2, key);
    if (sqlite3_step(stmt) != SQLITE_DONE) throw std::runtime_error(sql);
    sqlite3_finalize(stmt);
  }

  std::string record(std::int64_t idx) { return blob("SELECT record FROM records WHERE idx = ?1", idx); }
  void set_record(std::int64_t idx, const std::string& record) {
    set_blob("UPDATE records SET record = ?1 WHERE idx = ?2", idx, record);
  }
  // What a careful attacker adds: the stored leaf hash follows the edited record.
  void set_record_and_leaf(std::int64_t idx, const std::string& record) {
    set_record(idx, record);
    Hash leaf = leaf_hash(as_bytes(record));
    set_blob("UPDATE records SET leaf_hash = ?1 WHERE idx = ?2", idx,
             std::string(reinterpret_cast<const char*>(leaf.data()), leaf.size()));
  }
  // Moves rows [from, end) by `shift` (±1), keeping every column with its row.
  void shift_rows_from(std::int64_t from, int shift) {
    exec("UPDATE records SET idx = -idx - 1 WHERE idx >= " + std::to_string(from));
    exec("UPDATE records SET idx = -idx - 1 + (" + std::to_string(shift) + ") WHERE idx < 0");
  }
  std::string checkpoint_body(std::int64_t size) {
    return blob("SELECT body FROM checkpoints WHERE size = ?1", size);
  }
  void set_checkpoint(std::int64_t size, const std::string& body, const std::string& signature) {
    set_blob("UPDATE checkpoints SET body = ?1 WHERE size = ?2", size, body);
    set_blob("UPDATE checkpoints SET signature = ?1 WHERE size = ?2", size, signature);
  }

 private:
  sqlite3* db_ = nullptr;
};

std::string signature_bytes(const Signature& s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

class AuditTamper : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("audit.db");
    AuditLogOptions options;
    options.checkpoint_every_records = 25;  // checkpoints at 25, 50, 75, 100
    write_sample_log(path_, kRecords, options);
    auto clean = verify_path(path_);
    ASSERT_TRUE(clean.intact()) << findings_text(clean);
    ASSERT_EQ(clean.signed_size, kRecords);
  }

  // Asserts verify's headline finding; returns the report for further checks.
  VerifyReport expect_tampering(TamperKind kind, std::optional<std::uint64_t> index,
                                const VerifyOptions& options = {}) {
    VerifyReport report = verify_path(path_, options);
    EXPECT_FALSE(report.intact()) << "tampering went unnoticed";
    if (!report.intact()) {
      const Tampering& first = report.findings.front();
      EXPECT_EQ(tamper_kind_name(first.kind), tamper_kind_name(kind)) << findings_text(report);
      EXPECT_EQ(first.index, index) << findings_text(report);
    }
    return report;
  }

  CheckpointWithKey trusted_checkpoint() {
    auto reader = LogReader::open(path_);
    auto latest = reader->latest_checkpoint();
    return CheckpointWithKey{**latest, reader->public_key()};
  }

  ScratchDir dir_;
  std::string path_;
};

}  // namespace

TEST_F(AuditTamper, ChangingOneByteOfARecordIsNamedModifiedAtItsIndex) {
  TamperDb db(path_);
  std::string record = db.record(37);
  record[record.find("alice")] = 'A';
  db.set_record(37, record);
  expect_tampering(TamperKind::modified, 37);
}

TEST_F(AuditTamper, AnySingleByteChangeIsNamedModifiedAtItsIndex) {
  // Every byte position class: keys, digits of "index", the "prev" hash, punctuation.
  std::mt19937 random(6962);
  const std::string original_path = dir_.file("original.db");
  std::filesystem::copy_file(path_, original_path);
  for (int trial = 0; trial < 40; ++trial) {
    std::filesystem::copy_file(original_path, path_, std::filesystem::copy_options::overwrite_existing);
    std::int64_t idx = std::uniform_int_distribution<std::int64_t>(0, kRecords - 1)(random);
    TamperDb db(path_);
    std::string record = db.record(idx);
    std::size_t offset = std::uniform_int_distribution<std::size_t>(0, record.size() - 1)(random);
    record[offset] = static_cast<char>(record[offset] ^ (1 << (trial % 7)));
    db.set_record(idx, record);
    SCOPED_TRACE("record " + std::to_string(idx) + " byte " + std::to_string(offset));
    expect_tampering(TamperKind::modified, static_cast<std::uint64_t>(idx));
  }
}

// The careful attacker also rewrites the stored leaf hash. Record 36 completes no subtree, so
// only record 37's prev points back at it; record 37 completes node(36, 37) itself.
TEST_F(AuditTamper, AModifiedRecordWithItsStoredHashRewrittenIsStillNamed) {
  TamperDb db(path_);
  std::string record = db.record(36);
  record.replace(record.find("user:alice"), 10, "user:mallo");
  db.set_record_and_leaf(36, record);
  expect_tampering(TamperKind::modified, 36);
}

TEST_F(AuditTamper, AModifiedOddRecordWithItsStoredHashRewrittenIsStillNamed) {
  TamperDb db(path_);
  std::string record = db.record(37);
  record.replace(record.find("user:alice"), 10, "user:mallo");
  db.set_record_and_leaf(37, record);
  expect_tampering(TamperKind::modified, 37);
}

TEST_F(AuditTamper, TheLastRecordRewrittenWithEveryStoredHashStillFailsTheSignedRoot) {
  // The thorough attacker: new content, new leaf hash, new stored subtree hashes. Only the
  // signed checkpoint at 100 stands in the way; the finding names the range since size 75.
  TamperDb db(path_);
  std::string record = db.record(99);
  record.replace(record.find("user:alice"), 10, "user:mallo");
  db.set_record_and_leaf(99, record);
  // Recompute the subtrees record 99 completes (heights 1 and 2: leaves 98..99 and 96..99).
  auto leaf_of = [&](int i) {
    std::string stored = db.blob("SELECT leaf_hash FROM records WHERE idx = ?1", i);
    Hash h{};
    std::copy(stored.begin(), stored.end(), h.begin());
    return h;
  };
  Hash h1 = node_hash(leaf_of(98), leaf_of(99));
  Hash h2 = node_hash(node_hash(leaf_of(96), leaf_of(97)), h1);
  std::string subtrees(reinterpret_cast<const char*>(h1.data()), 32);
  subtrees.append(reinterpret_cast<const char*>(h2.data()), 32);
  db.set_blob("UPDATE records SET subtree_hashes = ?1 WHERE idx = ?2", 99, subtrees);
  auto report = expect_tampering(TamperKind::modified, 75);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().checkpoint_size, 100u);
}

TEST_F(AuditTamper, DeletingARowIsNamedMissing) {
  TamperDb(path_).exec("DELETE FROM records WHERE idx = 40");
  expect_tampering(TamperKind::missing, 40);
}

TEST_F(AuditTamper, DeletingARowAndRenumberingTheRestIsNamedMissing) {
  TamperDb db(path_);
  db.exec("DELETE FROM records WHERE idx = 40");
  db.shift_rows_from(41, -1);
  expect_tampering(TamperKind::missing, 40);
}

TEST_F(AuditTamper, InsertingACopiedRowIsNamedInserted) {
  TamperDb db(path_);
  db.shift_rows_from(30, +1);
  db.exec("INSERT INTO records(idx, record, leaf_hash, subtree_hashes) "
          "SELECT 30, record, leaf_hash, subtree_hashes FROM records WHERE idx = 10");
  expect_tampering(TamperKind::inserted, 30);
}

TEST_F(AuditTamper, InsertingACopyOfALaterRowIsNamedInserted) {
  TamperDb db(path_);
  db.shift_rows_from(30, +1);
  db.exec("INSERT INTO records(idx, record, leaf_hash, subtree_hashes) "
          "SELECT 30, record, leaf_hash, subtree_hashes FROM records WHERE idx = 61");
  expect_tampering(TamperKind::inserted, 30);
}

TEST_F(AuditTamper, InsertingAForgedRecordThatClaimsThePositionIsNamedInserted) {
  // A forged record 30 with the right index; its prev cannot be right for both neighbours.
  TamperDb db(path_);
  std::string forged = db.record(30);
  forged.replace(forged.find("user:alice"), 10, "user:mallo");
  db.shift_rows_from(30, +1);
  db.exec("INSERT INTO records(idx, record, leaf_hash, subtree_hashes) VALUES (30, x'00', x'00', x'')");
  db.set_record_and_leaf(30, forged);
  // Positions 30 and 31 both look like record 30; removing the forged one restores the root
  // signed at 50, which is how verify tells them apart.
  expect_tampering(TamperKind::inserted, 30);
}

TEST_F(AuditTamper, AppendingACopyAtTheEndIsNamedInserted) {
  TamperDb(path_).exec(
      "INSERT INTO records(idx, record, leaf_hash, subtree_hashes) "
      "SELECT 100, record, leaf_hash, subtree_hashes FROM records WHERE idx = 99");
  expect_tampering(TamperKind::inserted, 100);
}

TEST_F(AuditTamper, SwappingTwoRecordsIsNamedReordered) {
  TamperDb db(path_);
  std::string a = db.record(20), b = db.record(60);
  db.set_record(20, b);
  db.set_record(60, a);
  expect_tampering(TamperKind::reordered, 20);
}

TEST_F(AuditTamper, SwappingTwoAdjacentRowsWithTheirHashesIsNamedReordered) {
  TamperDb db(path_);
  db.exec("UPDATE records SET idx = -1 WHERE idx = 44");
  db.exec("UPDATE records SET idx = 44 WHERE idx = 45");
  db.exec("UPDATE records SET idx = 45 WHERE idx = -1");
  expect_tampering(TamperKind::reordered, 44);
}

TEST_F(AuditTamper, DroppingTheLastRecordsIsNamedTruncated) {
  TamperDb(path_).exec("DELETE FROM records WHERE idx >= 97");
  auto report = expect_tampering(TamperKind::truncated, 97);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().checkpoint_size, 100u);
}

TEST_F(AuditTamper, DroppingRecordsAndTheirCheckpointNeedsATrustedCheckpoint) {
  CheckpointWithKey trusted = trusted_checkpoint();  // kept by the verifier at size 100
  TamperDb db(path_);
  db.exec("DELETE FROM records WHERE idx >= 80");
  db.exec("DELETE FROM checkpoints WHERE size > 75");
  // On its own the log is a consistent prefix: nothing in it can tell. Verify says so only
  // through the unsigned tail (75..79 are no longer covered).
  auto alone = verify_path(path_);
  EXPECT_TRUE(alone.intact()) << findings_text(alone);
  EXPECT_EQ(alone.unsigned_records(), 5u);
  VerifyOptions options;
  options.trusted = trusted;
  auto report = expect_tampering(TamperKind::truncated, 80, options);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().checkpoint_size, 100u);
}

TEST_F(AuditTamper, RollingBackToAnOlderCopyIsNamedTruncated) {
  ScratchDir other;
  std::string old_copy = other.file("old.db");
  std::filesystem::copy_file(path_, old_copy);  // the log at 100 records
  {
    auto log = AuditLog::open(path_);
    ASSERT_TRUE(log);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE((*log)->append(sample_fields(1000 + i)));
  }
  CheckpointWithKey trusted = trusted_checkpoint();  // at 120
  std::filesystem::copy_file(old_copy, path_, std::filesystem::copy_options::overwrite_existing);
  VerifyOptions options;
  options.trusted = trusted;
  expect_tampering(TamperKind::truncated, 100, options);
}

TEST_F(AuditTamper, ReplacingACheckpointRootIsNamedBadSignature) {
  TamperDb db(path_);
  json body = json::parse(db.checkpoint_body(50));
  body["root"] = std::string(64, 'f');
  std::string signature = db.blob("SELECT signature FROM checkpoints WHERE size = ?1", 50);
  db.set_checkpoint(50, body.dump(), signature);
  auto report = expect_tampering(TamperKind::bad_signature, std::nullopt);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().checkpoint_size, 50u);
}

TEST_F(AuditTamper, ReplacingACheckpointWithAnOlderGenuineOneIsNamed) {
  TamperDb db(path_);
  std::string body = db.checkpoint_body(75);
  std::string signature = db.blob("SELECT signature FROM checkpoints WHERE size = ?1", 75);
  db.set_checkpoint(100, body, signature);
  auto report = expect_tampering(TamperKind::inconsistent, std::nullopt);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().checkpoint_size, 100u);
}

TEST_F(AuditTamper, ReSigningACheckpointWithAnotherKeyIsNamedBadSignature) {
  // The attacker edits record 30 and signs a checkpoint over the edited log with a key of their
  // own; they cannot sign with the log's key.
  TamperDb db(path_);
  std::string record = db.record(30);
  record.replace(record.find("user:alice"), 10, "user:mallo");
  db.set_record_and_leaf(30, record);
  auto attacker = SigningKey::generate();
  ASSERT_TRUE(attacker);
  Checkpoint forged = *parse_checkpoint_body(db.checkpoint_body(50));
  forged.root = Hash{};  // whatever root the attacker computed
  auto signed_forgery = sign_checkpoint(forged, *attacker);
  db.set_checkpoint(50, signed_forgery->body, signature_bytes(signed_forgery->signature));
  auto report = expect_tampering(TamperKind::bad_signature, std::nullopt);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().checkpoint_size, 50u);
  // Record 30 is still caught by the other checkpoints' roots and the chain.
  bool modified_named = false;
  for (const auto& f : report.findings) modified_named |= f.kind == TamperKind::modified && f.index == 30u;
  EXPECT_TRUE(modified_named) << findings_text(report);
}

TEST_F(AuditTamper, ReKeyingTheWholeLogIsCaughtByTheKeyFileOrATrustedCheckpoint) {
  CheckpointWithKey trusted = trusted_checkpoint();
  PublicKey real_key = trusted.key;
  // Replace the public key in the log and re-sign every checkpoint with the attacker's key.
  auto attacker = SigningKey::generate();
  TamperDb db(path_);
  db.exec("UPDATE meta SET value = '" + attacker->public_key().hex() + "' WHERE key = 'public_key'");
  for (std::int64_t size : {25, 50, 75, 100}) {
    auto resigned = sign_checkpoint(*parse_checkpoint_body(db.checkpoint_body(size)), *attacker);
    db.set_checkpoint(size, resigned->body, signature_bytes(resigned->signature));
  }
  // Trusting only the file, nothing is wrong: the file is all the attacker had to change.
  EXPECT_TRUE(verify_path(path_).intact());
  VerifyOptions with_key_file;
  with_key_file.expected_key = real_key;
  expect_tampering(TamperKind::bad_signature, std::nullopt, with_key_file);
  VerifyOptions with_trusted;
  with_trusted.trusted = trusted;
  auto report = expect_tampering(TamperKind::bad_signature, std::nullopt, with_trusted);
  EXPECT_GE(report.findings.size(), 5u);  // the key, and all four checkpoints
}

TEST_F(AuditTamper, RewritingAndReSigningWithTheRealKeyIsCaughtByATrustedCheckpoint) {
  // The insider with the key rebuilds the log with record 10 changed. Only a checkpoint the
  // verifier kept from before can tell.
  CheckpointWithKey trusted = trusted_checkpoint();
  std::string origin = trusted.signed_checkpoint.checkpoint.origin;
  std::filesystem::remove(path_);
  AuditLogOptions options;
  options.origin = origin;
  options.checkpoint_every_records = 25;
  {
    auto log = AuditLog::open(path_, options);  // the existing key file is reused
    ASSERT_TRUE(log) << log.error().message;
    for (std::uint64_t i = 0; i < kRecords; ++i) {
      json fields = sample_fields(i);
      if (i == 10) fields["principal"] = "user:mallory";
      ASSERT_TRUE((*log)->append(fields));
    }
  }
  EXPECT_TRUE(verify_path(path_).intact());
  VerifyOptions with_trusted;
  with_trusted.trusted = trusted;
  auto report = expect_tampering(TamperKind::modified, std::nullopt, with_trusted);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().checkpoint_size, 100u);
}

TEST_F(AuditTamper, CorruptingAStoredTreeNodeIsNamed) {
  // Not a record change, but proofs served from the node would fail: verify names the row.
  TamperDb db(path_);
  std::string subtrees = db.blob("SELECT subtree_hashes FROM records WHERE idx = ?1", 63);
  ASSERT_EQ(subtrees.size(), 6u * 32u);
  subtrees[100] = static_cast<char>(subtrees[100] ^ 1);
  db.set_blob("UPDATE records SET subtree_hashes = ?1 WHERE idx = ?2", 63, subtrees);
  expect_tampering(TamperKind::modified, 63);
}
