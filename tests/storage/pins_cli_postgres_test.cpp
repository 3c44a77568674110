// `airlock mcp pins list|approve --config FILE` with storage.postgres: the real binary reads
// and writes the pins of the database the config names (what the replicas share), and never
// prints the URL's password.
#include <gtest/gtest.h>

#include <fstream>

#include "../audit/cli_runner.hpp"
#include "mcp/pin_store.hpp"
#include "state_store_support.hpp"

namespace airlock::mcp {
namespace {

using audit::testing::CommandResult;
using audit::testing::run_command;

const std::string kOld(64, 'a'), kNew(64, 'b');

TEST(PinsCliOnPostgres, ListsAndApprovesThePinsOfTheConfiguredDatabase) {
  test::PostgresState state;
  test::StateScratchDir dir;
  const auto location = state.location();
  {
    auto store = PinStore::open(location);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE(*(*store)->pin_if_new("files", "read", kOld));
    ASSERT_TRUE((*store)->record_pending("files", "read", kNew, {{"name", "read"}}));
  }
  const std::string config = dir.file("airlock.yaml");
  std::ofstream(config) << "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
                        << "storage:\n  dataDir: " << dir.file("data") << "\n"
                        << "  signingKeyFile: " << dir.file("audit.key") << "\n"
                        << "  tokenKeyFile: " << dir.file("token.key") << "\n"
                        << "  postgres:\n    url: \"" << location.postgres.url << "\"\n"
                        << "tools:\n  - name: echo\n    runtime: {type: command, command: [/bin/cat]}\n";
  auto airlock = [&](const std::vector<std::string>& args) {
    return run_command(AIRLOCK_BINARY, args, dir.file("stdout"), dir.file("stderr"));
  };
  CommandResult listed = airlock({"mcp", "pins", "list", "--config", config, "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto pins = nlohmann::json::parse(listed.out, nullptr, false);
  ASSERT_EQ(pins["pins"].size(), 1u) << listed.out;
  EXPECT_EQ(pins["pins"][0]["pending"]["sha256"], kNew);

  CommandResult wrong = airlock({"mcp", "pins", "approve", "files", "read", "--sha256", kOld, "--config", config});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out << wrong.err;
  EXPECT_NE(wrong.err.find("pin_mismatch"), std::string::npos) << wrong.err;
  CommandResult approved = airlock({"mcp", "pins", "approve", "files", "read", "--sha256", kNew, "--config", config});
  EXPECT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  for (const auto& r : {listed, wrong, approved})
    EXPECT_EQ((r.out + r.err).find(test::kStatePassword), std::string::npos) << "the password was printed";

  auto store = PinStore::open(location);
  ASSERT_TRUE(store);
  EXPECT_EQ((*store)->get("files", "read")->sha256, kNew) << "the database's pin is the approved one";
  EXPECT_FALSE(std::filesystem::exists(dir.file("data/state.db"))) << "no state.db was made";
}

}  // namespace
}  // namespace airlock::mcp
