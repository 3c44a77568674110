// /mcp over real sockets: revisions, sessions, headers, RBAC, auth, Origin.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "mcp_test_support.hpp"

namespace airlock::server::test {
namespace {

class McpHttpTest : public ::testing::Test {
 protected:
  Workspace ws{"server: {listen: 127.0.0.1:0, maxBodyBytes: 64Ki, maxConcurrentInvocations: 4, queueLength: 64, "
               "drainTimeout: 20s, mcp: {allowedOrigins: ['https://app.example.com']}}"};
  RunningDaemon d{ws};
};

TEST_F(McpHttpTest, InitializeNegotiatesEachSessionRevision) {
  for (const std::string revision : {"2025-06-18", "2025-11-25"}) {
    auto r = mcp_post(d.port, rpc(1, "initialize", {{"protocolVersion", revision}, {"capabilities", nlohmann::json::object()}}));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["result"]["protocolVersion"], revision);
    EXPECT_EQ(r.json()["result"]["serverInfo"]["name"], "airlock");
    EXPECT_FALSE(r.headers["mcp-session-id"].empty());
  }
  // A revision it does not speak: answered with its newest session revision.
  auto r = mcp_post(d.port, rpc(1, "initialize", {{"protocolVersion", "2024-01-01"}, {"capabilities", nlohmann::json::object()}}));
  EXPECT_EQ(r.json()["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpHttpTest, StatelessDiscoverAndUnsupportedRevision) {
  auto discover = rpc(1, "server/discover", {{"_meta", stateless_meta()}});
  auto r = mcp_post(d.port, discover, kKey, {{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "server/discover"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["result"]["resultType"], "complete");
  EXPECT_NE(r.json()["result"]["supportedVersions"].dump().find("2026-07-28"), std::string::npos);

  auto future = rpc(2, "tools/list", {{"_meta", stateless_meta("2030-01-01")}});
  r = mcp_post(d.port, future, kKey, {{"mcp-protocol-version", "2030-01-01"}, {"mcp-method", "tools/list"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["code"], -32022);
  EXPECT_EQ(r.json()["error"]["data"]["requested"], "2030-01-01");
}

TEST_F(McpHttpTest, StatelessHeadersMustMatchTheBody) {
  auto call = rpc(3, "tools/call", {{"name", "echo"}, {"arguments", {{"n", 1}}}, {"_meta", stateless_meta()}});
  auto wrong_method = mcp_post(d.port, call, kKey, {{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/list"}, {"mcp-name", "echo"}});
  EXPECT_EQ(wrong_method.status, 400);
  EXPECT_EQ(wrong_method.json()["error"]["code"], -32020);
  auto wrong_name = mcp_post(d.port, call, kKey, {{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/call"}, {"mcp-name", "crash"}});
  EXPECT_EQ(wrong_name.status, 400);
  EXPECT_EQ(wrong_name.json()["error"]["code"], -32020);
  auto right = mcp_post(d.port, call, kKey, {{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/call"}, {"mcp-name", "=?base64?ZWNobw==?="}});
  ASSERT_EQ(right.status, 200) << right.body;
  EXPECT_EQ(right.json()["result"]["structuredContent"]["echo"]["n"], 1);
  EXPECT_EQ(right.json()["result"]["resultType"], "complete");
}

// tools/call is the invocation POST /v1/tools/{name}/invoke makes: stored, counted, audited.
TEST_F(McpHttpTest, ToolsCallIsAStoredAndCountedInvocation) {
  const auto before = audit_records(ws.audit_path());
  const auto id = open_session(d.port, "2025-11-25");
  auto r = mcp_post(d.port, rpc(2, "tools/call", {{"name", "echo"}, {"arguments", {{"n", 6}}}}), kKey,
                    session_headers(id, "2025-11-25"));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string invocation = r.json()["result"]["_meta"]["airlock.dev/invocationId"];
  auto stored = http(d.port, "GET", "/v1/invocations/" + invocation);
  ASSERT_EQ(stored.status, 200) << stored.body;
  EXPECT_EQ(stored.json()["tool"], "echo");
  EXPECT_EQ(stored.json()["output"]["echo"]["n"], 6);
  EXPECT_EQ(audit_records(ws.audit_path()), before + 1);
  auto metrics = http(d.port, "GET", "/metrics", "", "");
  EXPECT_NE(metrics.body.find(R"(airlock_invocations_total{status="ok",tool="echo"} 1)"), std::string::npos) << metrics.body;
}

// Issue #38: tasks are for the calls that wait for a person (approvals_test has the whole
// flow). A tool that runs at once is no task: not offered, refused as the spec says; a task id
// that is nobody's is not found. The capability says which requests may be tasks.
TEST_F(McpHttpTest, OnlyCallsThatWaitForAPersonAreTasks) {
  const auto id = open_session(d.port, "2025-11-25");
  const auto headers = session_headers(id, "2025-11-25");
  auto init = mcp_post(d.port, rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", nlohmann::json::object()}}));
  EXPECT_TRUE(init.json()["result"]["capabilities"]["tasks"]["requests"]["tools"].contains("call")) << init.body;
  auto listed = mcp_post(d.port, rpc(2, "tools/list"), kKey, headers).json();
  for (const auto& t : listed["result"]["tools"]) {
    if (t["name"] == "echo") {
      EXPECT_FALSE(t.contains("execution")) << t.dump();
    }
  }
  auto r = mcp_post(d.port, rpc(3, "tools/call", {{"name", "echo"}, {"arguments", {{"n", 1}}}, {"task", nlohmann::json::object()}}),
                    kKey, headers);
  EXPECT_EQ(r.json()["error"]["code"], -32601) << r.body;
  EXPECT_NE(r.body.find("cannot be a task"), std::string::npos) << r.body;
  for (const std::string method : {"tasks/get", "tasks/result"}) {
    auto unknown = mcp_post(d.port, rpc(4, method, {{"taskId", "no-such-task"}}), kKey, headers);
    EXPECT_EQ(unknown.json()["error"]["code"], -32602) << unknown.body;
    auto malformed = mcp_post(d.port, rpc(5, method, {{"taskId", 7}}), kKey, headers);
    EXPECT_EQ(malformed.json()["error"]["code"], -32602) << malformed.body;
  }
}

// Issue #36: over MCP, a python-code tool says it takes `code`, and a cell that raised answers
// its exception and traceback where a model reads them (the text and structuredContent).
TEST_F(McpHttpTest, APythonCodeToolPublishesCodeAndAnswersItsTraceback) {
  const auto id = open_session(d.port, "2025-11-25");
  auto list = mcp_post(d.port, rpc(2, "tools/list"), kKey, session_headers(id, "2025-11-25"));
  ASSERT_EQ(list.status, 200) << list.body;
  nlohmann::json schema;
  const auto listed = list.json();
  for (const auto& t : listed["result"]["tools"])
    if (t["name"] == "run-python") schema = t["inputSchema"];
  EXPECT_EQ(schema["properties"]["code"]["type"], "string") << list.body;
  EXPECT_FALSE(schema["properties"]["code"]["description"].get<std::string>().empty()) << schema;
  EXPECT_EQ(schema["required"], nlohmann::json::array({"code"})) << schema;
  EXPECT_EQ(schema["additionalProperties"], false) << schema;

  auto r = mcp_post(d.port, rpc(3, "tools/call", {{"name", "run-python"}, {"arguments", {{"code", "a = [1]\nprint(a[5])\n"}}}}),
                    kKey, session_headers(id, "2025-11-25"));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto result = r.json()["result"];
  EXPECT_EQ(result["isError"], true) << r.body;
  const auto& error = result["structuredContent"]["error"];
  EXPECT_EQ(error["kind"], "code_error") << r.body;
  EXPECT_EQ(error["details"]["name"], "IndexError") << r.body;
  EXPECT_EQ(error["details"]["line"], 2) << r.body;
  const std::string text = result["content"][0]["text"];
  EXPECT_NE(text.find("File \"<code>\", line 2, in <module>"), std::string::npos) << text;
  EXPECT_NE(text.find("IndexError: list index out of range"), std::string::npos) << text;
}

TEST_F(McpHttpTest, BatchesAreRefused) {
  auto r = mcp_post(d.port, nlohmann::json::array({rpc(1, "ping"), rpc(2, "ping")}));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["code"], -32600);
}

TEST_F(McpHttpTest, SessionRequestsCheckTheProtocolVersionHeader) {
  const auto id = open_session(d.port, "2025-06-18");
  ASSERT_FALSE(id.empty());
  auto ok = mcp_post(d.port, rpc(2, "ping"), kKey, session_headers(id, "2025-06-18"));
  EXPECT_EQ(ok.status, 200) << ok.body;
  auto bad = mcp_post(d.port, rpc(3, "ping"), kKey, session_headers(id, "1999-01-01"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.json()["error"]["message"].get<std::string>().find("Unsupported protocol version"), std::string::npos);
  auto none = mcp_post(d.port, rpc(4, "ping"));
  EXPECT_EQ(none.status, 400);  // no session, no _meta
}

TEST_F(McpHttpTest, SessionIsBoundToThePrincipalThatOpenedIt) {
  const auto id = open_session(d.port, "2025-11-25");
  auto theirs = mcp_post(d.port, rpc(2, "tools/list"), kOtherKey, session_headers(id, "2025-11-25"));
  EXPECT_EQ(theirs.status, 404);
  auto mine = mcp_post(d.port, rpc(2, "tools/list"), kKey, session_headers(id, "2025-11-25"));
  EXPECT_EQ(mine.status, 200);
}

// Sessions are bounded per principal (kMaxMcpSessionsPerPrincipal, 256): an agent opening
// more than the old table held (1,024) loses its own oldest, never another principal's.
TEST_F(McpHttpTest, OneAgentsSessionsNeverEvictAnothers) {
  const auto theirs = open_session(d.port, "2025-11-25", kOtherKey);
  ASSERT_FALSE(theirs.empty());
  std::string first, last;
  for (int i = 0; i < 1025; ++i) {
    last = open_session(d.port, "2025-11-25");
    ASSERT_FALSE(last.empty()) << i;
    if (i == 0) first = last;
  }
  EXPECT_EQ(mcp_post(d.port, rpc(2, "ping"), kOtherKey, session_headers(theirs, "2025-11-25")).status, 200);
  EXPECT_EQ(mcp_post(d.port, rpc(2, "ping"), kKey, session_headers(last, "2025-11-25")).status, 200);
  EXPECT_EQ(mcp_post(d.port, rpc(2, "ping"), kKey, session_headers(first, "2025-11-25")).status, 404);
}

TEST_F(McpHttpTest, ToolsListFollowsRbacAndRisk) {
  const auto other = open_session(d.port, "2025-11-25", kOtherKey);
  auto r = mcp_post(d.port, rpc(2, "tools/list"), kOtherKey, session_headers(other, "2025-11-25"));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto tools = r.json()["result"]["tools"];
  ASSERT_EQ(tools.size(), 1u) << tools.dump();
  EXPECT_EQ(tools[0]["name"], "echo");
  EXPECT_EQ(tools[0]["inputSchema"]["type"], "object");
  EXPECT_EQ(tools[0]["annotations"]["readOnlyHint"], true);

  const auto mine = open_session(d.port, "2025-11-25");
  r = mcp_post(d.port, rpc(3, "tools/list"), kKey, session_headers(mine, "2025-11-25"));
  bool saw_dangerous = false;
  const auto all = r.json();
  for (const auto& t : all["result"]["tools"]) {
    if (t["name"] != "dangerous") continue;
    saw_dangerous = true;
    EXPECT_EQ(t["annotations"]["destructiveHint"], true);
    EXPECT_EQ(t["annotations"]["readOnlyHint"], false);
  }
  EXPECT_TRUE(saw_dangerous) << r.body;
}

TEST_F(McpHttpTest, DenialsAndFailuresAreErrorResults) {
  const auto id = open_session(d.port, "2025-11-25", kOtherKey);
  auto r = mcp_post(d.port, rpc(2, "tools/call", {{"name", "dangerous"}, {"arguments", nlohmann::json::object()}}), kOtherKey,
                    session_headers(id, "2025-11-25"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["result"]["isError"], true);
  EXPECT_EQ(r.json()["result"]["structuredContent"]["error"]["kind"], "forbidden");
  EXPECT_EQ(r.json()["result"]["content"][0]["type"], "text");

  const auto mine = open_session(d.port, "2025-11-25");
  r = mcp_post(d.port, rpc(3, "tools/call", {{"name", "crash"}}), kKey, session_headers(mine, "2025-11-25"));
  EXPECT_EQ(r.json()["result"]["isError"], true);
  EXPECT_EQ(r.json()["result"]["structuredContent"]["error"]["kind"], "tool_crashed");
}

TEST_F(McpHttpTest, UnauthenticatedIsPointedAtTheResourceMetadata) {
  auto r = mcp_post(d.port, rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}}), "");
  EXPECT_EQ(r.status, 401);
  const std::string expected = "Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\"";
  EXPECT_EQ(r.headers["www-authenticate"], expected);
  auto prm = http(d.port, "GET", "/.well-known/oauth-protected-resource/mcp", "", "");
  ASSERT_EQ(prm.status, 200);
  EXPECT_EQ(prm.json()["resource"], "http://127.0.0.1/mcp");
  EXPECT_TRUE(prm.json()["authorization_servers"].is_array());
  EXPECT_EQ(prm.json()["bearer_methods_supported"], nlohmann::json::array({"header"}));
  EXPECT_EQ(http(d.port, "GET", "/.well-known/oauth-protected-resource", "", "").status, 200);
}

TEST_F(McpHttpTest, ForeignOriginIsForbidden) {
  auto evil = mcp_post(d.port, rpc(1, "ping"), kKey, {{"origin", "http://evil.example"}});
  EXPECT_EQ(evil.status, 403);
  const auto id = open_session(d.port, "2025-11-25");
  auto headers = session_headers(id, "2025-11-25");
  headers["origin"] = "https://app.example.com";
  EXPECT_EQ(mcp_post(d.port, rpc(2, "ping"), kKey, headers).status, 200);
}

TEST_F(McpHttpTest, AcceptContentTypeAndMethodsAreChecked) {
  auto no_sse = http_with(d.port, "POST", "/mcp", rpc(1, "ping").dump(), kKey, {{"accept", "application/json"}});
  EXPECT_EQ(no_sse.status, 406);
  auto text = http_with(d.port, "POST", "/mcp", rpc(1, "ping").dump(), kKey,
                        {{"accept", "application/json, text/event-stream"}, {"content-type", "text/plain"}});
  EXPECT_EQ(text.status, 415);
  EXPECT_EQ(http(d.port, "PUT", "/mcp").status, 405);
  const auto id = open_session(d.port, "2025-11-25");
  EXPECT_EQ(http_with(d.port, "DELETE", "/mcp", "", kKey, {{"mcp-session-id", id}}).status, 204);
  EXPECT_EQ(mcp_post(d.port, rpc(2, "ping"), kKey, session_headers(id, "2025-11-25")).status, 404);
}

// Issue #38: GET /mcp is a session's stream of the notifications the server starts. It needs
// an Accept that takes a stream, a session id, and a session of the caller's; it is
// text/event-stream, and it ends when its session is deleted.
TEST_F(McpHttpTest, TheGetStreamBelongsToAKnownSessionAndEndsWithIt) {
  const std::map<std::string, std::string> sse = {{"accept", "text/event-stream"}};
  auto no_session = http_with(d.port, "GET", "/mcp", "", kKey, sse);
  EXPECT_EQ(no_session.status, 400) << no_session.body;
  auto unknown = http_with(d.port, "GET", "/mcp", "", kKey, {{"accept", "text/event-stream"}, {"mcp-session-id", "0123abcd"}});
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(unknown.json()["error"]["code"], -32001);
  const auto id = open_session(d.port, "2025-11-25");
  auto headers = session_headers(id, "2025-11-25");
  EXPECT_EQ(http_with(d.port, "GET", "/mcp", "", kKey, headers).status, 406) << "no Accept: text/event-stream";
  headers.insert(sse.begin(), sse.end());
  EXPECT_EQ(http_with(d.port, "GET", "/mcp", "", "wrong-key", headers).status, 401);
  EXPECT_EQ(http_with(d.port, "GET", "/mcp", "", kOtherKey, headers).status, 404) << "another principal's session";
  Reply stream;
  std::thread reader([&] { stream = http_with(d.port, "GET", "/mcp", "", kKey, headers); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(http_with(d.port, "DELETE", "/mcp", "", kKey, {{"mcp-session-id", id}}).status, 204);
  reader.join();  // returns only once the stream has ended
  EXPECT_EQ(stream.status, 200) << stream.body;
  EXPECT_EQ(stream.headers["content-type"], "text/event-stream");
}

TEST_F(McpHttpTest, InitializeSaysTheToolListChanges) {
  auto r = mcp_post(d.port, rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", nlohmann::json::object()}}));
  EXPECT_EQ(r.json()["result"]["capabilities"]["tools"]["listChanged"], true) << r.body;
}

// Issue #38: tools/list in pages of server.mcp.toolsPageSize; the pages concatenate to the whole
// list, and a cursor the server did not give is refused with -32602.
class McpPagesTest : public ::testing::Test {
 protected:
  Workspace ws{"server: {listen: 127.0.0.1:0, maxBodyBytes: 64Ki, maxConcurrentInvocations: 4, queueLength: 64, "
               "drainTimeout: 20s, mcp: {toolsPageSize: 2}}"};
  RunningDaemon d{ws};
};

TEST_F(McpPagesTest, PagesConcatenateToTheWholeListAndAForgedCursorIsRefused) {
  const auto id = open_session(d.port, "2025-11-25");
  const auto headers = session_headers(id, "2025-11-25");
  std::vector<std::string> names;
  nlohmann::json params = nlohmann::json::object();
  std::string last_cursor;
  int pages = 0;
  for (; pages < 100; ++pages) {
    auto r = mcp_post(d.port, rpc(2, "tools/list", params), kKey, headers);
    ASSERT_EQ(r.status, 200) << r.body;
    const auto body = r.json();
    const auto& result = body["result"];
    EXPECT_LE(result["tools"].size(), 2u);
    for (const auto& t : result["tools"]) names.push_back(t["name"]);
    if (!result.contains("nextCursor")) break;
    last_cursor = result["nextCursor"];
    params["cursor"] = last_cursor;
  }
  EXPECT_GE(pages, 2) << "more tools than one page holds";
  auto unique = names;
  std::sort(unique.begin(), unique.end());
  EXPECT_EQ(std::unique(unique.begin(), unique.end()), unique.end()) << "a tool on two pages";
  for (const auto& t : http(d.port, "GET", "/v1/tools").json()["tools"])
    EXPECT_NE(std::find(names.begin(), names.end(), t["name"].get<std::string>()), names.end()) << t["name"] << " on no page";

  // Forged: another offset with the signature of a real cursor, garbage, a number.
  ASSERT_FALSE(last_cursor.empty());
  std::string altered = last_cursor;
  altered.replace(altered.find('/') + 1, 1, "0");
  if (altered == last_cursor) altered.replace(altered.find('/') + 1, 1, "1");
  for (const nlohmann::json& cursor : {nlohmann::json(altered), nlohmann::json("tools/0.abc"), nlohmann::json(""), nlohmann::json(2)}) {
    auto r = mcp_post(d.port, rpc(3, "tools/list", {{"cursor", cursor}}), kKey, headers);
    EXPECT_EQ(r.json()["error"]["code"], -32602) << cursor.dump() << ": " << r.body;
  }
}

TEST_F(McpHttpTest, NotificationsAreAccepted) {
  const auto id = open_session(d.port, "2025-11-25");
  nlohmann::json note = {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
  auto r = mcp_post(d.port, note, kKey, session_headers(id, "2025-11-25"));
  EXPECT_EQ(r.status, 202);
  auto unknown = mcp_post(d.port, rpc(5, "completion/complete"), kKey, session_headers(id, "2025-11-25"));
  EXPECT_EQ(unknown.json()["error"]["code"], -32601);
}

// Session tools in stateless requests (2026-07-28): no MCP session, so no default workspace
// (`session` is required); a session made by session_create is reached by its id, by its owner
// only; a principal that may create no session is shown none.
struct WorkspaceWithATemplate : Workspace {
  WorkspaceWithATemplate() { write_config(config_text() + "sessionTemplates:\n  - name: ws\n    limits: {idleTimeout: 10m}\n"); }
};

class McpSessionToolsTest : public ::testing::Test {
 protected:
  nlohmann::json call(const std::string& tool, nlohmann::json arguments, const std::string& key = kKey) {
    auto message = rpc(1, "tools/call", {{"name", tool}, {"arguments", std::move(arguments)}, {"_meta", stateless_meta()}});
    auto r = mcp_post(d.port, message, key,
                      {{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/call"}, {"mcp-name", tool}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["result"];
  }
  std::vector<std::string> listed(const std::string& key) {
    auto r = mcp_post(d.port, rpc(1, "tools/list", {{"_meta", stateless_meta()}}), key,
                      {{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/list"}});
    EXPECT_EQ(r.status, 200) << r.body;
    const auto listing = r.json();  // kept: a range-for over r.json()[...] would read a destroyed temporary
    std::vector<std::string> names;
    for (const auto& t : listing["result"]["tools"]) names.push_back(t["name"]);
    return names;
  }
  WorkspaceWithATemplate ws;
  RunningDaemon d{ws};
};

TEST_F(McpSessionToolsTest, StatelessCallsNameTheirSessionAndOnlyItsOwnerReachesIt) {
  const auto mine = listed(kKey);
  EXPECT_NE(std::find(mine.begin(), mine.end(), "session_code"), mine.end());
  const auto theirs = listed(kOtherKey);  // `other` may create no session
  EXPECT_EQ(std::count_if(theirs.begin(), theirs.end(), [](const auto& n) { return n.rfind("session_", 0) == 0; }), 0);

  auto nameless = call("session_code", {{"code", "1"}});
  EXPECT_EQ(nameless["isError"], true) << nameless.dump();
  EXPECT_EQ(nameless["structuredContent"]["error"]["kind"], "invalid_input");
  EXPECT_NE(nameless["content"][0]["text"].get<std::string>().find("session: required"), std::string::npos);

  auto created = call("session_create", nlohmann::json::object());  // the only template, by default
  ASSERT_NE(created.value("isError", false), true) << created.dump();
  EXPECT_EQ(created["structuredContent"]["template"], "ws");
  EXPECT_EQ(created["structuredContent"]["default"], false);  // no MCP session to be the workspace of
  const std::string id = created["structuredContent"]["id"];
  auto cell = call("session_code", {{"session", id}, {"code", "x = 41\nx + 1"}});
  EXPECT_EQ(cell["structuredContent"]["result"]["json"], 42) << cell.dump();
  auto refused = call("session_exec", {{"session", id}, {"command", "true"}}, kOtherKey);
  EXPECT_EQ(refused["isError"], true);
  EXPECT_EQ(refused["structuredContent"]["error"]["kind"], "not_found");
  auto typo = call("session_exec", {{"session", id}, {"comand", "true"}});
  EXPECT_EQ(typo["structuredContent"]["error"]["kind"], "invalid_input") << typo.dump();
  auto ended = call("session_end", {{"session", id}});
  EXPECT_EQ(ended["structuredContent"]["state"], "ended") << ended.dump();
  EXPECT_EQ(http(d.port, "GET", "/v1/sessions/" + id).status, 404);
}

}  // namespace
}  // namespace airlock::server::test
