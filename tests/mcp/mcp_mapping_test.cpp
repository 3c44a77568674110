// Pure parts of the MCP server: the session table, the task watch, tools/list entries, call
// results, and the server.mcp configuration.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "mcp_test_support.hpp"
#include "server/mcp_server/mcp_protocol.hpp"
#include "server/mcp_server/mcp_sessions.hpp"
#include "server/mcp_server/mcp_task_watch.hpp"
#include "server/mcp_server/mcp_tools.hpp"

namespace airlock::server::test {
namespace {

TEST(McpSessions, BoundToTheirPrincipalAndBounded) {
  McpSessions sessions(2);
  const auto a = *sessions.open("agent:a", "2025-11-25");
  const auto b = *sessions.open("agent:b", "2025-06-18");
  EXPECT_NE(a, b);
  EXPECT_EQ(sessions.revision(a, "agent:a"), "2025-11-25");
  EXPECT_FALSE(sessions.revision(a, "agent:b"));  // another principal: as if it did not exist
  EXPECT_FALSE(sessions.close(a, "agent:b"));
  (void)sessions.revision(a, "agent:a");          // a is now the more recently used
  const auto c = *sessions.open("agent:c", "2025-11-25");
  EXPECT_EQ(sessions.size(), 2u);
  EXPECT_FALSE(sessions.revision(b, "agent:b"));  // the one idle longest went
  EXPECT_TRUE(sessions.revision(a, "agent:a"));
  EXPECT_TRUE(sessions.close(c, "agent:c"));
  EXPECT_FALSE(sessions.revision(c, "agent:c"));
}

// The Airlock sessions an MCP session created end with it, closed or evicted; the first one
// running is its default workspace; one made for an MCP session that is gone is not kept.
TEST(McpSessions, TheirWorkspacesEndWithThemClosedOrEvicted) {
  McpSessions sessions(4, 1);
  std::vector<std::shared_ptr<LiveSession>> ended;
  std::vector<std::string> ended_ids;  // each MCP session that ended, its stream with it (issue #38)
  sessions.on_end([&](const std::string& id, std::vector<std::shared_ptr<LiveSession>> ending) {
    ended_ids.push_back(id);
    ended.insert(ended.end(), ending.begin(), ending.end());
  });
  auto made = [](const std::string& id) {
    auto s = std::make_shared<LiveSession>();
    s->id = id;
    return s;
  };
  const auto a = *sessions.open("agent:a", "2025-11-25");
  EXPECT_EQ(sessions.workspace(a, "agent:a"), nullptr);
  const auto first = made("s1"), second = made("s2");
  EXPECT_EQ(sessions.add_workspace(a, "agent:a", first), first);
  EXPECT_EQ(sessions.add_workspace(a, "agent:a", second), first);  // the default stays the first
  EXPECT_EQ(sessions.workspace(a, "agent:b"), nullptr);             // another principal's: none
  EXPECT_EQ(sessions.add_workspace(a, "agent:b", made("s3")), nullptr);
  EXPECT_TRUE(ended.empty());
  EXPECT_TRUE(sessions.close(a, "agent:a"));
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0], first);
  EXPECT_EQ(ended[1], second);
  EXPECT_EQ(ended_ids, std::vector<std::string>{a});

  ended.clear();
  const auto b = *sessions.open("agent:a", "2025-11-25");
  const auto third = made("s4");
  (void)sessions.add_workspace(b, "agent:a", third);
  (void)sessions.open("agent:a", "2025-11-25");  // its bound is 1: b is evicted
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], third);
  EXPECT_EQ(ended_ids, (std::vector<std::string>{a, b}));
  EXPECT_EQ(sessions.add_workspace(b, "agent:a", made("s5")), nullptr);  // gone: nothing keeps it
}

TEST(McpSessions, APrincipalAtItsBoundLosesItsOwnAndAFullTableTheLargestHolders) {
  McpSessions sessions(4, 2);
  const auto b = *sessions.open("agent:b", "2025-11-25");
  const auto a1 = *sessions.open("agent:a", "2025-11-25");
  const auto a2 = *sessions.open("agent:a", "2025-11-25");
  const auto a3 = *sessions.open("agent:a", "2025-11-25");  // a at its bound: a1 goes, not b
  EXPECT_FALSE(sessions.revision(a1, "agent:a"));
  EXPECT_TRUE(sessions.revision(b, "agent:b"));
  const auto c = *sessions.open("agent:c", "2025-11-25");
  (void)sessions.revision(a2, "agent:a");
  const auto d = *sessions.open("agent:d", "2025-11-25");  // full: a holds most, a3 idle longest
  EXPECT_EQ(sessions.size(), 4u);
  EXPECT_FALSE(sessions.revision(a3, "agent:a"));
  for (const auto& [id, who] : {std::pair{b, "agent:b"}, {a2, "agent:a"}, {c, "agent:c"}, {d, "agent:d"}})
    EXPECT_TRUE(sessions.revision(id, who)) << who;
}

// The task status notifications' watch (mcp_task_watch.hpp): bounded, each change told in
// order on its thread, an ended task let go, nothing told for a session that ended.
TEST(McpTaskWatch, WatchesAtMostItsCapTellsInOrderAndForgetsEndedTasksAndSessions) {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<McpTaskWatch::Change> told;
  McpTaskWatch watch([&](const McpTaskWatch::Change& change) {
    std::lock_guard lock(mu);
    told.push_back(change);
    changed.notify_all();
  });
  const auto now = McpTasks::Clock::now();
  for (std::size_t i = 0; i < McpTaskWatch::kMaxWatched; ++i)
    ASSERT_TRUE(watch.watch("t" + std::to_string(i), "s1", now));
  EXPECT_FALSE(watch.watch("more", "s1", now)) << "past the cap it is not watched: its client polls";
  watch.changed("more", {{"status", "ok"}});
  watch.changed("t0", {{"status", "running"}});
  watch.changed("t0", {{"status", "ok"}});
  EXPECT_EQ(watch.watched(), McpTaskWatch::kMaxWatched - 1) << "an ended task is let go";
  EXPECT_TRUE(watch.watch("more", "s1", now)) << "room again";
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return told.size() >= 2; }));
    ASSERT_EQ(told.size(), 2u);
    EXPECT_EQ(told[0].id, "t0");
    EXPECT_EQ(told[0].session, "s1");
    EXPECT_EQ(told[0].stored["status"], "running");
    EXPECT_EQ(told[1].stored["status"], "ok");
  }
  watch.forget_session("s1");
  EXPECT_EQ(watch.watched(), 0u) << "its session ended: nothing more is told of its tasks";
  watch.changed("t1", {{"status", "ok"}});
  EXPECT_EQ(watch.watched(), 0u);
}

// A session's end also drops what was queued for it and not yet told.
TEST(McpTaskWatch, ASessionsEndDropsItsQueuedChanges) {
  std::mutex mu;
  std::condition_variable changed;
  bool go = false;
  std::vector<std::string> told;
  McpTaskWatch watch([&](const McpTaskWatch::Change& change) {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return go; });  // the first delivery holds the thread
    told.push_back(change.id + " " + change.stored.value("status", ""));
    changed.notify_all();
  });
  const auto now = McpTasks::Clock::now();
  ASSERT_TRUE(watch.watch("held", "s0", now));
  ASSERT_TRUE(watch.watch("a", "s1", now));
  ASSERT_TRUE(watch.watch("b", "s2", now));
  watch.changed("held", {{"status", "ok"}});
  watch.changed("a", {{"status", "running"}});
  watch.changed("b", {{"status", "running"}});
  watch.forget_session("s1");  // "a"'s change waits behind "held"'s, whose delivery is held
  watch.changed("b", {{"status", "ok"}});
  std::unique_lock lock(mu);
  go = true;
  changed.notify_all();
  ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return told.size() >= 3; }));
  EXPECT_EQ(told, (std::vector<std::string>{"held ok", "b running", "b ok"}));
}

TEST(McpTaskWatch, TasksPastTheirTtlMakeRoomAtTheCap) {
  McpTaskWatch watch([](const McpTaskWatch::Change&) {});
  const auto long_ago = McpTasks::Clock::now() - McpTasks::kTtl - std::chrono::hours(1);
  for (std::size_t i = 0; i < McpTaskWatch::kMaxWatched; ++i)
    ASSERT_TRUE(watch.watch("old" + std::to_string(i), "s1", long_ago));
  EXPECT_TRUE(watch.watch("new", "s2", McpTasks::Clock::now())) << "a task past its ttl is not watched any more";
  EXPECT_EQ(watch.watched(), 1u);
  EXPECT_FALSE(watch.watch("sessionless", "", McpTasks::Clock::now())) << "a task of no session has nobody to tell";
}

TEST(McpTools, AnnotationsFollowRiskAndEgress) {
  policy::ToolConfig t;
  t.name = "fetch";
  t.risk = policy::Risk::critical;
  t.output_schema = nlohmann::json{{"required", {"x"}}};
  t.network.allow.emplace_back();
  auto e = mcp_tool_entry(t);
  EXPECT_EQ(e["annotations"]["readOnlyHint"], false);
  EXPECT_EQ(e["annotations"]["destructiveHint"], true);
  EXPECT_EQ(e["annotations"]["openWorldHint"], true);
  EXPECT_EQ(e["inputSchema"]["type"], "object");
  EXPECT_EQ(e["outputSchema"]["type"], "object");
  t.risk = policy::Risk::medium;
  t.network = {};
  e = mcp_tool_entry(t);
  EXPECT_EQ(e["annotations"]["readOnlyHint"], false);
  EXPECT_EQ(e["annotations"]["destructiveHint"], false);
  EXPECT_EQ(e["annotations"]["openWorldHint"], false);
}

TEST(McpTools, SuspendedCallNamesTheInvocationToPoll) {
  pipeline::Invocation inv;
  inv.id = "inv-123";
  inv.suspended = pipeline::Suspension{"approve", "a human must approve launch-codes", {}};
  auto r = mcp_call_result(nullptr, inv);
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["structuredContent"]["error"]["kind"], "suspended");
  EXPECT_EQ(r["structuredContent"]["invocationId"], "inv-123");
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("GET /v1/invocations/inv-123"), std::string::npos);
}

TEST(McpTools, GatewayToolResultsPassThroughAndSchemaToolsKeepErrorsOutOfStructuredContent) {
  policy::ToolConfig gateway;
  gateway.name = "files.read";
  gateway.mcp = policy::McpToolSource{"files", "read", "pin", ""};
  pipeline::Invocation inv;
  inv.output = nlohmann::json{{"content", {{{"type", "text"}, {"text", "hi"}}}}, {"isError", true}};
  auto r = mcp_call_result(&gateway, inv);
  EXPECT_EQ(r["content"][0]["text"], "hi");
  EXPECT_EQ(r["isError"], true);
  EXPECT_FALSE(r.contains("structuredContent"));
  // Ended tool_error (the pipeline's mark of an isError result): still the server's own result.
  inv.error = pipeline::fail(pipeline::ErrorKind::tool_error, "the tool answered with an error");
  r = mcp_call_result(&gateway, inv);
  EXPECT_EQ(r["content"][0]["text"], "hi");
  EXPECT_EQ(r["isError"], true);

  policy::ToolConfig typed;
  typed.output_schema = nlohmann::json{{"type", "object"}, {"required", {"answer"}}};
  pipeline::Invocation failed;
  failed.error = pipeline::fail(pipeline::ErrorKind::timeout, "it ran out of time");
  r = mcp_call_result(&typed, failed);
  EXPECT_EQ(r["isError"], true);
  EXPECT_FALSE(r.contains("structuredContent"));
  EXPECT_EQ(nlohmann::json::parse(r["content"][1]["text"].get<std::string>())["error"]["kind"], "timeout");
}

TEST(McpProtocol, HeaderValuesDecodeFromBase64) {
  EXPECT_EQ(mcp_protocol::decode_header_value("echo"), "echo");
  EXPECT_EQ(mcp_protocol::decode_header_value("=?base64?ZWNobw==?="), "echo");
  EXPECT_FALSE(mcp_protocol::decode_header_value("=?base64?***?="));
}

TEST(McpConfig, ServerMcpIsParsedAndChecked) {
  Workspace good("server: {listen: 127.0.0.1:0, mcp: {enabled: false, allowedOrigins: ['https://a.example:8443'], "
                 "resource: 'https://airlock.example/mcp'}}");
  auto config = good.config();
  EXPECT_FALSE(config.server.mcp.enabled);
  EXPECT_EQ(config.server.mcp.allowed_origins, std::vector<std::string>{"https://a.example:8443"});
  EXPECT_EQ(config.server.mcp.resource, "https://airlock.example/mcp");
  Workspace bad("server: {listen: 127.0.0.1:0, mcp: {allowedOrigins: ['https://a.example/path']}}");
  try {
    (void)bad.config();
    FAIL() << "an origin with a path was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("server.mcp.allowedOrigins: 'https://a.example/path' is not an origin"),
              std::string::npos) << e.what();
  }
}

// Issue #38: the first-listing wait and the page size, with their defaults and bounds.
TEST(McpConfig, FirstListingWaitAndPageSizeAreParsedAndBounded) {
  Workspace defaults("server: {listen: 127.0.0.1:0}");
  EXPECT_EQ(defaults.config().server.mcp.first_listing_wait, std::chrono::seconds(10));
  EXPECT_EQ(defaults.config().server.mcp.tools_page_size, 100u);
  Workspace set("server: {listen: 127.0.0.1:0, mcp: {firstListingWait: 2s, toolsPageSize: 7}}");
  EXPECT_EQ(set.config().server.mcp.first_listing_wait, std::chrono::seconds(2));
  EXPECT_EQ(set.config().server.mcp.tools_page_size, 7u);
  for (const std::string bad : {"firstListingWait: 11m", "toolsPageSize: 0", "toolsPageSize: 1001"}) {
    Workspace ws("server: {listen: 127.0.0.1:0, mcp: {" + bad + "}}");
    EXPECT_THROW((void)ws.config(), std::runtime_error) << bad << " was accepted";
  }
}

TEST(McpConfig, DisabledEndpointIsNotServed) {
  Workspace ws("server: {listen: 127.0.0.1:0, mcp: {enabled: false}}");
  RunningDaemon d(ws);
  EXPECT_EQ(mcp_post(d.port, rpc(1, "ping")).status, 404);
  EXPECT_EQ(http(d.port, "GET", "/.well-known/oauth-protected-resource/mcp", "", "").status, 404);
}

}  // namespace
}  // namespace airlock::server::test
