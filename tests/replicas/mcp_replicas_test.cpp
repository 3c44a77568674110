// Issue #38: MCP sessions behind several replicas (storage.postgres). A session opened on one
// replica was "not found" on every other, so clients behind a load balancer (the Service of
// deploy/kubernetes-postgres/) failed at their second request. Now the sessions are in the
// shared database: any replica serves them, one closed through any replica is closed on all,
// and another principal still cannot use one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "mcp_test_support.hpp"
#include "replica_process.hpp"

namespace airlock::replicas_test {
namespace {

using nlohmann::json;
using server::test::kOtherKey;
using server::test::mcp_post;
using server::test::open_session;
using server::test::rpc;
using server::test::session_headers;

const std::string kRevision = "2025-11-25";

class McpReplicas : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto* ws : {&a_ws_, &b_ws_}) {
      *ws = std::make_unique<Workspace>();
      to_postgres(**ws, db_.url, db_.key_file);
    }
    a_.emplace(*a_ws_, 46000);
    b_.emplace(*b_ws_, 47000);
    ASSERT_TRUE(a_->serving()) << a_->log();
    ASSERT_TRUE(b_->serving()) << b_->log();
  }
  Shared db_;
  std::unique_ptr<Workspace> a_ws_, b_ws_;
  std::optional<Replica> a_, b_;
};

TEST_F(McpReplicas, ASessionOpenedOnAIsServedAndClosedThroughB) {
  const std::string id = open_session(a_->port, kRevision);
  ASSERT_FALSE(id.empty()) << a_->log();
  EXPECT_EQ(db_.count("SELECT count(*) FROM mcp_sessions"), 1u);
  EXPECT_EQ(db_.count("SELECT count(*) FROM mcp_sessions WHERE id_sha256 = '" + id + "'"), 0u) << "kept hashed";

  auto listed = mcp_post(b_->port, rpc(2, "tools/list"), server::test::kKey, session_headers(id, kRevision));
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_NE(listed.body.find("\"echo\""), std::string::npos) << listed.body;
  auto called = mcp_post(b_->port, rpc(3, "tools/call", {{"name", "echo"}, {"arguments", {{"n", 1}}}}),
                         server::test::kKey, session_headers(id, kRevision));
  ASSERT_EQ(called.status, 200) << called.body;
  EXPECT_NE(called.body.find("structuredContent"), std::string::npos) << called.body;
  // Back on A, and on B again: one session, whichever replica answers.
  EXPECT_EQ(mcp_post(a_->port, rpc(4, "ping"), server::test::kKey, session_headers(id, kRevision)).status, 200);
  EXPECT_EQ(mcp_post(b_->port, rpc(5, "ping"), server::test::kKey, session_headers(id, kRevision)).status, 200);

  // Another principal cannot use it through either replica.
  EXPECT_EQ(mcp_post(b_->port, rpc(6, "ping"), kOtherKey, session_headers(id, kRevision)).status, 404);
  EXPECT_EQ(mcp_post(a_->port, rpc(7, "ping"), kOtherKey, session_headers(id, kRevision)).status, 404);

  // Closed through B: gone on A too, and from the table.
  auto ended = server::test::http_with(b_->port, "DELETE", "/mcp", "", server::test::kKey, session_headers(id, kRevision));
  EXPECT_EQ(ended.status, 204) << ended.body;
  EXPECT_EQ(mcp_post(a_->port, rpc(8, "ping"), server::test::kKey, session_headers(id, kRevision)).status, 404);
  EXPECT_EQ(mcp_post(b_->port, rpc(9, "ping"), server::test::kKey, session_headers(id, kRevision)).status, 404);
  EXPECT_EQ(db_.count("SELECT count(*) FROM mcp_sessions"), 0u);
}

// A client that declared URL-mode elicitation is recorded so in the shared book (a replica that
// adopts the session shows its critical tasks' approval pages); one that did not is not.
TEST_F(McpReplicas, TheBookKeepsWhetherTheClientTakesUrlElicitations) {
  const auto opened = mcp_post(a_->port, rpc(1, "initialize", {{"protocolVersion", kRevision},
                                                             {"capabilities", {{"elicitation", {{"url", json::object()}}}}},
                                                             {"clientInfo", {{"name", "test"}, {"version", "1"}}}}));
  ASSERT_EQ(opened.status, 200) << opened.body;
  ASSERT_FALSE(open_session(a_->port, kRevision).empty());
  EXPECT_EQ(db_.count("SELECT count(*) FROM mcp_sessions"), 2u);
  EXPECT_EQ(db_.count("SELECT count(*) FROM mcp_sessions WHERE elicits_urls"), 1u);
  const auto id = opened.headers.at("mcp-session-id");
  EXPECT_EQ(mcp_post(b_->port, rpc(2, "ping"), server::test::kKey, session_headers(id, kRevision)).status, 200)
      << "adopted by B";
}

// The official SDK client behind a proxy that sends each request to the next replica in turn:
// initialize, listings, calls and the GET stream land on both, and every one is served.
TEST_F(McpReplicas, TheSdkClientBehindARoundRobinProxyKeepsItsSession) {
  const std::string command = std::string(AIRLOCK_NODE_BIN) + " " + MCP_CLIENTS_DIR + "/sdk_round_robin.mjs " +
                              std::to_string(a_->port) + " " + std::to_string(b_->port) + " " + server::test::kKey;
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "see the client's output above";
}

// The database away: a session cannot be opened (503, saying why), and none is half-made.
TEST_F(McpReplicas, ASessionTheDatabaseCannotRecordIsNotOpened) {
  cluster().stop_server();
  auto r = mcp_post(a_->port, rpc(1, "initialize", {{"protocolVersion", kRevision},
                                                    {"capabilities", json::object()},
                                                    {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.headers.count("mcp-session-id"), 0u);
  EXPECT_NE(r.body.find("MCP sessions"), std::string::npos) << r.body;
  ASSERT_TRUE(cluster().restart_server());
}

}  // namespace
}  // namespace airlock::replicas_test
