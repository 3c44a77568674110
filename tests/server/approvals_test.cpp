// Issue #19 end to end: the approval gate of critical tools, against a real daemon through
// its HTTP API. The users' issuer is real (an Ed25519 key, its JWKS in a file the config
// names); the tools run in the local sandbox (tiers.critical.backend: local). Each test runs
// an attack on the gate or one of its rules and asserts what the daemon answered, stored
// and recorded.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <thread>

#include <sys/wait.h>

#include "audit/hash.hpp"
#include "audit/log_reader.hpp"
#include "corp_issuer.hpp"
#include "creds/secret_store.hpp"
#include "pipeline/stages/approval.hpp"
#include "mcp_test_support.hpp"
#include "server/approvals/approvals.hpp"
#include "server/mcp_server/mcp_tasks.hpp"
#include "server/mcp_server/mcp_tools.hpp"
#include "server_test_support.hpp"
#include "sse_stream.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;


// alice asks (through the agent); bob, carol and alice may approve; mallory may not.
const char* kTools = R"yaml(
  - name: danger
    description: 'Pays an invoice. <img src=x onerror="alert(1)">'
    risk: critical
    approval: {approvers: 1, timeout: 60s}
    runtime: {type: python, file: tools/echo.py}
    inputSchema:
      type: object
      properties: {payee: {type: string, description: 'Who is paid <script>alert(2)</script>'}}
      additionalProperties: true
  - name: danger-two
    risk: critical
    approval: {approvers: 2, timeout: 60s}
    runtime: {type: python, file: tools/echo.py}
  - name: danger-brief
    risk: critical
    approval: {approvers: 1, timeout: 1s}
    runtime: {type: python, file: tools/echo.py}
  - name: danger-slow
    risk: critical
    approval: {approvers: 1, timeout: 60s}
    runtime: {type: python, file: tools/slow.py}
    limits: {timeout: 30s})yaml";

class Approvals : public ::testing::Test {
 protected:
  void SetUp() override {
    auto corp = CorpIssuer::open(ws_.dir());
    ASSERT_TRUE(corp.ok()) << corp.error().message;
    corp_.emplace(std::move(*corp));
    ws_.rewrite(corp_sections(), kTools);
    ws_.write_config(with_local_critical_tier(ws_.config_text()));
    start();
  }

  void start() { daemon_ = std::make_unique<RunningDaemon>(ws_); }
  // The operator edits the file and reloads it (as SIGHUP does).
  void reload(const std::string& yaml) {
    ws_.write_config(yaml);
    auto reloaded = daemon_->daemon->reload(ws_.config());
    ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
  }
  void stop() { daemon_.reset(); }
  std::uint16_t port() const { return daemon_->port; }

  std::string token(const std::string& sub) const {
    json groups = json::array({"staff"});
    if (sub != "mallory") groups.push_back("approvers");
    return corp_->token(sub, groups);
  }

  // The agent calls `tool` for alice.
  Reply request(const std::string& tool, const json& arguments, const std::string& user = "alice",
                const std::string& agent_key = kKey) {
    return http_with(port(), "POST", "/v1/tools/" + tool + "/invoke", json{{"arguments", arguments}}.dump(),
                     agent_key, {{"Airlock-Subject-Token", token(user)}});
  }

  // `user` decides with their own token as the bearer, or relayed by the agent of `relay_key`.
  Reply decide(const std::string& approval, const std::string& verdict, const std::string& user,
               const std::string& relay_key = "", json body = {{"reason", "checked"}}) {
    const std::string target = "/v1/approvals/" + approval + "/" + verdict;
    if (relay_key.empty()) return http_with(port(), "POST", target, body.dump(), token(user), {});
    return http_with(port(), "POST", target, body.dump(), relay_key, {{"Airlock-Subject-Token", token(user)}});
  }

  // An MCP client script of tests/mcp/clients run against this daemon with the agent's key and
  // bob's token (the approver): its exit status and what it printed.
  std::pair<int, std::string> run_client(const std::string& script, const std::string& more = "") {
    const std::string command = std::string(AIRLOCK_NODE_BIN) + " " + MCP_CLIENTS_DIR + "/" + script +
                                " http://127.0.0.1:" + std::to_string(port()) + "/mcp " + kKey + " " + token("bob") +
                                (more.empty() ? "" : " " + more) + " 2>&1";
    std::string out;
    FILE* p = ::popen(command.c_str(), "r");
    if (p == nullptr) return {-1, "popen failed"};
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    return {WEXITSTATUS(::pclose(p)), out};
  }

  json invocation(const std::string& id, const std::string& wait = "") {
    auto r = http(port(), "GET", "/v1/invocations/" + id + (wait.empty() ? "" : "?wait=" + wait));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }

  // The invocation's outcome: polls (each poll long, at most 30 s) until it is not waiting.
  json outcome(const std::string& id) {
    for (int i = 0; i < 10; ++i) {
      auto j = invocation(id, "5s");
      const std::string status = j.value("status", "");
      if (status != "pending_approval" && status != "running" && status != "suspended") return j;
    }
    return invocation(id);
  }

  // The audit records of an invocation, as their fields, in order.
  std::vector<json> chain(const std::string& invocation_id) const {
    std::vector<json> out;
    auto reader = audit::LogReader::open(ws_.audit_path());
    EXPECT_TRUE(reader.ok());
    (void)reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
      auto record = json::parse(text, nullptr, false);
      const json fields = record.contains("fields") ? record["fields"] : record;
      if (fields.value("invocation_id", "") == invocation_id) out.push_back(fields);
      return true;
    });
    return out;
  }

  static std::vector<std::string> events(const std::vector<json>& records) {
    std::vector<std::string> out;
    for (const auto& r : records) out.push_back(r.value("event", r.value("verdict", "?")));
    return out;
  }

  Workspace ws_;
  std::optional<CorpIssuer> corp_;
  std::unique_ptr<RunningDaemon> daemon_;
};

struct Pending {
  std::string invocation, approval;
};

Pending pending_of(const Reply& r) {
  EXPECT_EQ(r.status, 202) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["status"], "pending_approval") << r.body;
  return {j.value("id", ""), j["approval"].value("id", "")};
}

void expect_error(const Reply& r, int status, const std::string& kind, const std::string& words = "") {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], kind) << r.body;
  if (!words.empty()) {
    EXPECT_NE(r.json()["error"].value("message", "").find(words), std::string::npos) << r.body;
  }
}

TEST_F(Approvals, ACriticalCallAnswers202RunsNothingAndRunsOnceApproved) {
  auto r = request("danger", {{"x", 1}});
  auto p = pending_of(r);
  auto j = r.json();
  EXPECT_EQ(j["approval"]["url"], "/v1/approvals/" + p.approval);
  EXPECT_TRUE(j["approval"]["expires_at"].is_string());
  EXPECT_TRUE(j["output"].is_null());
  EXPECT_TRUE(j["usage"].is_null()) << "nothing ran";
  EXPECT_EQ(invocation(p.invocation)["status"], "pending_approval");
  const auto metrics = http(port(), "GET", "/metrics", "", "").body;
  EXPECT_NE(metrics.find(R"(airlock_invocations_total{status="pending_approval",tool="danger"} 1)"),
            std::string::npos) << metrics;

  auto shown = http(port(), "GET", "/v1/approvals/" + p.approval, "", token("bob"));
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(shown.json()["arguments"], (json{{"x", 1}}));
  EXPECT_EQ(shown.json()["requested_by"]["subject"]["sub"], "alice");
  EXPECT_EQ(shown.json()["requested_by"]["principal"], "agent");

  auto approved = decide(p.approval, "approve", "bob");
  ASSERT_EQ(approved.status, 200) << approved.body;
  EXPECT_EQ(approved.json()["status"], "approved");
  auto done = outcome(p.invocation);
  EXPECT_EQ(done["status"], "ok") << done.dump();
  EXPECT_EQ(done["output"]["echo"], (json{{"x", 1}}));

  auto records = chain(p.invocation);
  ASSERT_EQ(records.size(), 3u) << json(records).dump();
  EXPECT_EQ(records[0]["event"], "approval.requested");
  EXPECT_EQ(records[1]["event"], "approval.decision");
  EXPECT_EQ(records[1]["approver"]["sub"], "bob");
  EXPECT_EQ(records[1]["reason"], "checked");
  EXPECT_EQ(records[2]["verdict"], "ok");  // the execution
}

// Issue #22: a call waiting for its approvers holds no quota place (nor a worker): with
// `concurrent: 1`, the same agent and user go on calling while it waits, and it still runs
// once approved.
TEST_F(Approvals, APendingCallHoldsNoQuotaPlace) {
  stop();
  ws_.write_config(ws_.config_text() + "\nquotas: {default: {concurrent: 1}, users: {concurrent: 1}}\n");
  start();
  auto p = pending_of(request("danger", {{"x", 1}}));
  auto second = pending_of(request("danger", {{"x", 2}}));  // alice and the agent again
  auto echo = invoke(port(), "echo", {{"n", 1}});
  EXPECT_EQ(echo.status, 200) << echo.body;
  EXPECT_EQ(echo.json()["status"], "ok") << echo.body;
  ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
  EXPECT_EQ(outcome(p.invocation)["status"], "ok");
  ASSERT_EQ(decide(second.approval, "deny", "bob").status, 200);
}

TEST_F(Approvals, NeitherTheRequestingUserNorTheRequestingAgentMayApprove) {
  auto p = pending_of(request("danger", {{"x", 1}}));
  // alice herself, with her own token.
  expect_error(decide(p.approval, "approve", "alice"), 403, "forbidden", "separation of duties");
  // alice through another agent.
  expect_error(decide(p.approval, "approve", "alice", kOtherKey), 403, "forbidden", "separation of duties");
  // The requesting agent, relaying another user's token.
  expect_error(decide(p.approval, "approve", "bob", kKey), 403, "forbidden", "separation of duties");
  // An agent alone is nobody's decision; mallory has no approve rule.
  auto alone = http(port(), "POST", "/v1/approvals/" + p.approval + "/approve", "{}", kOtherKey);
  EXPECT_TRUE(alone.status == 403 || alone.status == 404) << alone.body;
  EXPECT_EQ(decide(p.approval, "approve", "mallory").status, 404);
  EXPECT_EQ(invocation(p.invocation)["status"], "pending_approval") << "none of those counted";

  // The requesting agent does not see it in its list; bob does, relayed by another agent too.
  auto bobs = http(port(), "GET", "/v1/approvals", "", token("bob"));
  ASSERT_EQ(bobs.status, 200);
  EXPECT_EQ(bobs.json()["approvals"].size(), 1u);
  auto alices = http(port(), "GET", "/v1/approvals", "", token("alice"));
  EXPECT_EQ(alices.json()["approvals"].size(), 0u) << "her own request is not hers to decide";

  auto relayed = decide(p.approval, "approve", "bob", kOtherKey);
  ASSERT_EQ(relayed.status, 200) << relayed.body;
  EXPECT_EQ(outcome(p.invocation)["status"], "ok");
  auto records = chain(p.invocation);
  ASSERT_GE(records.size(), 2u);
  EXPECT_EQ(records[1]["approver"]["sub"], "bob") << "the person is the approver";
  EXPECT_EQ(records[1]["relayed_by"], "other");
}

TEST_F(Approvals, AnApprovalDoesNotCoverChangedArguments) {
  auto first = pending_of(request("danger", {{"x", 1}}));
  auto other_hash = pipeline::canonical_sha256(json{{"x", 2}});
  ASSERT_TRUE(other_hash.ok());
  // bob saw {"x": 2}: his approval of that is not one of this request.
  expect_error(decide(first.approval, "approve", "bob", "", {{"reason", "ok"}, {"arguments_sha256", *other_hash}}),
               409, "arguments_changed");
  // The same call with other arguments is a new request, which the first approval does not cover.
  auto second = pending_of(request("danger", {{"x", 2}}));
  EXPECT_NE(first.approval, second.approval);
  auto own_hash = pipeline::canonical_sha256(json{{"x", 1}});
  ASSERT_EQ(decide(first.approval, "approve", "bob", "", {{"reason", "ok"}, {"arguments_sha256", *own_hash}}).status, 200);
  EXPECT_EQ(outcome(first.invocation)["output"]["echo"], (json{{"x", 1}}));
  EXPECT_EQ(invocation(second.invocation)["status"], "pending_approval");
}

// A refund of 42.5 is the first thing a user tries: arguments with a fraction, an exponent and
// an integer past 2^53 are held, shown with the SHA-256 of their RFC 8785 text (the arguments
// sent as text, so the test does not depend on how nlohmann writes them), approved with that
// hash, and run once with exactly those values. (Before: 500 internal, "canonical JSON has
// integers only".)
TEST_F(Approvals, ArgumentsWithDecimalsAreHeldApprovedByTheirHashAndRun) {
  const std::string body = R"({"arguments":{"amount":42.5,"rate":1E-7,"big":1e21,"id":9007199254740993}})";
  auto r = http_with(port(), "POST", "/v1/tools/danger/invoke", body, kKey,
                     {{"Airlock-Subject-Token", token("alice")}});
  auto p = pending_of(r);
  auto shown = http(port(), "GET", "/v1/approvals/" + p.approval, "", token("bob"));
  ASSERT_EQ(shown.status, 200) << shown.body;
  const std::string jcs_text = R"({"amount":42.5,"big":1e+21,"id":9007199254740993,"rate":1e-7})";
  const std::string expected = audit::to_hex(audit::sha256(std::string_view(jcs_text)));
  EXPECT_EQ(shown.json()["arguments_sha256"], expected) << shown.body;
  // The hash of the neighbouring integer (one JCS-by-double would give the same) is refused.
  const std::string neighbour = R"({"amount":42.5,"big":1e+21,"id":9007199254740992,"rate":1e-7})";
  expect_error(decide(p.approval, "approve", "bob", "",
                      {{"reason", "ok"}, {"arguments_sha256", audit::to_hex(audit::sha256(std::string_view(neighbour)))}}),
               409, "arguments_changed");
  ASSERT_EQ(decide(p.approval, "approve", "bob", "", {{"reason", "ok"}, {"arguments_sha256", expected}}).status, 200);
  auto done = outcome(p.invocation);
  ASSERT_EQ(done["status"], "ok") << done.dump();
  EXPECT_EQ(done["output"]["echo"]["amount"], 42.5);
  EXPECT_EQ(done["output"]["echo"]["id"], 9007199254740993ULL);
}

// Issue #33: the pending invocation is sealed with its approval's id as associated data. Two
// pending calls with the same arguments, alice's and carol's: someone who can write state.db
// swaps their stored invocations, so that approving alice's would run carol's (another user,
// her credentials). It does not open under the other id: refused, nothing runs. (Before, in
// plain, the swapped call ran: the arguments' hash was the same.)
TEST_F(Approvals, InvocationsSwappedBetweenRowsOfTheStateDatabaseAreNotRun) {
  auto alices = pending_of(request("danger", {{"x", 1}}, "alice"));
  auto carols = pending_of(request("danger", {{"x", 1}}, "carol"));
  stop();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((ws_.dir() + "/data/state.db").c_str(), &db), SQLITE_OK);
  const std::string a = "'" + alices.approval + "'", c = "'" + carols.approval + "'";
  const std::string sql = "CREATE TEMP TABLE kept AS SELECT id, invocation FROM approvals;"
                          "UPDATE approvals SET invocation = (SELECT invocation FROM kept WHERE kept.id = CASE approvals.id"
                          " WHEN " + a + " THEN " + c + " ELSE " + a + " END) WHERE id IN (" + a + ", " + c + ")";
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_changes(db), 2);
  sqlite3_close(db);
  start();
  ASSERT_EQ(decide(alices.approval, "approve", "bob").status, 200);
  auto done = outcome(alices.invocation);
  EXPECT_EQ(done["status"], "denied") << done.dump();
  EXPECT_EQ(done["error"]["kind"], "approval_denied");
  EXPECT_TRUE(done["output"].is_null());
  EXPECT_TRUE(done["usage"].is_null()) << "carol's call never ran as alice's";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Issue #33: a reload that leaves what the call was decided on alone (a comment, a new tool,
// another agent's tools) lets the approved call run, in the daemon that reloaded and across a
// restart (the basis is kept with the pending invocation). Before: config_changed, whatever
// changed.
TEST_F(Approvals, AReloadThatChangesNothingTheCallRestsOnLetsTheApprovedCallRun) {
  const std::string base = ws_.config_text();
  auto p = pending_of(request("danger", {{"x", 1}}));
  const std::string shown_basis = http(port(), "GET", "/v1/approvals/" + p.approval, "", token("bob"))
                                      .json()
                                      .value("decision_basis_sha256", "");
  EXPECT_EQ(shown_basis.size(), 64u);
  reload("# a comment the operator added\n" + base +
         "\n  - name: brand-new\n    runtime: {type: python, file: tools/echo.py}\n");
  ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
  auto done = outcome(p.invocation);
  EXPECT_EQ(done["status"], "ok") << done.dump();
  EXPECT_EQ(done["output"]["echo"], (json{{"x", 1}}));

  auto q = pending_of(request("danger", {{"x", 2}}));
  stop();
  ws_.write_config(replaced(ws_.config_text(), R"(tools: ["echo"])", R"(tools: ["echo", "slow"])"));
  start();
  ASSERT_EQ(decide(q.approval, "approve", "bob").status, 200);
  done = outcome(q.invocation);
  EXPECT_EQ(done["status"], "ok") << done.dump();
}

// A reload that changes the tool's definition, its tier or the access rule that let the call
// through ends the approved call with config_changed, naming what changed; nothing runs.
TEST_F(Approvals, AReloadThatChangesWhatTheCallRestsOnEndsItConfigChanged) {
  const std::string base = ws_.config_text();
  struct Change {
    std::string from, to, named;
  };
  const std::vector<Change> changes = {
      {"description: 'Pays an invoice.", "description: 'Wires money.", "the tool's definition"},
      {"critical: {backend: local}", "critical: {backend: local, timeout: 20s}", "its risk tier"},
      {R"(actions: [invoke], tools: ["danger*"])", R"(actions: [invoke], tools: ["danger*", "echo"])",
       "the access rules that let it through"}};
  for (const auto& change : changes) {
    SCOPED_TRACE(change.named);
    auto p = pending_of(request("danger", {{"x", 1}}));
    reload(replaced(base, change.from, change.to));
    ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
    auto done = outcome(p.invocation);
    EXPECT_EQ(done["status"], "denied") << done.dump();
    EXPECT_EQ(done["error"]["kind"], "config_changed") << done.dump();
    EXPECT_NE(done["error"].value("message", "").find(change.named), std::string::npos) << done.dump();
    EXPECT_TRUE(done["usage"].is_null()) << "nothing ran";
    reload(base);
  }
}

TEST_F(Approvals, NoDecisionBeforeTheTimeoutIsADenyAndALateApprovalIsRefused) {
  auto p = pending_of(request("danger-brief", {{"x", 1}}));
  auto done = outcome(p.invocation);
  EXPECT_EQ(done["status"], "denied") << done.dump();
  EXPECT_EQ(done["error"]["kind"], "approval_expired");
  auto late = decide(p.approval, "approve", "bob");
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_EQ(outcome(p.invocation)["error"]["kind"], "approval_expired") << "the late approval changed nothing";
  EXPECT_EQ(events(chain(p.invocation)), (std::vector<std::string>{"approval.requested", "approval.expired", "approval_expired"}));
}

TEST_F(Approvals, TwoDistinctApproversAreNeededAndTheSamePersonCountsOnce) {
  auto p = pending_of(request("danger-two", {{"x", 1}}));
  auto first = decide(p.approval, "approve", "bob");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json()["status"], "pending");
  EXPECT_EQ(first.json()["approvals"], 1);
  expect_error(decide(p.approval, "approve", "bob"), 409, "already_decided");
  expect_error(decide(p.approval, "approve", "bob", kOtherKey), 409, "already_decided");
  EXPECT_EQ(invocation(p.invocation)["status"], "pending_approval");
  auto second = decide(p.approval, "approve", "carol");
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(second.json()["status"], "approved");
  EXPECT_EQ(outcome(p.invocation)["status"], "ok");
}

TEST_F(Approvals, ADenyByAnyoneEndsIt) {
  auto p = pending_of(request("danger-two", {{"x", 1}}));
  ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
  auto denied = decide(p.approval, "deny", "carol", "", {{"reason", "not today"}});
  ASSERT_EQ(denied.status, 200) << denied.body;
  EXPECT_EQ(denied.json()["status"], "denied");
  auto done = outcome(p.invocation);
  EXPECT_EQ(done["error"]["kind"], "approval_denied");
  EXPECT_NE(done["error"].value("message", "").find("not today"), std::string::npos);
  expect_error(decide(p.approval, "approve", "dave"), 409, "not_pending");
}

TEST_F(Approvals, ARestartBetweenRequestAndApprovalKeepsItPending) {
  auto p = pending_of(request("danger", {{"x", 7}}));
  stop();
  start();
  EXPECT_EQ(invocation(p.invocation)["status"], "pending_approval");
  auto listed = http(port(), "GET", "/v1/approvals", "", token("bob"));
  ASSERT_EQ(listed.json()["approvals"].size(), 1u) << listed.body;
  EXPECT_EQ(listed.json()["approvals"][0]["id"], p.approval);
  ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
  auto done = outcome(p.invocation);
  EXPECT_EQ(done["status"], "ok") << done.dump();
  EXPECT_EQ(done["output"]["echo"], (json{{"x", 7}}));
}

TEST_F(Approvals, ADaemonDownPastTheTimeoutDeniesIt) {
  auto p = pending_of(request("danger-brief", {{"x", 1}}));
  stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the 1 s timeout
  start();
  // Decided at start, before anything is served: no wait needed.
  auto j = invocation(p.invocation);
  EXPECT_EQ(j["status"], "denied") << j.dump();
  EXPECT_EQ(j["error"]["kind"], "approval_expired");
  EXPECT_EQ(decide(p.approval, "approve", "bob").status, 409);
}

// The approval and the sweeper's expiry race near the deadline: each time there is exactly
// one outcome, and it is recorded once.
TEST_F(Approvals, AnApprovalRacingItsExpiryEndsOneWayRecordedOnce) {
  for (int delay_ms : {900, 960, 990, 1000, 1010, 1040}) {
    auto p = pending_of(request("danger-brief", {{"delay", delay_ms}}));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    auto r = decide(p.approval, "approve", "bob");
    auto done = outcome(p.invocation);
    auto ev = events(chain(p.invocation));
    const bool approved = r.status == 200;
    if (approved) {
      EXPECT_EQ(done["status"], "ok") << done.dump();
      EXPECT_EQ(ev, (std::vector<std::string>{"approval.requested", "approval.decision", "ok"}));
    } else {
      EXPECT_EQ(r.status, 409) << r.body;
      EXPECT_EQ(done["error"]["kind"], "approval_expired") << done.dump();
      EXPECT_EQ(ev, (std::vector<std::string>{"approval.requested", "approval.expired", "approval_expired"}));
    }
  }
}

TEST_F(Approvals, AThousandPendingApprovalsAreListedAndShown) {
  std::vector<Pending> all;
  for (int i = 0; i < 1000; ++i) all.push_back(pending_of(request("danger", {{"i", i}})));
  auto listed = http(port(), "GET", "/v1/approvals", "", token("bob"));
  ASSERT_EQ(listed.status, 200);
  ASSERT_EQ(listed.json()["approvals"].size(), 1000u);
  EXPECT_EQ(listed.json()["approvals"][999]["id"], all[999].approval) << "oldest first";
  EXPECT_EQ(http(port(), "GET", "/v1/approvals/" + all[500].approval, "", token("bob")).json()["arguments"],
            (json{{"i", 500}}));
  ASSERT_EQ(decide(all[500].approval, "approve", "bob").status, 200);
  EXPECT_EQ(outcome(all[500].invocation)["output"]["echo"], (json{{"i", 500}}));
  EXPECT_EQ(http(port(), "GET", "/v1/approvals", "", token("bob")).json()["approvals"].size(), 999u);
}

TEST_F(Approvals, ALongPollAnswersWhenTheInvocationEnds) {
  auto p = pending_of(request("danger", {{"x", 1}}));
  auto poll = std::async(std::launch::async, [&] { return invocation(p.invocation, "30s"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
  auto j = poll.get();
  // The poll was answered by the outcome (or by its "running" row, polled again).
  if (j["status"] == "running") j = outcome(p.invocation);
  EXPECT_EQ(j["status"], "ok") << j.dump();
  auto bad = http(port(), "GET", "/v1/invocations/" + p.invocation + "?wait=forever");
  EXPECT_EQ(bad.status, 400);
}

// A call that still runs (resumed after its approval, or never held) is its owner's: a long
// poll by anyone else who knows its id (another agent, a user with no role, an approver, who
// sees ids in GET /v1/approvals) is answered 404, not with its output when it ends.
TEST_F(Approvals, ARunningCallIsAnsweredOnlyToItsOwner) {
  auto strangers_poll = [&](const std::string& id) {
    const std::vector<std::pair<std::string, std::map<std::string, std::string>>> strangers = {
        {kOtherKey, {}}, {token("mallory"), {}}, {token("bob"), {}}, {kOtherKey, {{"Airlock-Subject-Token", token("bob")}}},
        {kOtherKey, {{"Airlock-Subject-Token", token("alice")}}}};
    for (const auto& [credential, headers] : strangers) {
      auto r = http_with(port(), "GET", "/v1/invocations/" + id + "?wait=30s", "", credential, headers);
      EXPECT_EQ(r.status, 404) << r.body;
      EXPECT_EQ(r.body.find("slept"), std::string::npos) << r.body;
    }
  };
  auto running = [&](const std::string& id) {
    for (int i = 0; i < 500; ++i) {
      if (invocation(id).value("status", "") == "running") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };

  auto p = pending_of(request("danger-slow", {{"seconds", 5}}));
  ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
  ASSERT_TRUE(running(p.invocation)) << "the approved call runs";
  strangers_poll(p.invocation);
  // Its user and its agent are answered its outcome.
  auto alices = http(port(), "GET", "/v1/invocations/" + p.invocation + "?wait=30s", "", token("alice"));
  ASSERT_EQ(alices.status, 200) << alices.body;
  EXPECT_EQ(outcome(p.invocation)["status"], "ok");

  // Never held: the agent's own call, found in its list while it runs.
  auto call = std::async(std::launch::async, [&] { return invoke(port(), "slow", {{"seconds", 5}}); });
  std::string id;
  for (int i = 0; i < 500 && id.empty(); ++i) {
    auto listed = http(port(), "GET", "/v1/invocations?status=running&tool=slow").json()["invocations"];
    if (!listed.empty()) id = listed[0].value("id", "");
    else std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(id.empty()) << "the call is listed as running";
  strangers_poll(id);
  EXPECT_EQ(call.get().status, 200);
}

// Before tasks (2025-06-18), a critical call over MCP answers an error naming its approval and
// its invocation, which the client polls over the REST API.
TEST_F(Approvals, AnMcpCallOfACriticalToolBeforeTasksIsAnErrorNamingTheApproval) {
  const std::string revision = "2025-06-18";
  const auto headers = session_headers(open_session(port(), revision), revision);
  auto r = mcp_post(port(), rpc(3, "tools/call", {{"name", "danger"}, {"arguments", {{"x", 3}}}}), kKey, headers);
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = r.json();
  ASSERT_TRUE(body.contains("result")) << r.body;
  const auto& result = body["result"];
  EXPECT_EQ(result["isError"], true) << r.body;
  const auto& error = result["structuredContent"]["error"];
  EXPECT_EQ(error["kind"], "pending_approval") << r.body;
  const std::string approval = error["approval"].value("id", "");
  ASSERT_FALSE(approval.empty()) << r.body;
  EXPECT_EQ(error["approval"]["url"], "/v1/approvals/" + approval);
  const std::string invocation_id = result["structuredContent"].value("invocationId", "");
  ASSERT_EQ(decide(approval, "approve", "bob").status, 200);
  auto done = outcome(invocation_id);
  EXPECT_EQ(done["output"]["echo"], (json{{"x", 3}})) << done.dump();
}

// Issue #38, under 2026-07-28 (no tasks): a critical call answers input_required, with a
// URL-mode elicitation of the console's approval page for a client that opens URLs; a retry
// with the requestState waits for the end and answers the result. Nobody else's retry, and no
// forged state, reaches it; a declined elicitation answers the pending_approval error.
TEST_F(Approvals, ACriticalCallUnder20260728AsksForInputUntilAPersonApproves) {
  auto meta = stateless_meta();
  meta["io.modelcontextprotocol/clientCapabilities"] = {{"elicitation", {{"url", json::object()}}}};
  const std::map<std::string, std::string> headers = {
      {"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/call"}, {"mcp-name", "danger"}};
  auto call = [&](int id, json extra, const std::string& key = kKey) {
    json params = {{"name", "danger"}, {"arguments", {{"x", 3}}}, {"_meta", meta}};
    params.update(extra);
    return mcp_post(port(), rpc(id, "tools/call", params), key, headers).json();
  };
  const json first = call(3, json::object());
  const json asked = first["result"];
  ASSERT_EQ(asked["resultType"], "input_required") << first.dump();
  const std::string state = asked.value("requestState", "");
  ASSERT_FALSE(state.empty()) << first.dump();
  const json elicitation = asked["inputRequests"]["approval"];
  EXPECT_EQ(elicitation["method"], "elicitation/create") << first.dump();
  EXPECT_EQ(elicitation["params"]["mode"], "url") << first.dump();
  const json waiting = http(port(), "GET", "/v1/invocations/" + asked["_meta"].value(kInvocationIdMeta, "")).json();
  EXPECT_EQ(waiting["status"], "pending_approval") << waiting.dump();
  const std::string approval = waiting["approval"].value("id", "");
  ASSERT_FALSE(approval.empty()) << waiting.dump();
  // Under the origin the request named (this test's client sends Host without its port).
  EXPECT_EQ(elicitation["params"]["url"], "http://127.0.0.1/console/#approval/" + approval) << first.dump();
  EXPECT_FALSE(elicitation["params"].contains("elicitationId")) << "2026-07-28 has none";

  // Without URL-mode elicitation: the requestState alone.
  meta["io.modelcontextprotocol/clientCapabilities"] = json::object();
  const json plain = call(4, json::object())["result"];
  EXPECT_EQ(plain["resultType"], "input_required") << plain.dump();
  EXPECT_FALSE(plain.contains("inputRequests")) << plain.dump();

  EXPECT_EQ(call(5, {{"requestState", state}}, kOtherKey)["error"]["code"], -32602) << "another principal's retry";
  EXPECT_EQ(call(6, {{"requestState", "airlock.approval.v1.00000000-0000-0000-0000-000000000000"}})["error"]["code"],
            -32602) << "a forged state";
  EXPECT_EQ(call(7, {{"requestState", state + "x"}})["error"]["code"], -32602) << "an altered state";
  const json declined = call(8, {{"requestState", state}, {"inputResponses", {{"approval", {{"action", "decline"}}}}}});
  EXPECT_EQ(declined["result"]["resultType"], "complete") << declined.dump();
  EXPECT_EQ(declined["result"]["structuredContent"]["error"]["kind"], "pending_approval") << declined.dump();

  // The retry waits for the person's decision, then answers what the call gives.
  auto retry = std::async(std::launch::async, [&] {
    return call(9, {{"requestState", state}, {"inputResponses", {{"approval", {{"action", "accept"}}}}}});
  });
  EXPECT_EQ(retry.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout) << "it answers at the end";
  ASSERT_EQ(decide(approval, "approve", "bob").status, 200);
  const json answered = retry.get();
  EXPECT_EQ(answered["result"]["resultType"], "complete") << answered.dump();
  EXPECT_EQ(answered["result"]["structuredContent"]["echo"], (json{{"x", 3}})) << answered.dump();
}

// Issue #38, 2026-07-28 with the tasks extension (SEP-2663): a client that declares it gets
// the critical call as a task (resultType "task"), input_required with the approval page as its
// input request when it takes URL elicitations; tasks/update takes its answer (the task works
// again); tasks/get ends completed with the result tools/call would have given, a denial too
// (as an error result). The extension's shapes (ttlMs), its Mcp-Name header (the task's id),
// no tasks/result or tasks/list, nobody else's task, a withdrawal by tasks/cancel.
TEST_F(Approvals, ACriticalCallUnder20260728WithTheTasksExtensionIsATask) {
  auto meta = stateless_meta();
  meta["io.modelcontextprotocol/clientCapabilities"] = {{"elicitation", {{"url", json::object()}}},
                                                        {"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}};
  auto post = [&](int id, const std::string& method, json params, const std::string& name,
                  const std::string& key = kKey) {
    params["_meta"] = meta;
    return mcp_post(port(), rpc(id, method, params), key,
                    {{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", method}, {"mcp-name", name}});
  };
  auto task_request = [&](int id, const std::string& method, const std::string& task_id, json extra = json::object(),
                          const std::string& key = kKey) {
    extra["taskId"] = task_id;
    return post(id, method, extra, task_id, key).json();
  };
  const json created = post(1, "tools/call", {{"name", "danger"}, {"arguments", {{"x", 21}}}}, "danger").json();
  const json& task = created["result"];
  ASSERT_EQ(task["resultType"], "task") << created.dump();
  const std::string task_id = task.value("taskId", "");
  ASSERT_FALSE(task_id.empty()) << created.dump();
  EXPECT_EQ(task["status"], "input_required") << created.dump();
  EXPECT_TRUE(task.contains("ttlMs") && !task.contains("ttl")) << created.dump();
  EXPECT_TRUE(task.contains("pollIntervalMs") && !task.contains("pollInterval")) << created.dump();

  const json polled = task_request(2, "tasks/get", task_id)["result"];
  EXPECT_EQ(polled["resultType"], "complete") << polled.dump();
  EXPECT_EQ(polled["status"], "input_required") << polled.dump();
  const json asked = polled["inputRequests"]["approval"];
  EXPECT_EQ(asked["method"], "elicitation/create") << polled.dump();
  EXPECT_EQ(asked["params"]["mode"], "url") << polled.dump();
  const std::string approval = invocation(task_id)["approval"].value("id", "");
  EXPECT_EQ(asked["params"]["url"], "http://127.0.0.1/console/#approval/" + approval) << polled.dump();

  // Mcp-Name must be the task's id; 2026-07-28 has no tasks/result or tasks/list.
  json wrong_name = post(3, "tasks/get", {{"taskId", task_id}}, "another-task").json();
  EXPECT_EQ(wrong_name["error"]["code"], -32020) << wrong_name.dump();
  EXPECT_EQ(task_request(4, "tasks/result", task_id)["error"]["code"], -32601);
  EXPECT_EQ(post(5, "tasks/list", json::object(), "").json()["error"]["code"], -32601);
  // Nobody else's task, to read or to answer.
  EXPECT_EQ(task_request(6, "tasks/get", task_id, json::object(), kOtherKey)["error"]["code"], -32602);
  EXPECT_EQ(task_request(7, "tasks/update", task_id, {{"inputResponses", {{"approval", {{"action", "accept"}}}}}},
                         kOtherKey)["error"]["code"], -32602);
  EXPECT_EQ(task_request(8, "tasks/update", task_id, {{"inputResponses", "yes"}})["error"]["code"], -32602);

  const json updated = task_request(9, "tasks/update", task_id, {{"inputResponses", {{"approval", {{"action", "accept"}}}}}});
  EXPECT_EQ(updated["result"]["resultType"], "complete") << updated.dump();
  EXPECT_EQ(task_request(10, "tasks/get", task_id)["result"]["status"], "working") << "the page was shown";
  ASSERT_EQ(decide(approval, "approve", "bob").status, 200);
  (void)outcome(task_id);
  const json done = task_request(11, "tasks/get", task_id)["result"];
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["result"]["resultType"], "complete") << done.dump();
  EXPECT_EQ(done["result"]["structuredContent"]["echo"], (json{{"x", 21}})) << done.dump();

  // Denied: completed, its result the denial as tools/call answers it.
  const std::string denied = post(12, "tools/call", {{"name", "danger"}, {"arguments", {{"x", 22}}}}, "danger")
                                 .json()["result"].value("taskId", "");
  ASSERT_FALSE(denied.empty());
  ASSERT_EQ(decide(invocation(denied)["approval"].value("id", ""), "deny", "bob").status, 200);
  (void)outcome(denied);
  const json refused = task_request(13, "tasks/get", denied)["result"];
  EXPECT_EQ(refused["status"], "completed") << refused.dump();
  EXPECT_EQ(refused["result"]["isError"], true) << refused.dump();
  EXPECT_EQ(refused["result"]["structuredContent"]["error"]["kind"], "approval_denied") << refused.dump();

  // Withdrawn by tasks/cancel: acknowledged, and the task is cancelled.
  const std::string withdrawn = post(14, "tools/call", {{"name", "danger"}, {"arguments", {{"x", 23}}}}, "danger")
                                    .json()["result"].value("taskId", "");
  ASSERT_FALSE(withdrawn.empty());
  EXPECT_EQ(task_request(15, "tasks/cancel", withdrawn)["result"]["resultType"], "complete");
  EXPECT_EQ(task_request(16, "tasks/get", withdrawn)["result"]["status"], "cancelled");

  // A tool that runs at once answers its result, also to a client that takes tasks.
  const json immediate = post(17, "tools/call", {{"name", "echo"}, {"arguments", {{"y", 1}}}}, "echo").json();
  EXPECT_EQ(immediate["result"]["resultType"], "complete") << immediate.dump();
}

// The same with the official v2 client (@modelcontextprotocol/client): its elicitation
// handler gets the approval page, a person approves there, and callTool resolves with the
// tool's result (clients/v2_approval.mjs).
TEST_F(Approvals, TheV2ClientGetsACriticalCallsResultOnceAPersonApprovesAtTheElicitedPage) {
  const auto [status, out] = run_client("v2_approval.mjs");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok: the call's result arrived"), std::string::npos) << out;
}

// Issue #38: an MCP-only client gets a critical call's result once a person approves it, as an
// MCP task (2025-11-25): the call answers the task at once, tasks/get polls it, tasks/result
// waits for the end and answers what tools/call would have. Another principal cannot see it;
// a denied call's task fails with the denial as its result.
TEST_F(Approvals, ACriticalCallAsAnMcpTaskReachesTheClientOnceApproved) {
  const std::string revision = "2025-11-25";
  const auto headers = session_headers(open_session(port(), revision), revision);
  auto listed = mcp_post(port(), rpc(2, "tools/list"), kKey, headers).json();
  bool danger_offers_tasks = false;
  for (const auto& t : listed["result"]["tools"])
    if (t["name"] == "danger") danger_offers_tasks = t["execution"]["taskSupport"] == "optional";
  EXPECT_TRUE(danger_offers_tasks) << listed.dump();

  auto task_call = [&](int id, const std::string& tool) {
    return mcp_post(port(), rpc(id, "tools/call", {{"name", tool}, {"arguments", {{"x", id}}}, {"task", json::object()}}),
                    kKey, headers).json();
  };
  const json created = task_call(3, "danger");
  const json task = created["result"]["task"];
  const std::string task_id = task.value("taskId", "");
  ASSERT_FALSE(task_id.empty()) << created.dump();
  EXPECT_EQ(task["status"], "working") << created.dump();
  EXPECT_NE(task.value("statusMessage", "").find("approval"), std::string::npos) << created.dump();
  EXPECT_TRUE(created["result"]["_meta"].contains(kImmediateResponseMeta)) << created.dump();
  const std::string approval = http(port(), "GET", "/v1/invocations/" + task_id).json()["approval"].value("id", "");
  ASSERT_FALSE(approval.empty()) << "the task is the invocation, waiting for its approval";

  auto get = [&](const std::string& id, const std::string& key, const std::map<std::string, std::string>& h) {
    return mcp_post(port(), rpc(4, "tasks/get", {{"taskId", id}}), key, h).json();
  };
  const json polled = get(task_id, kKey, headers);
  EXPECT_EQ(polled["result"]["status"], "working") << polled.dump();
  EXPECT_GT(polled["result"].value("pollInterval", 0), 0) << polled.dump();
  EXPECT_EQ(polled["result"].value("createdAt", "").size(), 20u) << polled.dump();  // 2026-12-06T17:00:00Z
  const auto other = session_headers(open_session(port(), revision, kOtherKey), revision);
  EXPECT_EQ(get(task_id, kOtherKey, other)["error"]["code"], -32602) << "another principal's task is not found";
  EXPECT_EQ(mcp_post(port(), rpc(5, "tasks/result", {{"taskId", task_id}}), kOtherKey, other).json()["error"]["code"],
            -32602);

  // tasks/result waits for the end: a person's approval.
  auto result = std::async(std::launch::async, [&] {
    return mcp_post(port(), rpc(6, "tasks/result", {{"taskId", task_id}}), kKey, headers).json();
  });
  EXPECT_EQ(result.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout) << "it answers only at the end";
  ASSERT_EQ(decide(approval, "approve", "bob").status, 200);
  const json answered = result.get();
  EXPECT_EQ(answered["result"]["structuredContent"]["echo"], (json{{"x", 3}})) << answered.dump();
  EXPECT_EQ(answered["result"]["_meta"][kRelatedTaskMeta]["taskId"], task_id) << answered.dump();
  EXPECT_EQ(get(task_id, kKey, headers)["result"]["status"], "completed");

  // Denied: the task fails, and its result is the denial tools/call would have answered.
  const std::string denied_id = task_call(7, "danger")["result"]["task"].value("taskId", "");
  ASSERT_FALSE(denied_id.empty());
  const std::string denied_approval = http(port(), "GET", "/v1/invocations/" + denied_id).json()["approval"].value("id", "");
  ASSERT_EQ(decide(denied_approval, "deny", "bob").status, 200);
  const json denial = mcp_post(port(), rpc(8, "tasks/result", {{"taskId", denied_id}}), kKey, headers).json();
  EXPECT_EQ(denial["result"]["isError"], true) << denial.dump();
  EXPECT_EQ(denial["result"]["structuredContent"]["error"]["kind"], "approval_denied") << denial.dump();
  EXPECT_EQ(get(denied_id, kKey, headers)["result"]["status"], "failed");
}

// The JSON-RPC messages of a text/event-stream body (each event's data line), or the body
// itself when it was answered as plain JSON.
std::vector<json> stream_messages(const std::string& body) {
  std::vector<json> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find('\n', at);
    out.push_back(json::parse(body.substr(at + 6, end - at - 6)));
    at = end;
  }
  if (out.empty() && !body.empty()) out.push_back(json::parse(body));
  return out;
}

// Issue #38: under 2025-11-25, a client that declared URL-mode elicitation is shown where an
// approver decides. Its task is input_required while it waits for a person; tasks/result
// sends the approval's console page as an elicitation/create request (the task is working
// again), then notifications/elicitation/complete and the result once the call has ended.
TEST_F(Approvals, AnMcpTaskShowsItsClientTheApprovalPageAsAUrlElicitation) {
  const std::string revision = "2025-11-25";
  const auto opened = mcp_post(port(), rpc(1, "initialize", {{"protocolVersion", revision},
                                                           {"capabilities", {{"elicitation", {{"url", json::object()}}}}},
                                                           {"clientInfo", {{"name", "test"}, {"version", "1"}}}}));
  ASSERT_EQ(opened.status, 200) << opened.body;
  const auto headers = session_headers(opened.headers.at("mcp-session-id"), revision);
  const json created = mcp_post(port(), rpc(2, "tools/call", {{"name", "danger"}, {"arguments", {{"x", 11}}},
                                                              {"task", json::object()}}), kKey, headers).json();
  const std::string task_id = created["result"]["task"].value("taskId", "");
  ASSERT_FALSE(task_id.empty()) << created.dump();
  EXPECT_EQ(created["result"]["task"]["status"], "input_required") << created.dump();
  auto status = [&] {
    return mcp_post(port(), rpc(3, "tasks/get", {{"taskId", task_id}}), kKey, headers).json()["result"].value("status", "");
  };
  EXPECT_EQ(status(), "input_required");
  const std::string approval = invocation(task_id)["approval"].value("id", "");
  ASSERT_FALSE(approval.empty());

  auto result = std::async(std::launch::async, [&] {
    return mcp_post(port(), rpc(4, "tasks/result", {{"taskId", task_id}}), kKey, headers);
  });
  // The page was shown (the task works again) while the call still waits for its approver.
  for (int i = 0; i < 100 && status() != "working"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(status(), "working");
  EXPECT_EQ(invocation(task_id)["status"], "pending_approval");
  ASSERT_EQ(decide(approval, "approve", "bob").status, 200);
  const Reply answered = result.get();
  const auto messages = stream_messages(answered.body);
  ASSERT_EQ(messages.size(), 3u) << answered.body;
  const json& asked = messages[0];
  EXPECT_EQ(asked["method"], "elicitation/create") << asked.dump();
  EXPECT_TRUE(asked["id"].is_string()) << "a request the client answers";
  EXPECT_EQ(asked["params"]["mode"], "url") << asked.dump();
  EXPECT_EQ(asked["params"]["elicitationId"], approval) << asked.dump();
  EXPECT_EQ(asked["params"]["url"], "http://127.0.0.1/console/#approval/" + approval) << asked.dump();
  EXPECT_EQ(asked["params"]["_meta"][kRelatedTaskMeta]["taskId"], task_id) << asked.dump();
  EXPECT_EQ(messages[1]["method"], "notifications/elicitation/complete") << messages[1].dump();
  EXPECT_EQ(messages[1]["params"]["elicitationId"], approval) << messages[1].dump();
  EXPECT_EQ(messages[2]["result"]["structuredContent"]["echo"], (json{{"x", 11}})) << messages[2].dump();
  EXPECT_EQ(status(), "completed");
  // The client's answer to the elicitation is taken (202) and changes nothing.
  const auto accepted = mcp_post(port(), {{"jsonrpc", "2.0"}, {"id", asked["id"]}, {"result", {{"action", "accept"}}}},
                                 kKey, headers);
  EXPECT_EQ(accepted.status, 202) << accepted.body;
}

// The official SDK client (v1, 2025-11-25) with URL-mode elicitation: callToolStream makes the
// critical call a task, sees it input_required, takes tasks/result, and its elicitation handler
// gets the approval's page, where the approver decides; the result arrives after
// notifications/elicitation/complete (clients/sdk_task_approval.mjs).
TEST_F(Approvals, TheSdkClientsTaskShowsTheApprovalPageAndGetsTheResult) {
  const auto [status, out] = run_client("sdk_task_approval.mjs");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok: the call's result arrived"), std::string::npos) << out;
}

// The same through the stdio bridge (`airlock mcp --server`), as a desktop client reaches the
// daemon: the bridge passes the tasks/result stream's elicitation request to the client and
// the client's answer back.
TEST_F(Approvals, TheSdkClientsTaskShowsTheApprovalPageThroughTheStdioBridge) {
  const auto [status, out] = run_client("sdk_task_approval.mjs", AIRLOCK_BINARY);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok: the call's result arrived"), std::string::npos) << out;
}

// The official Tasks extension client (@modelcontextprotocol/ext-tasks) at 2026-07-28: the
// critical call is a task, its input request the approval page, its answer a tasks/update, and
// the result arrives by polling tasks/get (clients/ext_tasks_approval.mjs).
TEST_F(Approvals, TheTasksExtensionClientGetsACriticalCallsResultAsATask) {
  const auto [status, out] = run_client("ext_tasks_approval.mjs");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok: the call's result arrived"), std::string::npos) << out;
}

// A task's state is its invocation's row: after a restart of the daemon (or through another
// replica, which shares the rows) the task is polled and its result taken as before, by its
// owner only.
TEST_F(Approvals, AnMcpTaskOutlivesARestartOfTheDaemon) {
  const std::string revision = "2025-11-25";
  auto headers = session_headers(open_session(port(), revision), revision);
  const json created = mcp_post(port(), rpc(3, "tools/call", {{"name", "danger"}, {"arguments", {{"x", 5}}},
                                                              {"task", json::object()}}), kKey, headers).json();
  const std::string task_id = created["result"]["task"].value("taskId", "");
  ASSERT_FALSE(task_id.empty()) << created.dump();
  const std::string created_at = created["result"]["task"].value("createdAt", "");
  const std::string approval = invocation(task_id)["approval"].value("id", "");
  ASSERT_FALSE(approval.empty());

  stop();
  start();
  headers = session_headers(open_session(port(), revision), revision);
  const json polled = mcp_post(port(), rpc(4, "tasks/get", {{"taskId", task_id}}), kKey, headers).json();
  EXPECT_EQ(polled["result"]["status"], "working") << polled.dump();
  EXPECT_EQ(polled["result"]["createdAt"], created_at) << "dated by the row, not by this daemon";
  const auto other = session_headers(open_session(port(), revision, kOtherKey), revision);
  EXPECT_EQ(mcp_post(port(), rpc(5, "tasks/get", {{"taskId", task_id}}), kOtherKey, other).json()["error"]["code"], -32602);

  ASSERT_EQ(decide(approval, "approve", "bob").status, 200);
  const json answered = mcp_post(port(), rpc(7, "tasks/result", {{"taskId", task_id}}), kKey, headers).json();
  EXPECT_EQ(answered["result"]["structuredContent"]["echo"], (json{{"x", 5}})) << answered.dump();
}

// tasks/cancel of a task that waits for its approval withdraws it: the call ends cancelled
// without running, the approval is "withdrawn" (audited) and an approver can no longer approve
// it. tasks/list shows the caller's tasks, nobody else's. Cancelling it again, or another
// principal's cancel, is -32602.
TEST_F(Approvals, ACancelledMcpTaskIsWithdrawnAndNeverRuns) {
  const std::string revision = "2025-11-25";
  const auto headers = session_headers(open_session(port(), revision), revision);
  const auto other = session_headers(open_session(port(), revision, kOtherKey), revision);
  const json created = mcp_post(port(), rpc(3, "tools/call", {{"name", "danger"}, {"arguments", {{"x", 9}}},
                                                              {"task", json::object()}}), kKey, headers).json();
  const std::string task_id = created["result"]["task"].value("taskId", "");
  ASSERT_FALSE(task_id.empty()) << created.dump();
  const std::string approval = invocation(task_id)["approval"].value("id", "");
  ASSERT_FALSE(approval.empty());

  auto list = [&](const std::string& key, const std::map<std::string, std::string>& h) {
    return mcp_post(port(), rpc(4, "tasks/list"), key, h).json();
  };
  const json mine = list(kKey, headers);
  ASSERT_EQ(mine["result"]["tasks"].size(), 1u) << mine.dump();
  EXPECT_EQ(mine["result"]["tasks"][0]["taskId"], task_id) << mine.dump();
  EXPECT_EQ(mine["result"]["tasks"][0]["status"], "working") << mine.dump();
  EXPECT_EQ(list(kOtherKey, other)["result"]["tasks"], json::array()) << "nobody else's";

  auto cancel = [&](int id, const std::string& key, const std::map<std::string, std::string>& h) {
    return mcp_post(port(), rpc(id, "tasks/cancel", {{"taskId", task_id}}), key, h).json();
  };
  EXPECT_EQ(cancel(5, kOtherKey, other)["error"]["code"], -32602) << "another principal's cancel";
  const json cancelled = cancel(6, kKey, headers);
  EXPECT_EQ(cancelled["result"]["status"], "cancelled") << cancelled.dump();
  EXPECT_EQ(cancel(7, kKey, headers)["error"]["code"], -32602) << "a terminal task is not cancelled twice";

  const json result = mcp_post(port(), rpc(8, "tasks/result", {{"taskId", task_id}}), kKey, headers).json();
  EXPECT_EQ(result["result"]["structuredContent"]["error"]["kind"], "cancelled") << result.dump();
  const json stored = invocation(task_id);
  EXPECT_EQ(stored["error"]["kind"], "cancelled") << stored.dump();
  EXPECT_TRUE(stored["output"].is_null()) << "it never ran: " << stored.dump();
  const auto decided = decide(approval, "approve", "bob");
  EXPECT_EQ(decided.status, 409) << decided.body;
  EXPECT_EQ(http(port(), "GET", "/v1/approvals/" + approval, "", token("bob")).json()["status"], "withdrawn");
  const auto records = events(chain(task_id));
  EXPECT_NE(std::find(records.begin(), records.end(), "approval.withdrawn"), records.end())
      << ::testing::PrintToString(records);
  EXPECT_EQ(list(kKey, headers)["result"]["tasks"][0]["status"], "cancelled");
}

// The notifications/tasks/status a stream carried about task `id`, in order (their params).
std::vector<json> task_statuses(const std::vector<json>& messages, const std::string& id) {
  std::vector<json> out;
  for (const auto& m : messages)
    if (m.value("method", "") == "notifications/tasks/status" && m["params"].value("taskId", "") == id)
      out.push_back(m["params"]);
  return out;
}

bool told_terminal(const std::vector<json>& messages, const std::string& id) {
  const auto told = task_statuses(messages, id);
  return !told.empty() && told.back().value("status", "") != "working" && told.back().value("status", "") != "input_required";
}

// Issue #38: the session that made a task, with its GET stream open, is told of its status
// changes (2025-11-25's notifications/tasks/status, the Task as tasks/get answers it): working
// once a person approved it, then completed. Another session of the same principal and a
// session of another principal, their streams open too, are told nothing of it.
TEST_F(Approvals, AnMcpTasksSessionIsToldItsStatusChangesAndNoOtherSessionIs) {
  const std::string revision = "2025-11-25";
  const std::string mine = open_session(port(), revision);
  const std::string sibling = open_session(port(), revision);
  const std::string stranger = open_session(port(), revision, kOtherKey);
  const auto headers = session_headers(mine, revision);
  SseStream owner(port(), kKey, headers);
  SseStream same_principal(port(), kKey, session_headers(sibling, revision));
  SseStream other_principal(port(), kOtherKey, session_headers(stranger, revision));
  ASSERT_EQ(owner.status(), 200);
  ASSERT_EQ(same_principal.status(), 200);
  ASSERT_EQ(other_principal.status(), 200);

  const json created = mcp_post(port(), rpc(2, "tools/call", {{"name", "danger"}, {"arguments", {{"x", 21}}},
                                                              {"task", json::object()}}), kKey, headers).json();
  const std::string task_id = created["result"]["task"].value("taskId", "");
  ASSERT_FALSE(task_id.empty()) << created.dump();
  const std::string approval = invocation(task_id)["approval"].value("id", "");
  ASSERT_FALSE(approval.empty());
  ASSERT_EQ(decide(approval, "approve", "bob").status, 200);

  ASSERT_TRUE(owner.wait_for([&](const std::vector<json>& m) { return told_terminal(m, task_id); }))
      << "no terminal notifications/tasks/status: " << json(owner.messages()).dump();
  const auto told = task_statuses(owner.messages(), task_id);
  ASSERT_EQ(told.size(), 2u) << json(told).dump();
  EXPECT_EQ(told[0]["status"], "working") << "approved: it runs";
  EXPECT_EQ(told[0]["statusMessage"], "running") << told[0].dump();
  EXPECT_EQ(told[0]["createdAt"], created["result"]["task"]["createdAt"]) << told[0].dump();
  EXPECT_EQ(told[1]["status"], "completed") << told[1].dump();
  const json polled = mcp_post(port(), rpc(3, "tasks/get", {{"taskId", task_id}}), kKey, headers).json();
  EXPECT_EQ(told[1], polled["result"]) << "the notification is the task as tasks/get answers it";

  // Their streams end with their sessions: what they carried by then.
  for (const auto& [id, key] : {std::pair{sibling, std::string(kKey)}, std::pair{stranger, std::string(kOtherKey)}})
    EXPECT_EQ(http_with(port(), "DELETE", "/mcp", "", key, {{"mcp-session-id", id}}).status, 204);
  ASSERT_TRUE(same_principal.wait_ended());
  ASSERT_TRUE(other_principal.wait_ended());
  for (const SseStream* stream : {&same_principal, &other_principal})
    for (const auto& m : stream->messages())
      EXPECT_EQ(m.dump().find(task_id), std::string::npos) << "another session was told of the task: " << m.dump();
}

// The same with the official SDK client (v1, 2025-11-25): its transport's GET stream carries
// the notifications its handler parses with the SDK's TaskStatusNotificationSchema
// (clients/sdk_task_status.mjs).
TEST_F(Approvals, TheSdkClientIsToldItsTasksStatusOnItsStream) {
  const auto [status, out] = run_client("sdk_task_status.mjs");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok: the call's status arrived"), std::string::npos) << out;
}

// 2026-07-28 with the tasks extension: a subscriptions/listen stream that names the task
// (notifications.taskIds, the official @modelcontextprotocol/ext-tasks helpers) is acknowledged
// it and carries notifications/tasks: working once approved, then completed with the result.
// Another principal's stream naming it is not acknowledged it and carries nothing
// (clients/ext_tasks_listen.mjs).
TEST_F(Approvals, TheTasksExtensionClientIsToldItsTasksStatusThroughSubscriptionsListen) {
  const auto [status, out] = run_client("ext_tasks_listen.mjs", kOtherKey);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("ok: the task's status arrived through subscriptions/listen"), std::string::npos) << out;
}

// A denied task's notification says failed, a task withdrawn by tasks/cancel says cancelled:
// each the task as tasks/get answers it.
TEST_F(Approvals, AnMcpTasksSessionIsToldItsDenialAsFailedAndItsWithdrawalAsCancelled) {
  const std::string revision = "2025-11-25";
  const auto headers = session_headers(open_session(port(), revision), revision);
  SseStream stream(port(), kKey, headers);
  ASSERT_EQ(stream.status(), 200);
  auto make_task = [&](int id) {
    const json created = mcp_post(port(), rpc(id, "tools/call", {{"name", "danger"}, {"arguments", {{"x", id}}},
                                                                 {"task", json::object()}}), kKey, headers).json();
    return created["result"]["task"].value("taskId", "");
  };
  auto told = [&](const std::string& task_id) {
    EXPECT_TRUE(stream.wait_for([&](const std::vector<json>& m) { return told_terminal(m, task_id); }))
        << json(stream.messages()).dump();
    const auto statuses = task_statuses(stream.messages(), task_id);
    const json polled = mcp_post(port(), rpc(9, "tasks/get", {{"taskId", task_id}}), kKey, headers).json();
    EXPECT_EQ(statuses.size(), 1u) << "it never ran: " << json(statuses).dump();
    EXPECT_EQ(statuses.empty() ? json() : statuses.back(), polled["result"]);
    return statuses.empty() ? std::string() : statuses.back().value("status", "");
  };

  const std::string denied = make_task(3);
  ASSERT_FALSE(denied.empty());
  ASSERT_EQ(decide(invocation(denied)["approval"].value("id", ""), "deny", "bob").status, 200);
  EXPECT_EQ(told(denied), "failed");

  const std::string withdrawn = make_task(4);
  ASSERT_FALSE(withdrawn.empty());
  const json cancelled = mcp_post(port(), rpc(5, "tasks/cancel", {{"taskId", withdrawn}}), kKey, headers).json();
  ASSERT_EQ(cancelled["result"]["status"], "cancelled") << cancelled.dump();
  EXPECT_EQ(told(withdrawn), "cancelled");
}

// `airlock approvals` is a client of the same API: bob lists, shows and approves from a shell.
std::string run_cli(const std::string& args, int& status) {
  std::string out;
  FILE* p = ::popen((std::string(AIRLOCK_TOOLS_BINARY) + " approvals " + args + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  status = WEXITSTATUS(::pclose(p));
  return out;
}

// What a console shows: the list's bounded preview, one approval's context, and whether
// the caller may decide it (an approver yes; the requester and a non-approver no, and decide()
// refuses them anyway).
TEST_F(Approvals, AnApprovalCarriesItsContextAndWhetherTheCallerMayDecide) {
  auto p = pending_of(request("danger", {{"text", std::string(5000, 'x')}}));
  auto listed = http(port(), "GET", "/v1/approvals", "", token("bob")).json()["approvals"];
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["arguments_preview"].get<std::string>().size(), kArgumentsPreviewBytes);
  EXPECT_EQ(listed[0]["arguments_bytes"], 5011);  // {"text":"x...x"}
  EXPECT_FALSE(listed[0].contains("arguments"));
  EXPECT_EQ(listed[0]["risk"], "critical");
  auto shown = http(port(), "GET", "/v1/approvals/" + p.approval, "", token("bob")).json();
  EXPECT_EQ(shown["may_decide"], true);
  EXPECT_EQ(shown["context"]["risk"], "critical");
  EXPECT_TRUE(shown["context"]["egress"].is_array());
  EXPECT_TRUE(shown["context"]["credentials"].is_array());
  EXPECT_TRUE(shown["context"]["validator_findings"].is_array());
  auto own = http(port(), "GET", "/v1/approvals/" + p.approval, "", token("alice")).json();
  EXPECT_EQ(own["may_decide"], false) << "the requester sees it, and may not decide it";
  EXPECT_EQ(decide(p.approval, "approve", "alice").status, 403);
  EXPECT_EQ(http(port(), "GET", "/v1/approvals/" + p.approval, "", token("mallory")).status, 404);
  ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
  EXPECT_EQ(http(port(), "GET", "/v1/approvals/" + p.approval, "", token("bob")).json()["may_decide"], false)
      << "decided: nothing left to decide";
}

TEST_F(Approvals, TheCommandLineListsShowsAndDecides) {
  auto p = pending_of(request("danger-two", {{"x", 5}}));
  const std::string server = " --server http://127.0.0.1:" + std::to_string(port());
  int status = -1;
  auto listed = run_cli("list" + server + " --key " + token("bob"), status);
  EXPECT_EQ(status, 0) << listed;
  EXPECT_NE(listed.find(p.approval), std::string::npos) << listed;
  auto shown = run_cli("show " + p.approval + server + " --key " + token("bob"), status);
  EXPECT_EQ(status, 0) << shown;
  EXPECT_NE(shown.find("{\"x\":5}"), std::string::npos) << shown;
  // alice may not approve her own request from the shell either.
  auto own = run_cli("approve " + p.approval + server + " --key " + token("alice"), status);
  EXPECT_EQ(status, 1) << own;
  EXPECT_NE(own.find("separation of duties"), std::string::npos) << own;
  auto first = run_cli("approve " + p.approval + server + " --key " + token("bob") + " --reason looked", status);
  EXPECT_EQ(status, 0) << first;
  // carol's decision relayed by the other agent.
  auto second = run_cli("approve " + p.approval + server + " --key " + std::string(kOtherKey) +
                            " --subject-token " + token("carol") + " --reason fine",
                        status);
  EXPECT_EQ(status, 0) << second;
  EXPECT_EQ(outcome(p.invocation)["output"]["echo"], (json{{"x", 5}}));
  auto bad = run_cli("deny not-an-id" + server + " --key " + token("bob"), status);
  EXPECT_EQ(status, 2) << bad;
}

// An approval from the shell names what it approves: the arguments are shown and their SHA-256
// sent, or the hash given with --sha256 (from an earlier `show`), which the daemon holds against
// the pending arguments. An empty list says so.
TEST_F(Approvals, TheCommandLineApprovesTheArgumentsItShowedByTheirHash) {
  const std::string server = " --server http://127.0.0.1:" + std::to_string(port());
  int status = -1;
  auto none = run_cli("list" + server + " --key " + token("bob"), status);
  EXPECT_EQ(status, 0) << none;
  EXPECT_NE(none.find("no pending approvals"), std::string::npos) << none;

  auto p = pending_of(request("danger", {{"x", 7}}));
  const auto other = pipeline::canonical_sha256(json{{"x", 8}});
  ASSERT_TRUE(other.ok());
  auto refused = run_cli("approve " + p.approval + server + " --key " + token("bob") + " --sha256 " + *other, status);
  EXPECT_EQ(status, 1) << refused;
  EXPECT_NE(refused.find("arguments_changed"), std::string::npos) << refused;
  EXPECT_EQ(invocation(p.invocation)["status"], "pending_approval");

  const auto own = pipeline::canonical_sha256(json{{"x", 7}});
  ASSERT_TRUE(own.ok());
  auto approved = run_cli("approve " + p.approval + server + " --key " + token("bob") + " --reason seen", status);
  EXPECT_EQ(status, 0) << approved;
  EXPECT_NE(approved.find("approving:"), std::string::npos) << approved;
  EXPECT_NE(approved.find("{\"x\":7}"), std::string::npos) << approved;
  EXPECT_NE(approved.find(*own), std::string::npos) << approved;
  EXPECT_EQ(outcome(p.invocation)["output"]["echo"], (json{{"x", 7}}));
}

// Issue #33: critical tools whose credential is exchanged from the user's token
// (oauth-exchange). The upstream STS is the daemon's own POST /v1/token (as in
// credentials_token_test), the client authenticated by the agent's key, kept in the secret
// store as `agent-key`.
const char* kExchangeTools = R"(
  - name: danger-exchange
    risk: critical
    approval: {approvers: 1, timeout: 60s}
    runtime: {type: python, file: tools/exchanged_claims.py}
    credentials:
      - env: UPSTREAM_TOKEN
        oauth-exchange: {tokenEndpoint: "ENDPOINT", audience: airlock, scopes: [echo], clientSecret: agent-key}
  - name: danger-exchange-brief
    risk: critical
    approval: {approvers: 1, timeout: 1s}
    runtime: {type: python, file: tools/exchanged_claims.py}
    credentials:
      - env: UPSTREAM_TOKEN
        oauth-exchange: {tokenEndpoint: "ENDPOINT", audience: airlock, scopes: [echo], clientSecret: agent-key}
)";

class ApprovalsExchange : public Approvals {
 protected:
  void SetUp() override {
    Approvals::SetUp();
    auto secrets = creds::SecretStore::open(ws_.dir() + "/data");
    ASSERT_TRUE(secrets.ok()) << secrets.error().message;
    ASSERT_TRUE((*secrets)->set("agent-key", kKey).ok());
    std::string tools = kExchangeTools;
    const std::string endpoint = "http://127.0.0.1:" + std::to_string(port()) + "/v1/token";
    for (auto at = tools.find("ENDPOINT"); at != std::string::npos; at = tools.find("ENDPOINT"))
      tools.replace(at, 8, endpoint);
    reload(ws_.config_text() + tools);
  }

  Reply request_as(const std::string& tool, const json& arguments, const std::string& user_token) {
    return http_with(port(), "POST", "/v1/tools/" + tool + "/invoke", json{{"arguments", arguments}}.dump(), kKey,
                     {{"Airlock-Subject-Token", user_token}});
  }

  // Rows of approvals that keep a user token now (-1: the query failed).
  int kept_tokens() const {
    sqlite3* db = nullptr;
    int n = -1;
    if (sqlite3_open_v2((ws_.dir() + "/data/state.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_exec(
          db, "SELECT count(*) FROM approvals WHERE user_token IS NOT NULL",
          [](void* out, int, char** values, char**) {
            *static_cast<int*>(out) = std::atoi(values[0]);
            return 0;
          },
          &n, nullptr);
    }
    sqlite3_close(db);
    return n;
  }

  // Every byte of a database file and its write-ahead log.
  std::string file_bytes(const std::string& path) const {
    std::string out;
    for (const std::string& p : {path, path + "-wal"}) {
      std::ifstream in(p, std::ios::binary);
      out.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return out;
  }
};

// (a) The call waits; once approved, its credential is exchanged from alice's kept token: the
// tool's token speaks for alice, acted on by the agent. (b) While it waits, state.db holds
// neither her token nor the arguments in plain (sealed with the secret store's key), and
// nothing else Airlock wrote does. The stored token is deleted once the run has read it.
// (Before: the token was not kept, so the call failed credential_denied after the approval,
// and the arguments were plain text in state.db.)
TEST_F(ApprovalsExchange, ACriticalOAuthExchangeToolRunsWithTheKeptUserTokenAndNothingIsInPlain) {
  const std::string alice = token("alice");
  const json arguments = {{"var", "UPSTREAM_TOKEN"}, {"note", "wire 4711 EUR to acct-zz-secret-payee"}};
  auto p = pending_of(request_as("danger-exchange", arguments, alice));
  EXPECT_EQ(kept_tokens(), 1);
  const std::string signature = alice.substr(alice.rfind('.') + 1);
  const std::string state = file_bytes(ws_.dir() + "/data/state.db");
  ASSERT_FALSE(state.empty());
  EXPECT_EQ(state.find(signature), std::string::npos) << "state.db holds the user's token";
  EXPECT_EQ(state.find("acct-zz-secret-payee"), std::string::npos) << "state.db holds the arguments in plain";
  EXPECT_EQ(file_bytes(ws_.dir() + "/data/audit.db").find(signature), std::string::npos);
  auto shown = http(port(), "GET", "/v1/approvals/" + p.approval, "", token("bob"));
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(shown.json()["arguments"], arguments) << "the approver sees them, opened";
  auto listed = http(port(), "GET", "/v1/approvals", "", token("bob"));
  EXPECT_NE(listed.body.find("acct-zz-secret-payee"), std::string::npos) << "and their preview in the list";

  ASSERT_EQ(decide(p.approval, "approve", "bob").status, 200);
  auto done = outcome(p.invocation);
  ASSERT_EQ(done["status"], "ok") << done.dump();
  EXPECT_EQ(done["output"]["claims"]["sub"], "alice") << done.dump();
  EXPECT_EQ(done["output"]["claims"]["act"]["sub"], "agent") << done.dump();
  EXPECT_EQ(kept_tokens(), 0) << "read once by the run, then deleted";
  EXPECT_EQ(file_bytes(ws_.dir() + "/data/state.db").find(signature), std::string::npos);
}

// (c) A denied call's kept token goes with the deny, an expired one's with the expiry; a tool
// that exchanges nothing keeps no token at all.
TEST_F(ApprovalsExchange, TheKeptUserTokenIsDeletedWhenTheApprovalIsDeniedOrExpires) {
  auto denied = pending_of(request("danger-exchange", {{"x", 1}}));
  auto expiring = pending_of(request("danger-exchange-brief", {{"x", 2}}));
  EXPECT_EQ(kept_tokens(), 2);
  ASSERT_EQ(decide(denied.approval, "deny", "bob").status, 200);
  EXPECT_EQ(outcome(denied.invocation)["error"]["kind"], "approval_denied");
  EXPECT_EQ(outcome(expiring.invocation)["error"]["kind"], "approval_expired");
  EXPECT_EQ(kept_tokens(), 0);
  auto plain = pending_of(request("danger", {{"x", 3}}));
  EXPECT_EQ(kept_tokens(), 0) << "danger exchanges no token: none is kept";
  ASSERT_EQ(decide(plain.approval, "deny", "bob").status, 200);
}

// The kept token's own expiry ends the wait: the approval expires with it (past its exp the
// credential could not be exchanged), the message says why, and the token is deleted.
TEST_F(ApprovalsExchange, AnApprovalExpiresWithTheKeptUserToken) {
  auto r = request_as("danger-exchange", {{"x", 1}}, corp_->token("alice", json::array({"staff"}), std::chrono::seconds(3)));
  auto p = pending_of(r);
  EXPECT_EQ(kept_tokens(), 1);
  auto done = outcome(p.invocation);
  EXPECT_EQ(done["error"]["kind"], "approval_expired") << done.dump();
  EXPECT_NE(done["error"].value("message", "").find("user's token"), std::string::npos) << done.dump();
  EXPECT_EQ(kept_tokens(), 0);
}

// Issue #33: what an approver is shown is the text that runs. `arguments_json` is the
// canonical text arguments_sha256 covers, with integers past 2^53 digit-exact (a JavaScript
// number rounds them) and invisible characters kept (the console makes them visible).
TEST_F(Approvals, TheApprovalCarriesTheExactArgumentsTextItsHashCovers) {
  const std::string body = "{\"arguments\": {\"amount\": 12345678901234567891, \"n\": 9007199254740993, "
                           "\"neg\": -9007199254740993, \"payee\": \"ACME\u200b\U000E0041 Ltd\u2028\"}}";
  auto p = pending_of(http_with(port(), "POST", "/v1/tools/danger/invoke", body, kKey,
                                {{"Airlock-Subject-Token", token("alice")}}));
  auto shown = http(port(), "GET", "/v1/approvals/" + p.approval, "", token("bob"));
  ASSERT_EQ(shown.status, 200) << shown.body;
  const json j = shown.json();
  ASSERT_TRUE(j.contains("arguments_json") && j["arguments_json"].is_string()) << shown.body;
  const std::string text = j["arguments_json"];
  EXPECT_EQ(text, "{\"amount\":12345678901234567891,\"n\":9007199254740993,\"neg\":-9007199254740993,"
                  "\"payee\":\"ACME\u200b\U000E0041 Ltd\u2028\"}");
  EXPECT_EQ(audit::to_hex(audit::sha256(std::string_view(text))), j["arguments_sha256"])
      << "the text shown is the text the approval's hash covers";
  ASSERT_EQ(decide(p.approval, "approve", "bob", "", {{"reason", "ok"}, {"arguments_sha256", j["arguments_sha256"]}}).status, 200);
  auto done = outcome(p.invocation);
  EXPECT_EQ(done["output"]["echo"]["amount"].dump(), "12345678901234567891") << done.dump();
}

// Issue #33: the agent's stated reason ("reason" beside "arguments"; over MCP
// _meta["airlock/reason"]) is kept with the approval as text, DLP-redacted, audited; anything
// but a bounded string is refused.
TEST_F(Approvals, TheAgentsReasonIsKeptShownRedactedAndAudited) {
  const std::string reason = "<img src=x onerror=alert(1)> invoice 7 from jane.doe@example.com\u202e";
  auto with_reason = [&](const json& why) {
    return http_with(port(), "POST", "/v1/tools/danger/invoke", json{{"arguments", {{"payee", "ACME"}}}, {"reason", why}}.dump(),
                     kKey, {{"Airlock-Subject-Token", token("alice")}});
  };
  auto p = pending_of(with_reason(reason));
  auto shown = http(port(), "GET", "/v1/approvals/" + p.approval, "", token("bob")).json();
  const std::string kept = shown.value("reason", "");
  EXPECT_EQ(kept.find("jane.doe@example.com"), std::string::npos) << "DLP redacts the reason: " << kept;
  EXPECT_NE(kept.find("<img src=x onerror=alert(1)> invoice 7 from "), std::string::npos) << kept;
  EXPECT_NE(kept.find("\u202e"), std::string::npos) << "kept as sent, for the console to show escaped";
  EXPECT_EQ(shown["context"]["description"], "Pays an invoice. <img src=x onerror=\"alert(1)\">");
  EXPECT_EQ(shown["context"]["input_schema"]["properties"]["payee"]["description"], "Who is paid <script>alert(2)</script>");
  auto requested = chain(p.invocation).at(0);
  EXPECT_EQ(requested["event"], "approval.requested");
  EXPECT_EQ(requested["reason"], kept) << "the audit log keeps the reason the approvers saw";
  int status = -1;  // and `airlock approvals show`, escaped as the arguments are
  const std::string cli = run_cli("show " + p.approval + " --server http://127.0.0.1:" + std::to_string(port()) +
                                      " --key " + token("bob"), status);
  EXPECT_EQ(status, 0) << cli;
  EXPECT_NE(cli.find("tool \"Pays an invoice. <img src=x onerror=\\\"alert(1)\\\">\""), std::string::npos) << cli;
  EXPECT_NE(cli.find("the agent's reason \"<img src=x onerror=alert(1)> invoice 7 from "), std::string::npos) << cli;
  EXPECT_NE(cli.find("\\u202e\""), std::string::npos) << "the bidi override escaped in a terminal too: " << cli;

  expect_error(with_reason(42), 400, "invalid_input", "reason must be a string");
  expect_error(with_reason(std::string(2049, 'r')), 400, "invalid_input", "at most 2048");
  auto other = http_with(port(), "POST", "/v1/tools/danger/invoke", json{{"arguments", json::object()}, {"why", "x"}}.dump(),
                         kKey, {{"Airlock-Subject-Token", token("alice")}});
  expect_error(other, 400, "invalid_input", "unknown field 'why'");
  auto none = pending_of(request("danger", {{"payee", "ACME"}}));
  EXPECT_TRUE(http(port(), "GET", "/v1/approvals/" + none.approval, "", token("bob")).json()["reason"].is_null());

  json meta = stateless_meta();
  meta["airlock/reason"] = "over MCP: the quarterly invoice";
  auto call = rpc(4, "tools/call", {{"name", "danger"}, {"arguments", {{"payee", "ACME"}}}, {"_meta", meta}});
  auto r = mcp_post(port(), call, kKey, {{"mcp-protocol-version", "2026-07-28"}, {"mcp-method", "tools/call"}, {"mcp-name", "danger"}});
  ASSERT_EQ(r.status, 200) << r.body;
  // 2026-07-28: the call asks for input while it waits; its invocation names the approval.
  const std::string mcp_invocation = r.json()["result"]["_meta"].value(kInvocationIdMeta, "");
  const std::string mcp_approval = invocation(mcp_invocation)["approval"].value("id", "");
  ASSERT_FALSE(mcp_approval.empty()) << r.body;
  EXPECT_EQ(http(port(), "GET", "/v1/approvals/" + mcp_approval, "", token("bob")).json()["reason"],
            "over MCP: the quarterly invoice");
}

// Issue #33: the finished invocation names who approved it, when and why (and the agent's
// reason), to whoever may read the invocation; a denied one names who denied it.
TEST_F(Approvals, TheFinishedInvocationNamesWhoApprovedAndWhen) {
  auto p = pending_of(http_with(port(), "POST", "/v1/tools/danger/invoke",
                                json{{"arguments", {{"payee", "ACME"}}}, {"reason", "monthly rent"}}.dump(), kKey,
                                {{"Airlock-Subject-Token", token("alice")}}));
  const json waiting = invocation(p.invocation);
  ASSERT_TRUE(waiting.contains("approval")) << waiting.dump();
  EXPECT_EQ(waiting["approval"]["status"], "pending");
  EXPECT_EQ(waiting["approval"]["url"], "/v1/approvals/" + p.approval) << "the 202's fields are still there";
  ASSERT_EQ(decide(p.approval, "approve", "bob", "", {{"reason", "rent is due"}}).status, 200);
  const json done = outcome(p.invocation);
  ASSERT_EQ(done["status"], "ok") << done.dump();
  const json& approval = done["approval"];
  EXPECT_EQ(approval["id"], p.approval) << done.dump();
  EXPECT_EQ(approval["status"], "approved");
  EXPECT_EQ(approval["reason"], "monthly rent");
  EXPECT_TRUE(approval["decided_at"].is_string());
  ASSERT_EQ(approval["decisions"].size(), 1u) << done.dump();
  EXPECT_EQ(approval["decisions"][0]["approver"], (json{{"issuer", "corp"}, {"sub", "bob"}}));
  EXPECT_EQ(approval["decisions"][0]["decision"], "approve");
  EXPECT_EQ(approval["decisions"][0]["reason"], "rent is due");
  EXPECT_TRUE(approval["decisions"][0]["at"].is_string());

  auto denied = pending_of(request("danger", {{"payee", "EVIL"}}));
  ASSERT_EQ(decide(denied.approval, "deny", "carol", "", {{"reason", "not ours"}}).status, 200);
  const json ended = outcome(denied.invocation);
  EXPECT_EQ(ended["approval"]["status"], "denied") << ended.dump();
  EXPECT_EQ(ended["approval"]["decisions"][0]["approver"]["sub"], "carol");
  auto plain = invoke(port(), "echo", {{"n", 1}});
  EXPECT_FALSE(plain.json().contains("approval"));
  EXPECT_FALSE(invocation(plain.json()["id"])["approval"].is_object()) << "no approval: none named";
}

}  // namespace
}  // namespace airlock::server::test
