// Issue #21: approvals across replicas. Two daemons (two data directories) on one real
// PostgreSQL share the approvals, the invocations and the audit log: an approval requested on
// A and decided on B runs exactly once (one tool run, counted by a collector the tool posts
// to; one execution record in the shared log), and the caller's long poll on A answers with
// the result B produced. Two approvers approving at once on A and B: it still runs once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>

#include "audit/log_location.hpp"
#include "audit/log_reader.hpp"
#include "corp_issuer.hpp"
#include "server_test_support.hpp"
#include "state_store_support.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;


std::string tools_yaml(std::uint16_t collector_port) {
  return R"(
  - name: danger
    risk: critical
    approval: {approvers: 1, timeout: 120s}
    runtime: {type: python, file: tools/count_run.py}
    network: {forward: ["7000=127.0.0.1:)" +
         std::to_string(collector_port) + R"("]})";
}

class ApprovalsAcrossReplicas : public ::testing::Test {
 protected:
  void SetUp() override {
    // Pending calls are sealed with the secret store's key: replicas given the same key file
    // (docs/approvals.md) run each other's approved calls.
    if (share_key_) ::setenv("AIRLOCK_SECRETS_KEY_FILE", (a_ws_.dir() + "/shared-secrets.key").c_str(), 1);
    auto corp = CorpIssuer::open(a_ws_.dir());
    ASSERT_TRUE(corp.ok()) << corp.error().message;
    corp_.emplace(std::move(*corp));
    const auto location = state_.location();
    log_.postgres_url = location.postgres.url;
    log_.key_file = a_ws_.dir() + "/shared-audit.key";
    for (Workspace* ws : {&a_ws_, &b_ws_}) configure(*ws, location.postgres.url);
    a_ = std::make_unique<RunningDaemon>(a_ws_);
    b_ = std::make_unique<RunningDaemon>(b_ws_);
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    ::unsetenv("AIRLOCK_SECRETS_KEY_FILE");
  }

  // The approvals test's configuration, on the shared database with the shared keys.
  void configure(Workspace& ws, const std::string& url) {
    corp_->publish(ws.dir());
    ws.rewrite(corp_sections(), tools_yaml(collector_.port()));
    std::string yaml = with_local_critical_tier(ws.config_text());
    const std::string sqlite_block = "storage: {dataDir: data, checkpointEvery: 100}";
    const auto at = yaml.find(sqlite_block);
    ASSERT_NE(at, std::string::npos) << "the test workspace's storage block changed";
    yaml.replace(at, sqlite_block.size(),
                 "storage: {dataDir: data, checkpointEvery: 100, signingKeyFile: \"" + log_.key_file +
                     "\", tokenKeyFile: \"" + a_ws_.dir() + "/shared-token.key\", postgres: {url: \"" + url + "\"}}");
    ws.write_config(yaml);
  }

  std::string token(const std::string& sub) const {
    return corp_->token(sub, json::array({"staff", "approvers"}));
  }

  // alice asks on `port` through the agent: 202, the invocation and approval ids.
  std::pair<std::string, std::string> request(std::uint16_t port, const json& arguments) {
    auto r = http_with(port, "POST", "/v1/tools/danger/invoke", json{{"arguments", arguments}}.dump(), kKey,
                       {{"Airlock-Subject-Token", token("alice")}});
    EXPECT_EQ(r.status, 202) << r.body;
    auto j = r.json();
    return {j.value("id", ""), j["approval"].value("id", "")};
  }

  Reply decide(std::uint16_t port, const std::string& approval, const std::string& user) {
    return http_with(port, "POST", "/v1/approvals/" + approval + "/approve", json{{"reason", "checked"}}.dump(),
                     token(user), {});
  }

  // The records of the shared log about `invocation` that are its execution (not an event).
  int executions(const std::string& invocation) {
    auto reader = audit::LogReader::open(log_);
    EXPECT_TRUE(reader.ok());
    int n = 0;
    if (reader.ok())
      (void)reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
        auto record = json::parse(text, nullptr, false);
        const json fields = record.contains("fields") ? record["fields"] : record;
        n += fields.value("invocation_id", "") == invocation && !fields.contains("event");
        return true;
      });
    return n;
  }

  // Exactly one run reached the collector: the first body, and no second one (Collector::next
  // waits 20 s for it).
  void expect_one_run(const json& arguments) {
    EXPECT_EQ(json::parse(collector_.next(), nullptr, false), arguments);
    EXPECT_EQ(collector_.next(), "") << "the tool ran a second time";
  }

  bool share_key_ = true;
  Collector collector_;
  ::airlock::test::PostgresState state_;
  audit::LogLocation log_;
  Workspace a_ws_, b_ws_;
  std::optional<CorpIssuer> corp_;
  std::unique_ptr<RunningDaemon> a_, b_;
};

TEST_F(ApprovalsAcrossReplicas, RequestedOnAApprovedOnBRunsOnceAndAsLongPollAnswers) {
  const json arguments = {{"x", 1}};
  auto [invocation, approval] = request(a_->port, arguments);
  ASSERT_FALSE(approval.empty());
  // The caller waits on A (up to 60 s) for the result. At its deadline a poll answers what is
  // stored, which by then is B's result too: so the poll must be answered well before it (the
  // run takes a few seconds; a bound, not a measurement).
  const auto polled_at = std::chrono::steady_clock::now();
  auto poll = std::async(std::launch::async, [&, id = invocation] {
    return http(a_->port, "GET", "/v1/invocations/" + id + "?wait=60s");
  });
  auto shown = http(b_->port, "GET", "/v1/approvals/" + approval, "", token("bob"));
  ASSERT_EQ(shown.status, 200) << "B sees the approval A stored: " << shown.body;
  auto approved = decide(b_->port, approval, "bob");
  ASSERT_EQ(approved.status, 200) << approved.body;
  auto answered = poll.get();
  EXPECT_LT(std::chrono::steady_clock::now() - polled_at, std::chrono::seconds(45))
      << "A answered its poll at the deadline, not when B finished the invocation";
  ASSERT_EQ(answered.status, 200) << answered.body;
  EXPECT_EQ(answered.json()["status"], "ok") << answered.body;
  EXPECT_EQ(answered.json()["output"]["echo"], arguments) << answered.body;
  expect_one_run(arguments);
  EXPECT_EQ(executions(invocation), 1);
}

TEST_F(ApprovalsAcrossReplicas, ApprovedAtOnceOnAAndBRunsOnce) {
  const json arguments = {{"x", 2}};
  auto [invocation, approval] = request(b_->port, arguments);
  ASSERT_FALSE(approval.empty());
  auto on_a = std::async(std::launch::async, [&, id = approval] { return decide(a_->port, id, "bob"); });
  auto on_b = std::async(std::launch::async, [&, id = approval] { return decide(b_->port, id, "carol"); });
  const int a_status = on_a.get().status, b_status = on_b.get().status;
  EXPECT_EQ((a_status == 200) + (b_status == 200), 1) << a_status << " " << b_status;
  EXPECT_EQ((a_status == 409) + (b_status == 409), 1) << "the later decision finds it decided";
  expect_one_run(arguments);
  auto done = http(a_->port, "GET", "/v1/invocations/" + invocation + "?wait=30s");
  EXPECT_EQ(done.json()["status"], "ok") << done.body;
  EXPECT_EQ(executions(invocation), 1);
}

// Issue #33: replicas each with their own secrets key (the default: <dataDir>.secrets-key).
// B cannot open what A sealed: it shows the approval's arguments to nobody (503, naming the
// key), takes the decision (which needs no sealed column), and leaves the run to A, which
// holds the key: the call still runs once and A's poll answers.
class ApprovalsAcrossReplicasWithOwnKeys : public ApprovalsAcrossReplicas {
 protected:
  ApprovalsAcrossReplicasWithOwnKeys() { share_key_ = false; }
};

TEST_F(ApprovalsAcrossReplicasWithOwnKeys, AReplicaWithAnotherKeyLeavesTheRunToTheOneThatSealedIt) {
  const json arguments = {{"x", 3}};
  auto [invocation, approval] = request(a_->port, arguments);
  ASSERT_FALSE(approval.empty());
  auto shown = http(b_->port, "GET", "/v1/approvals/" + approval, "", token("bob"));
  EXPECT_EQ(shown.status, 503) << shown.body;
  EXPECT_NE(shown.body.find("same key file"), std::string::npos) << shown.body;
  ASSERT_EQ(decide(b_->port, approval, "bob").status, 200);
  auto done = http(a_->port, "GET", "/v1/invocations/" + invocation + "?wait=30s");
  EXPECT_EQ(done.json()["status"], "ok") << done.body;
  expect_one_run(arguments);
  EXPECT_EQ(executions(invocation), 1);
}

}  // namespace
}  // namespace airlock::server::test
