// The daemon through its HTTP API: authentication and authorization, input checks, the tool
// protocol's typed errors, one audit record per invocation, lookups and proofs, admission
// control, graceful shutdown. Real tools in real sandboxes.
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "audit/log_reader.hpp"
#include "audit/verify.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using namespace std::chrono_literals;

TEST(Api, HealthMetricsAndTheOpenApiDocument) {
  Workspace ws;
  RunningDaemon d(ws);
  auto health = http(d.port, "GET", "/healthz", "", "");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.json()["status"], "ok");
  auto doc = http(d.port, "GET", "/openapi.json", "", "").json();
  EXPECT_EQ(doc["openapi"], "3.1.0");
  EXPECT_TRUE(doc["paths"].contains("/v1/tools/{name}/invoke"));
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 1}}).status, 200);
  auto metrics = http(d.port, "GET", "/metrics", "", "");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.headers["content-type"].rfind("text/plain; version=0.0.4", 0), 0u);
  for (const char* family : {"airlock_invocations_total{status=\"ok\",tool=\"echo\"} 1", "airlock_sandboxes_running",
                             "airlock_queue_depth", "airlock_stage_seconds_bucket{stage=\"authenticate\",le=\"0.001\"}",
                             "airlock_invocation_seconds_count{tool=\"echo\"} 1"})
    EXPECT_NE(metrics.body.find(family), std::string::npos) << family << "\n" << metrics.body;
  EXPECT_EQ(http(d.port, "GET", "/nowhere").status, 404);
  EXPECT_EQ(http(d.port, "DELETE", "/healthz").status, 405);
}

TEST(Api, ToolsAreListedAsTheCallerMayUseThem) {
  Workspace ws;
  RunningDaemon d(ws);
  auto all = http(d.port, "GET", "/v1/tools").json()["tools"];
  EXPECT_GE(all.size(), 10u);
  auto other = http(d.port, "GET", "/v1/tools", "", kOtherKey).json()["tools"];
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0]["name"], "echo");
  auto echo = http(d.port, "GET", "/v1/tools/echo").json();
  EXPECT_EQ(echo["inputSchema"]["properties"]["n"]["maximum"], 10);
  EXPECT_EQ(http(d.port, "GET", "/v1/tools/crash", "", kOtherKey).status, 403);
  EXPECT_EQ(http(d.port, "GET", "/v1/tools/nope").status, 404);
  EXPECT_EQ(http(d.port, "GET", "/v1/tools", "", "").status, 401);
  EXPECT_EQ(http(d.port, "GET", "/v1/tools", "", "wrong-key").status, 401);
}

TEST(Invoke, SuccessCarriesTheWholeResponse) {
  Workspace ws;
  RunningDaemon d(ws);
  auto r = invoke(d.port, "echo", {{"n", 7}, {"word", "hi"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["tool"], "echo");
  EXPECT_EQ(j["output"]["echo"]["n"], 7);
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["verdict"], "ok");
  EXPECT_GT(j["usage"]["wall_ms"].get<int>(), 0);
  EXPECT_TRUE(j["redactions"].is_array());
  EXPECT_TRUE(j["egress"].is_array());
  EXPECT_EQ(j["audit"]["index"], 0);
  EXPECT_EQ(j["audit"]["leaf_hash"].get<std::string>().size(), 64u);
  EXPECT_FALSE(j["id"].get<std::string>().empty());
}

// A high-risk tool runs on its tier's backend, gVisor by default (docs/gvisor.md); critical
// stays refused (it needs a human approval). Without runsc the high tier is unavailable.
TEST(Invoke, AHighRiskToolRunsInGvisor) {
  Workspace ws("", R"(  - name: kernel-release-high
    risk: high
    runtime: {type: python, file: tools/kernel_release.py}
)");
  RunningDaemon d(ws);
  auto r = invoke(d.port, "dangerous", {{"n", 3}});
  if (::access("/usr/bin/runsc", X_OK) != 0) {
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_EQ(r.json()["error"]["kind"], "tier_unavailable") << r.body;
    GTEST_SKIP() << "runsc is not installed: the high tier is unavailable, as checked";
  }
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["status"], "ok") << r.body;
  EXPECT_EQ(j["output"]["echo"]["n"], 3) << r.body;
  EXPECT_EQ(j["verdict"], "ok") << r.body;
  // The Sentry answers uname: gVisor's kernel release, never the host's.
  auto how = invoke(d.port, "kernel-release-high", nlohmann::json::object());
  ASSERT_EQ(how.status, 200) << how.body;
  struct utsname host {};
  ::uname(&host);
  const std::string release = how.json()["output"]["release"].get<std::string>();
  EXPECT_FALSE(release.empty()) << how.body;
  EXPECT_NE(release, host.release) << how.body;
}

struct Refusal {
  std::string tool;
  nlohmann::json body;  // the whole request body
  std::string key;
  int http_status;
  std::string kind;
  std::string pointer;
};

class Refusals : public ::testing::TestWithParam<Refusal> {};

TEST_P(Refusals, AreTypedAndAudited) {
  Workspace ws;
  RunningDaemon d(ws);
  const auto& p = GetParam();
  auto r = http(d.port, "POST", "/v1/tools/" + p.tool + "/invoke",
                p.body.is_string() ? p.body.get<std::string>() : p.body.dump(), p.key);
  EXPECT_EQ(r.status, p.http_status) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["status"], "denied") << r.body;
  EXPECT_EQ(j["error"]["kind"], p.kind) << r.body;
  EXPECT_TRUE(j["output"].is_null());
  if (!p.pointer.empty()) {
    EXPECT_EQ(j["error"]["pointer"], p.pointer) << r.body;
  }
  if (p.http_status == 401) {
    // Failed authentications are recorded aggregated (one record per source and interval),
    // written at the latest when the daemon stops.
    EXPECT_EQ(r.headers["www-authenticate"], "Bearer");
    EXPECT_TRUE(j["audit"].is_null());
    d.daemon->shutdown();
    EXPECT_EQ(audit_records(ws.audit_path()), 1u);
    return;
  }
  EXPECT_TRUE(j["audit"].is_object()) << "every invocation, denied or not, is recorded";
  EXPECT_EQ(audit_records(ws.audit_path()), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Invoke, Refusals,
    ::testing::Values(
        Refusal{"echo", {{"arguments", nlohmann::json::object()}}, "", 401, "unauthenticated", ""},
        Refusal{"echo", {{"arguments", nlohmann::json::object()}}, "not-a-key", 401, "unauthenticated", ""},
        Refusal{"crash", {{"arguments", nlohmann::json::object()}}, kOtherKey, 403, "forbidden", ""},
        Refusal{"nope", {{"arguments", nlohmann::json::object()}}, kKey, 404, "unknown_tool", ""},
        Refusal{"echo", "{\"arguments\": {", kKey, 400, "invalid_input", ""},
        Refusal{"echo", {{"args", nlohmann::json::object()}}, kKey, 400, "invalid_input", "/arguments"},
        Refusal{"echo", {{"arguments", 5}}, kKey, 400, "invalid_input", "/arguments"},
        Refusal{"echo", {{"arguments", {{"n", 99}}}}, kKey, 400, "invalid_input", "/arguments/n"},
        Refusal{"echo", {{"arguments", {{"n", "seven"}}}}, kKey, 400, "invalid_input", "/arguments/n"},
        Refusal{"echo", {{"arguments", nlohmann::json::object()}, {"extra", 1}}, kKey, 400, "invalid_input", "/extra"}));
// launch-codes (critical) waits for an approval: tests/server/approvals_test.cpp. A tier no
// backend runs here: tests/server/tier_backends_test.cpp.

struct ToolFailure {
  std::string tool;
  std::string kind;
  std::string verdict;
};

class ToolFailures : public ::testing::TestWithParam<ToolFailure> {};

TEST_P(ToolFailures, AreTypedErrorsNotServerErrors) {
  Workspace ws;
  RunningDaemon d(ws);
  const auto& p = GetParam();
  auto r = invoke(d.port, p.tool, nlohmann::json::object());
  EXPECT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["status"], "error") << r.body;
  EXPECT_EQ(j["error"]["kind"], p.kind) << r.body;
  EXPECT_EQ(j["verdict"], p.verdict) << r.body;
  EXPECT_TRUE(j["output"].is_null());
  EXPECT_TRUE(j["audit"].is_object());
  // The daemon is fine afterwards.
  EXPECT_EQ(invoke(d.port, "echo", nlohmann::json::object()).json()["status"], "ok");
}

INSTANTIATE_TEST_SUITE_P(
    Protocol, ToolFailures,
    ::testing::Values(ToolFailure{"crash", "tool_crashed", "exit_nonzero"},
                      ToolFailure{"not-json", "invalid_output", "ok"},
                      ToolFailure{"big-output", "output_limit", "output_limit"},
                      ToolFailure{"promises-answer", "invalid_output", "ok"},
                      ToolFailure{"spin", "timeout", "timeout"},
                      ToolFailure{"fork-bomb", "timeout", "timeout"},
                      ToolFailure{"memory-bomb", "memory_limit", "memory_limit"}));

TEST(ProcessLimit, AForkBombAtTheProcessLimitSaysSoInUsageMessageAndAudit) {
  Workspace ws;
  RunningDaemon d(ws);
  auto j = invoke(d.port, "fork-bomb", nlohmann::json::object()).json();
  ASSERT_EQ(j["verdict"], "timeout") << j;
  if (j["usage"]["pids_peak"].is_null()) GTEST_SKIP() << "no pids cgroup here";
  EXPECT_EQ(j["usage"]["pids_limit_hit"], true) << j;
  EXPECT_NE(j["error"]["message"].get<std::string>().find("-process limit ("), std::string::npos)
      << j;
  auto reader = audit::LogReader::open(ws.audit_path());
  ASSERT_TRUE(reader.ok());
  auto record = reader->record(0);
  ASSERT_TRUE(record.ok());
  auto r = nlohmann::json::parse(*record);
  EXPECT_EQ(r["usage"]["pids_limit_hit"], 1) << r;
  EXPECT_TRUE(audit::verify_log(*reader)->intact());
}

TEST(Audit, OneRecordPerInvocationAndNoneForRequestsThatNeverBecameOne) {
  Workspace ws;
  RunningDaemon d(ws);
  int invocations = 0;
  for (const char* tool : {"echo", "crash", "nope", "dangerous", "echo"}) {
    invoke(d.port, tool, nlohmann::json::object());
    ++invocations;
  }
  invoke(d.port, "echo", nlohmann::json::object(),
         "");  // aggregated: recorded at the latest at stop
  EXPECT_EQ(http(d.port, "POST", "/v1/tools/echo/invoke", std::string(100 * 1024, 'x')).status, 413);
  EXPECT_EQ(http(d.port, "GET", "/v1/tools").status, 200);
  EXPECT_EQ(audit_records(ws.audit_path()), static_cast<std::uint64_t>(invocations));
  d.daemon->shutdown();
  EXPECT_EQ(audit_records(ws.audit_path()), static_cast<std::uint64_t>(invocations + 1));
}

TEST(Audit, InvocationsCanBeLookedUpAndProven) {
  Workspace ws;
  RunningDaemon d(ws);
  invoke(d.port, "echo", {{"n", 1}});
  auto first = invoke(d.port, "echo", {{"n", 2}}).json();
  auto stored = http(d.port, "GET", "/v1/invocations/" + first["id"].get<std::string>());
  EXPECT_EQ(stored.status, 200);
  auto stored_json = stored.json();
  EXPECT_NE(stored_json["log"].get<std::string>().find("goes to its log"), std::string::npos) << stored.body;
  stored_json.erase("log");
  EXPECT_EQ(stored_json, first);
  EXPECT_EQ(http(d.port, "GET", "/v1/invocations/" + first["id"].get<std::string>(), "", kOtherKey).status, 404);
  EXPECT_EQ(http(d.port, "GET", "/v1/invocations/no-such-id").status, 404);

  auto checkpoint = http(d.port, "GET", "/v1/audit/checkpoint").json();
  EXPECT_EQ(checkpoint["checkpoint"]["size"], 2);
  auto proof = http(d.port, "GET", "/v1/audit/proof/1");
  ASSERT_EQ(proof.status, 200) << proof.body;
  EXPECT_TRUE(audit::verify_record_proof(proof.json()).ok());
  auto tampered = proof.json();
  tampered["record"] = tampered["record"].get<std::string>() + " ";
  EXPECT_FALSE(audit::verify_record_proof(tampered).ok());
  EXPECT_EQ(http(d.port, "GET", "/v1/audit/proof/99").status, 404);
  EXPECT_EQ(http(d.port, "GET", "/v1/audit/proof/x").status, 400);
}

// Without a `concurrent` quota a principal may have maxConcurrentInvocations + queueLength
// calls admitted at once (what the one queue held before quotas, docs/daemon.md).
TEST(Admission, AFullDaemonIsAnsweredWith429AndRetryAfter) {
  Workspace ws("server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 1, queueLength: 0}");
  RunningDaemon d(ws);
  auto slow = std::async(std::launch::async, [&] { return invoke(d.port, "slow", {{"seconds", 3}}); });
  // Wait until the slow one holds the only worker.
  for (int i = 0; i < 200 && http(d.port, "GET", "/metrics").body.find("airlock_sandboxes_running 1") == std::string::npos; ++i)
    std::this_thread::sleep_for(20ms);
  auto refused = invoke(d.port, "echo", nlohmann::json::object());
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.headers["retry-after"], "1");
  EXPECT_EQ(refused.json()["error"]["kind"], "quota_exceeded");
  EXPECT_EQ(refused.json()["error"]["quota"], "concurrent");
  EXPECT_EQ(slow.get().json()["status"], "ok");
}

TEST(Shutdown, RunningInvocationsFinishAndACheckpointCoversThem) {
  Workspace ws;
  auto d = std::make_unique<RunningDaemon>(ws);
  auto slow = std::async(std::launch::async, [&] { return invoke(d->port, "slow", {{"seconds", 2}}); });
  for (int i = 0; i < 200 && http(d->port, "GET", "/metrics").body.find("airlock_sandboxes_running 1") == std::string::npos; ++i)
    std::this_thread::sleep_for(20ms);
  const auto port = d->port;
  std::thread stopper([&] { d->daemon->shutdown(); });
  std::this_thread::sleep_for(300ms);
  auto late = invoke(port, "echo", nlohmann::json::object());
  EXPECT_TRUE(late.status == 0 || late.status == 503) << late.status;  // refused or draining
  auto finished = slow.get();
  EXPECT_EQ(finished.json()["status"], "ok") << finished.body;
  stopper.join();
  d.reset();
  auto reader = audit::LogReader::open(ws.audit_path());
  ASSERT_TRUE(reader.ok());
  auto report = audit::verify_log(*reader);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->intact()) << audit::describe(report->findings.front());
  EXPECT_EQ(report->unsigned_records(), 0u);
  EXPECT_EQ(report->records, 1u);  // the late request never became an invocation
}

TEST(Shutdown, InvocationsPastTheDrainTimeoutAreStoppedAndRecorded) {
  Workspace ws("server: {listen: 127.0.0.1:0, drainTimeout: 1s}");
  auto d = std::make_unique<RunningDaemon>(ws);
  auto slow = std::async(std::launch::async, [&] { return invoke(d->port, "slow", {{"seconds", 25}}); });
  for (int i = 0; i < 200 && http(d->port, "GET", "/metrics").body.find("airlock_sandboxes_running 1") == std::string::npos; ++i)
    std::this_thread::sleep_for(20ms);
  auto start = std::chrono::steady_clock::now();
  d->daemon->shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  auto j = slow.get().json();
  EXPECT_EQ(j["status"], "error");
  EXPECT_EQ(j["error"]["kind"], "stopped") << j.dump();
  EXPECT_TRUE(j["audit"].is_object());
}

}  // namespace
}  // namespace airlock::server::test
