// The daemon with storage.postgres: its audit log is the database's. Two daemons (two data
// directories, one database, one key file) record their calls in one log that verifies, and
// neither writes an audit.db of its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "audit/log_reader.hpp"
#include "audit/verify.hpp"
#include "../unit/audit_test_support.hpp"
#include "audit_pg_support.hpp"
#include "server_test_support.hpp"

namespace airlock::audit::testing {
namespace {

using server::test::RunningDaemon;
using server::test::Workspace;

// The workspace's config with its storage block pointed at the shared database.
void use_postgres(const Workspace& ws, const LogLocation& location) {
  std::string text = ws.config_text();
  const std::string sqlite_block = "storage: {dataDir: data, checkpointEvery: 100}";
  auto at = text.find(sqlite_block);
  ASSERT_NE(at, std::string::npos) << "the test workspace's storage block changed";
  text.replace(at, sqlite_block.size(),
               "storage: {dataDir: data, checkpointEvery: 100, signingKeyFile: \"" +
                   location.key_file + "\", tokenKeyFile: \"" + location.key_file + ".token\", postgres: {url: \"" +
                   location.postgres_url + "\"}}");
  ws.write_config(text);
}

TEST(DaemonOnPostgres, TwoDaemonsRecordTheirCallsInOneLog) {
  Workspace a_ws, b_ws;
  LogLocation location = fresh_postgres_log(a_ws.dir() + "/shared-audit.key");
  use_postgres(a_ws, location);
  use_postgres(b_ws, location);
  RunningDaemon a(a_ws), b(b_ws);
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    callers.emplace_back([&, i] {
      auto reply = server::test::invoke(i % 2 ? a.port : b.port, "echo", {{"n", i}});
      if (reply.status == 200) ++ok;
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(ok, 6);
  EXPECT_FALSE(std::filesystem::exists(a_ws.audit_path()));
  EXPECT_FALSE(std::filesystem::exists(b_ws.audit_path()));

  // Each daemon's own verify endpoint reads the shared log.
  auto verified = server::test::http(a.port, "GET", "/v1/audit/verify").json();
  EXPECT_EQ(verified["intact"], true) << verified;
  auto reader = LogReader::open(location);
  ASSERT_TRUE(reader) << reader.error().message;
  std::set<std::string> tools;
  ASSERT_TRUE(reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
    auto record = nlohmann::json::parse(text);
    if (record.contains("tool")) tools.insert(record["tool"].get<std::string>());
    return true;
  }));
  EXPECT_EQ(*reader->size(), 6u) << "one record per call, from both daemons";
  EXPECT_EQ(tools, std::set<std::string>{"echo"});
  auto report = verify_log(*reader);
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->intact()) << findings_text(*report);
}

// The database holds the audit log: a tool whose rules allow every port of the host it runs on
// still cannot reach it through the egress proxy (a port of that host it may reach shows the
// rule itself lets the CONNECT through).
TEST(DaemonOnPostgres, NoToolReachesTheDatabaseThroughTheProxy) {
  Workspace ws("", R"(  - name: connect
    runtime: {type: python, file: tools/connect_through_proxy.py}
    network: {allow: ["127.0.0.1:*"]}
)");
  LogLocation location = fresh_postgres_log(ws.dir() + "/shared-audit.key");
  use_postgres(ws, location);
  RunningDaemon d(ws);
  auto connect_to = [&](std::uint16_t port) {
    auto reply = server::test::invoke(d.port, "connect", {{"port", port}});
    EXPECT_EQ(reply.status, 200) << reply.body;
    return reply.json()["output"].value("answer", "") + " " + reply.json()["egress"].dump();  // why
  };
  const std::string refused = connect_to(cluster().port());
  EXPECT_EQ(refused.rfind("HTTP/1.1 403", 0), 0u) << refused;
  server::test::Collector open_port;  // listens on loopback
  const std::string allowed = connect_to(open_port.port());
  EXPECT_EQ(allowed.rfind("HTTP/1.1 200", 0), 0u) << allowed;
}

}  // namespace
}  // namespace airlock::audit::testing
