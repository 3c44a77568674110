// `airlock audit verify|show|prove|export --config FILE` through the real binary, against the
// PostgreSQL store the configuration names; and a row rewritten in the database is caught.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../unit/audit_test_support.hpp"
#include "audit_pg_support.hpp"
#include "cli_runner.hpp"

namespace airlock::audit::testing {
namespace {

class AuditCliPostgres : public ::testing::Test {
 protected:
  void SetUp() override {
    location_ = fresh_postgres_log(dir_.file("audit.key"));
    config_ = dir_.file("airlock.yaml");
    std::ofstream(config_) << "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
                           << "storage:\n  dataDir: " << dir_.file("data") << "\n"
                           << "  signingKeyFile: " << location_.key_file << "\n"
                           << "  tokenKeyFile: " << dir_.file("token.key") << "\n"
                           << "  postgres:\n    url: \"" << location_.postgres_url << "\"\n"
                           << "tools:\n  - name: echo\n    runtime: {type: command, command: [/bin/cat]}\n";
    auto log = AuditLog::open(location_);
    ASSERT_TRUE(log) << log.error().message;
    for (std::uint64_t i = 0; i < 12; ++i) ASSERT_TRUE((*log)->append(sample_fields(i)));
    ASSERT_TRUE((*log)->close());
  }

  CommandResult airlock(const std::vector<std::string>& args) {
    return run_command(AIRLOCK_BINARY, args, dir_.file("stdout"), dir_.file("stderr"));
  }

  ScratchDir dir_;
  LogLocation location_;
  std::string config_;
};

TEST_F(AuditCliPostgres, VerifyShowProveAndExportReadTheConfiguredDatabase) {
  auto verified = airlock({"audit", "verify", "--config", config_});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_NE(verified.out.find("ok: postgresql://"), std::string::npos) << verified.out;
  EXPECT_NE(verified.out.find("12 records"), std::string::npos) << verified.out;
  EXPECT_EQ(verified.out.find(kLogPassword), std::string::npos) << "the password was printed";

  auto shown = airlock({"audit", "show", "--config", config_, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(nlohmann::json::parse(shown.out).size(), 12u);

  auto proof = airlock({"audit", "prove", "--config", config_, "4"});
  ASSERT_EQ(proof.exit_code, 0) << proof.err;
  EXPECT_TRUE(verify_record_proof(nlohmann::json::parse(proof.out)));

  auto exported = airlock({"audit", "export", "--config", config_, "--jsonl"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(std::count(exported.out.begin(), exported.out.end(), '\n'), 12);
}

TEST_F(AuditCliPostgres, ARowRewrittenInTheDatabaseIsReported) {
  auto edited = cluster().exec(
      "UPDATE audit_records SET record = convert_to(replace(convert_from(record, 'UTF8'), "
      "'alice', 'mallo'), 'UTF8') WHERE idx = 5",
      database_of(location_));
  ASSERT_TRUE(edited) << edited.error().message;
  auto result = airlock({"audit", "verify", "--config", config_});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.out.find("TAMPERED"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("modified at index 5"), std::string::npos) << result.out;
}

TEST_F(AuditCliPostgres, PathAndConfigTogetherOrNeitherIsAUsageError) {
  EXPECT_EQ(airlock({"audit", "verify", dir_.file("x.db"), "--config", config_}).exit_code, 2);
  EXPECT_EQ(airlock({"audit", "verify"}).exit_code, 2);
  EXPECT_EQ(airlock({"audit", "verify", "--config", dir_.file("missing.yaml")}).exit_code, 2);
}

}  // namespace
}  // namespace airlock::audit::testing
