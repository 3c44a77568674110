// `airlock audit` and `airlock run --audit` through the real binary: exit codes 0/1/2, what
// each subcommand prints, and a proof checked by an independent verifier (Python + openssl).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audit/hash.hpp"
#include "audit/merkle.hpp"
#include "../unit/audit_test_support.hpp"
#include "cli_runner.hpp"

using namespace airlock::audit;
using namespace airlock::audit::testing;
using nlohmann::json;

namespace {

class AuditCli : public ::testing::Test {
 protected:
  CommandResult airlock(const std::vector<std::string>& args) { return run(AIRLOCK_BINARY, args); }

  CommandResult run(const std::string& program, const std::vector<std::string>& args) {
    return run_command(program, args, dir_.file("stdout"), dir_.file("stderr"));
  }

  void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

  void edit(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(log_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(db);
  }

  void SetUp() override {
    log_ = dir_.file("audit.db");
    write_sample_log(log_, 12);
  }

  ScratchDir dir_;
  std::string log_;
};

}  // namespace

TEST_F(AuditCli, VerifyExitsZeroOnAGoodLog) {
  auto result = airlock({"audit", "verify", log_});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("ok: "), std::string::npos) << result.out;
  auto as_json = airlock({"audit", "verify", log_, "--json"});
  EXPECT_EQ(as_json.exit_code, 0);
  EXPECT_EQ(json::parse(as_json.out)["records"], 12);
}

TEST_F(AuditCli, VerifyExitsOneAndNamesTheFirstBadIndex) {
  edit("UPDATE records SET record = replace(record, 'alice', 'mallo') WHERE idx = 5");
  auto result = airlock({"audit", "verify", log_});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.out.find("TAMPERED"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("modified at index 5"), std::string::npos) << result.out;
  auto as_json = json::parse(airlock({"audit", "verify", log_, "--json"}).out);
  EXPECT_EQ(as_json["findings"][0]["kind"], "modified");
  EXPECT_EQ(as_json["findings"][0]["index"], 5);
}

TEST_F(AuditCli, VerifyExitsTwoWhenItCannotRead) {
  EXPECT_EQ(airlock({"audit", "verify", dir_.file("missing.db")}).exit_code, 2);
  write(dir_.file("junk.db"), "this is not a database\n");
  EXPECT_EQ(airlock({"audit", "verify", dir_.file("junk.db")}).exit_code, 2);
  write(dir_.file("bad-trusted.json"), "{\"checkpoint\": 1}");
  EXPECT_EQ(airlock({"audit", "verify", log_, "--trusted", dir_.file("bad-trusted.json")}).exit_code, 2);
  EXPECT_EQ(airlock({"audit", "verify"}).exit_code, 2);  // usage
}

TEST_F(AuditCli, VerifyWithATrustedCheckpointCatchesTruncation) {
  auto checkpoint = airlock({"audit", "checkpoint", log_});
  ASSERT_EQ(checkpoint.exit_code, 0) << checkpoint.err;
  write(dir_.file("trusted.json"), checkpoint.out);
  EXPECT_EQ(airlock({"audit", "verify", log_, "--trusted", dir_.file("trusted.json")}).exit_code, 0);
  edit("DELETE FROM records WHERE idx >= 9");
  edit("DELETE FROM checkpoints WHERE size > 9");
  EXPECT_EQ(airlock({"audit", "verify", log_}).exit_code, 0);  // a consistent prefix on its own
  auto result = airlock({"audit", "verify", log_, "--trusted", dir_.file("trusted.json")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.out.find("truncated at index 9"), std::string::npos) << result.out;
}

TEST_F(AuditCli, VerifyCatchesAReSignedLogThroughTheKeyFile) {
  auto attacker = SigningKey::generate();
  edit("UPDATE meta SET value = '" + attacker->public_key().hex() + "' WHERE key = 'public_key'");
  auto result = airlock({"audit", "verify", log_});
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_NE(result.out.find("bad_signature"), std::string::npos) << result.out;
}

TEST_F(AuditCli, ProveOutputIsCheckedByAnIndependentVerifier) {
  auto key = json::parse(airlock({"audit", "key", log_, "--json"}).out);
  for (int index : {0, 5, 11}) {
    auto proof = airlock({"audit", "prove", log_, std::to_string(index)});
    ASSERT_EQ(proof.exit_code, 0) << proof.err;
    write(dir_.file("proof.json"), proof.out);
    auto check = run(THIRD_PARTY_VERIFY, {dir_.file("proof.json"), key["public_key"]});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    // The same verifier rejects the document once anything in it changes.
    auto doc = json::parse(proof.out);
    doc["record"] = doc["record"].get<std::string>().replace(doc["record"].get<std::string>().find("alice"), 5, "mallo");
    write(dir_.file("forged.json"), doc.dump());
    auto forged = run(THIRD_PARTY_VERIFY, {dir_.file("forged.json"), key["public_key"]});
    EXPECT_EQ(forged.exit_code, 1) << forged.out;
  }
  auto other_key = SigningKey::generate();
  auto wrong_pin = run(THIRD_PARTY_VERIFY, {dir_.file("proof.json"), other_key->public_key().hex()});
  EXPECT_EQ(wrong_pin.exit_code, 1);
  EXPECT_EQ(airlock({"audit", "prove", log_, "12"}).exit_code, 2);  // no such record
}

TEST_F(AuditCli, ShowAndExport) {
  auto text = airlock({"audit", "show", log_, "--from", "10"});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_EQ(text.out.find("#9 "), std::string::npos);
  EXPECT_NE(text.out.find("#10 "), std::string::npos);
  EXPECT_NE(text.out.find("#11 "), std::string::npos);
  auto as_json = json::parse(airlock({"audit", "show", log_, "--json"}).out);
  ASSERT_EQ(as_json.size(), 12u);
  EXPECT_EQ(as_json[3]["index"], 3);

  // export --jsonl: the leaf hashes of the lines rebuild the signed root.
  auto exported = airlock({"audit", "export", log_, "--jsonl"});
  ASSERT_EQ(exported.exit_code, 0);
  MerkleFrontier frontier;
  std::istringstream lines(exported.out);
  for (std::string line; std::getline(lines, line);) frontier.append(leaf_hash(as_bytes(line)));
  EXPECT_EQ(frontier.size(), 12u);
  auto verified = json::parse(airlock({"audit", "verify", log_, "--json"}).out);
  EXPECT_EQ(to_hex(frontier.root()), verified["root"]);
  EXPECT_EQ(airlock({"audit", "export", log_}).exit_code, 2);  // --jsonl is the only format
}

TEST_F(AuditCli, KeyPrintsThePublicKeyThatVerifiesCheckpoints) {
  auto pem = airlock({"audit", "key", log_});
  ASSERT_EQ(pem.exit_code, 0);
  EXPECT_NE(pem.out.find("-----BEGIN PUBLIC KEY-----"), std::string::npos);
  auto key = json::parse(airlock({"audit", "key", log_, "--json"}).out);
  auto checkpoint = json::parse(airlock({"audit", "checkpoint", log_}).out);
  EXPECT_EQ(checkpoint["public_key"], key["public_key"]);
  EXPECT_EQ(airlock({"audit", "key", dir_.file("none.db")}).exit_code, 2);
}

TEST_F(AuditCli, RunAppendsOneRecordPerRun) {
  std::string runs = dir_.file("runs.db");
  auto first = airlock({"run", "--audit", runs, "--", "true"});
  if (first.exit_code == 125 && first.err.find("--audit") == std::string::npos)
    GTEST_SKIP() << "the sandbox cannot run here: " << first.err;
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto second = airlock({"run", "--audit", runs, "--json", "--", "sh", "-c", "echo hi; exit 3"});
  EXPECT_EQ(second.exit_code, 3);
  auto records = json::parse(airlock({"audit", "show", runs, "--json"}).out);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["command"], json::array({"true"}));
  EXPECT_EQ(records[0]["verdict"], "ok");
  EXPECT_EQ(records[1]["verdict"], "exit_nonzero");
  EXPECT_EQ(records[1]["exit"]["code"], 3);
  EXPECT_EQ(records[1]["output"]["sha256"], to_hex(sha256("hi\n")));
  EXPECT_EQ(airlock({"audit", "verify", runs}).exit_code, 0);
}

TEST_F(AuditCli, RunDoesNotRunWhenTheAuditLogCannotBeWritten) {
  auto result = airlock({"run", "--audit", dir_.file("no/such/dir/audit.db"), "--", "echo",
                         "this-ran-unrecorded"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_NE(result.err.find("--audit"), std::string::npos) << result.err;
  EXPECT_EQ(result.out.find("this-ran-unrecorded"), std::string::npos) << result.out;
}
