// Issue #22 end to end: quotas and the fair queue against a real daemon (docs/daemon.md,
// "Quotas and the fair queue"). `agent` is the runaway (it floods), `other` the victim; each
// test runs the flood or the overuse for real and asserts who was refused and who was not.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "identity/base64url.hpp"
#include "identity/signer.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The usual workspace with a quotas section after the tools.
Workspace with_quotas(const std::string& server_yaml, const std::string& quotas) {
  Workspace ws;
  ws.rewrite(server_yaml, "");
  ws.write_config(ws.config_text() + quotas);
  return ws;
}

bool refused_by(const Reply& r, const std::string& quota) {
  return r.status == 429 && r.json()["error"]["kind"] == "quota_exceeded" && r.json()["error"]["quota"] == quota &&
         r.headers.count("retry-after") == 1;
}

// The issue's two agents, on the default server limits: one floods with 200 slow calls at
// once, 4 at a time allowed; the other makes 50 sequential calls meanwhile. The flood's calls
// past 4 are refused with quota_exceeded naming `concurrent` (or queue_full while the intake,
// 72 places, is full of them); every one of the other agent's calls goes through: the flood
// fills only its own share of the intake (before, the victim got queue_full here). (Its latency under the flood
// is bench/load's BM_TwoAgents: tests assert no timings.)
TEST(Quotas, AFloodingAgentIsRefusedPastItsQuotaAndTheOtherIsNot) {
  Workspace ws = with_quotas("server: {listen: 127.0.0.1:0}", "quotas:\n  default: {concurrent: 4}\n");
  RunningDaemon d(ws);
  std::vector<std::future<Reply>> flood;
  for (int i = 0; i < 200; ++i)
    flood.push_back(std::async(std::launch::async, [&] { return invoke(d.port, "slow", {{"seconds", 2}}); }));
  int victim_ok = 0;
  for (int i = 0; i < 50; ++i) {
    auto r = invoke(d.port, "echo", {{"n", i % 10}}, kOtherKey);
    EXPECT_EQ(r.status, 200) << r.body;
    victim_ok += r.status == 200 && r.json()["status"] == "ok";
  }
  EXPECT_EQ(victim_ok, 50);
  int ran = 0, refused = 0, queue_full = 0;
  for (auto& f : flood) {
    auto r = f.get();
    if (r.status == 200 && r.json()["status"] == "ok") ++ran;
    else if (refused_by(r, "concurrent")) ++refused;
    else if (r.status == 429 && r.json()["error"]["kind"] == "queue_full") ++queue_full;
    else ADD_FAILURE() << r.status << " " << r.body;
  }
  EXPECT_GE(ran, 4);
  EXPECT_EQ(ran + refused + queue_full, 200);
  EXPECT_GT(refused, 0) << queue_full << " queue_full";
  auto metrics = http(d.port, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("airlock_quota_rejections_total{principal=\"agent\",quota=\"concurrent\"}"), std::string::npos)
      << metrics;
}

// No quota at all, two workers: 20 slow calls of one agent wait in its lane; the other
// agent's call is taken at the next free worker, not after the 20 (a FIFO would put it last).
TEST(FairQueue, AnotherAgentsCallIsNotQueuedBehindAFlood) {
  Workspace ws = with_quotas("server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 2, queueLength: 64}", "");
  RunningDaemon d(ws);
  std::atomic<int> flood_done{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 20; ++i)
    flood.emplace_back([&] {
      auto r = invoke(d.port, "slow", {{"seconds", 1}});
      EXPECT_EQ(r.status, 200) << r.body;
      ++flood_done;
    });
  // Until the flood holds both workers and has calls waiting behind them.
  for (int i = 0; i < 500 && http(d.port, "GET", "/metrics").body.find("airlock_sandboxes_running 2") == std::string::npos; ++i)
    std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(200ms);
  auto r = invoke(d.port, "echo", {{"n", 1}}, kOtherKey);
  const int finished_before_victim = flood_done.load();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "ok");
  // At most one flood call per worker ended before the victim's call was taken, plus those
  // that ended while it ran: far from the 20 a FIFO queue would make it wait for.
  EXPECT_LE(finished_before_victim, 6);
  for (auto& t : flood) t.join();
  EXPECT_EQ(flood_done.load(), 20);
}

// An identity provider that hangs: every request is answered (an empty JWKS) after `delay`.
class HungIdentityProvider {
 public:
  explicit HungIdentityProvider(std::chrono::milliseconds delay) : delay_(delay) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("the identity provider's socket");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~HungIdentityProvider() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  int requests() const { return requests_.load(); }

 private:
  void serve() {
    for (;;) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string head;
      char buf[4096];
      ssize_t n;
      while (head.find("\r\n\r\n") == std::string::npos && (n = ::read(c, buf, sizeof buf)) > 0) head.append(buf, n);
      ++requests_;
      std::this_thread::sleep_for(delay_);
      const std::string body = R"({"keys":[]})";
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n" + body;
      (void)!::write(c, answer.data(), answer.size());
      ::close(c);
    }
  }
  std::chrono::milliseconds delay_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// A user token of the hung provider's issuer: verifying it waits for that provider's keys.
std::string token_of_hung_issuer() {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const json header = {{"alg", "EdDSA"}, {"kid", "k1"}, {"typ", "JWT"}};
  const json payload = {{"iss", "https://idp.hung.example"}, {"aud", "airlock"}, {"sub", "u"}, {"iat", now}, {"exp", now + 600}};
  return identity::base64url_encode(header.dump()) + "." + identity::base64url_encode(payload.dump()) + ".AAAA";
}

bool metric_reads(std::uint16_t port, const std::string& line) {
  for (int i = 0; i < 1000; ++i) {
    if (http(port, "GET", "/metrics").body.find(line + "\n") != std::string::npos) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// One worker (busy with a slow call) and the intake's own thread (waiting for the hung
// provider's keys, 3 s): what comes next stays in the intake, `places` in all. Both agents
// have called once before: their credentials are verified.
struct BlockedIntake {
  HungIdentityProvider idp{3000ms};
  Workspace ws;
  std::unique_ptr<RunningDaemon> d;
  std::future<Reply> slow, hung;

  explicit BlockedIntake(int places) {
    ws.rewrite("server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 1, queueLength: " + std::to_string(places - 1) + "}", "");
    ws.write_config(ws.config_text() +
                    "identity:\n  issuers:\n    - {name: hung, issuer: https://idp.hung.example, audiences: [airlock], "
                    "jwksUrl: http://127.0.0.1:" + std::to_string(idp.port()) + "/jwks}\n");
    d = std::make_unique<RunningDaemon>(ws);
    EXPECT_EQ(invoke(d->port, "echo", {{"n", 0}}).status, 200);
    EXPECT_EQ(invoke(d->port, "echo", {{"n", 0}}, kOtherKey).status, 200);
    slow = std::async(std::launch::async, [this] { return invoke(d->port, "slow", {{"seconds", 4}}); });
    EXPECT_TRUE(metric_reads(d->port, "airlock_sandboxes_running 1"));
    hung = std::async(std::launch::async, [this] {
      return http_with(d->port, "POST", "/v1/tools/echo/invoke", R"({"arguments":{"n":1}})", "",
                       {{"Authorization", "Bearer " + token_of_hung_issuer()}});
    });
    for (int i = 0; i < 500 && idp.requests() == 0; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(idp.requests(), 1) << "the intake's thread never asked for the keys";
  }
  std::future<Reply> send_async(const std::string& authorization) {
    return std::async(std::launch::async, [this, authorization] {
      return http_with(d->port, "POST", "/v1/tools/echo/invoke", R"({"arguments":{"n":2}})", "",
                       {{"Authorization", authorization}});
    });
  }
  ~BlockedIntake() {
    if (slow.valid()) slow.wait();
    if (hung.valid()) hung.wait();
  }
};

bool queue_full(const Reply& r) { return r.status == 429 && r.json()["error"]["kind"] == "queue_full"; }

// Issue #33: the intake's share is the principal a credential was verified as, not the text
// of the Authorization header. The agent's two waiting requests, spelt `Bearer` and `bearer`,
// fill the intake (two places); they are one caller, so the other agent's request takes the
// newer one's place. (Before, they were two callers holding one each, and the other agent was
// answered queue_full: any agent could take N shares by spelling its header N ways.)
TEST(FairQueue, AnAgentHoldsOneShareOfTheIntakeHoweverItSpellsItsHeader) {
  BlockedIntake b(2);
  auto first = b.send_async(std::string("Bearer ") + kKey);
  ASSERT_TRUE(metric_reads(b.d->port, "airlock_queue_depth 1"));
  auto second = b.send_async(std::string("bearer ") + kKey);
  ASSERT_TRUE(metric_reads(b.d->port, "airlock_queue_depth 2"));
  auto victim = invoke(b.d->port, "echo", {{"n", 3}}, kOtherKey);
  EXPECT_EQ(victim.status, 200) << victim.body;
  EXPECT_EQ(victim.json()["status"], "ok") << victim.body;
  auto displaced = second.get();
  EXPECT_TRUE(queue_full(displaced)) << displaced.status << " " << displaced.body;
  EXPECT_EQ(first.get().status, 200);
  EXPECT_EQ(b.hung.get().status, 401);
}

// Credentials never verified (fresh, forged) are each a caller of their own, and together they
// hold at most half the intake: four forged tokens take two of the four places and the next
// two are refused at once; a verified caller still finds a place. (Before, the forged ones
// took all four and the other agent was answered queue_full.)
TEST(FairQueue, UnverifiedCredentialsHoldAtMostHalfTheIntake) {
  BlockedIntake b(4);
  std::vector<std::future<Reply>> forged;
  for (int i = 0; i < 4; ++i) forged.push_back(b.send_async("Bearer forged-" + std::to_string(i)));
  ASSERT_TRUE(metric_reads(b.d->port, "airlock_queue_depth 2"));
  int refused_at_once = 0;
  std::this_thread::sleep_for(300ms);  // the refused ones are answered at once, not after the 3 s
  for (auto& f : forged)
    if (f.wait_for(0s) == std::future_status::ready) refused_at_once += queue_full(f.get());
  EXPECT_EQ(refused_at_once, 2);
  auto victim = invoke(b.d->port, "echo", {{"n", 3}}, kOtherKey);
  EXPECT_EQ(victim.status, 200) << victim.body;
  for (auto& f : forged) {
    if (f.valid()) {
      EXPECT_EQ(f.get().status, 401);
    }
  }
}

// An admitted call that waits for a worker past server.queueTimeout is answered 429
// quota_exceeded (quota "queueTimeout") at its deadline, while the call ahead of it still
// holds the only worker: not left waiting silently until a worker frees up. It never ran.
TEST(FairQueue, AWaitPastTheQueueTimeoutIsRefusedNotSilent) {
  Workspace ws = with_quotas("server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 1, queueLength: 8, queueTimeout: 1s}", "");
  RunningDaemon d(ws);
  auto slow = std::async(std::launch::async, [&] { return invoke(d.port, "slow", {{"seconds", 8}}); });
  for (int i = 0; i < 500 && http(d.port, "GET", "/metrics").body.find("airlock_sandboxes_running 1") == std::string::npos; ++i)
    std::this_thread::sleep_for(10ms);
  auto waited = invoke(d.port, "echo", {{"n", 1}}, kOtherKey);
  // The call ahead of it still runs: the refusal did not wait for the worker.
  EXPECT_NE(http(d.port, "GET", "/metrics").body.find("airlock_sandboxes_running 1"), std::string::npos);
  EXPECT_EQ(slow.wait_for(0s), std::future_status::timeout) << "the refusal came only when the worker was free";
  ASSERT_TRUE(refused_by(waited, "queueTimeout")) << waited.status << " " << waited.body;
  EXPECT_TRUE(waited.json()["usage"].is_null()) << "nothing ran";
  auto stored = http(d.port, "GET", "/v1/invocations/" + waited.json()["id"].get<std::string>(), "", kOtherKey);
  EXPECT_EQ(stored.json()["error"]["quota"], "queueTimeout") << stored.body;  // recorded like any denial
  EXPECT_EQ(slow.get().json()["status"], "ok");
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 2}}, kOtherKey).status, 200);
}

// rate 2/s with a burst of 2: the third quick call is refused with a Retry-After computed
// from the bucket; the other agent has a bucket of its own.
TEST(Quotas, ARateAboveTheBucketIsRefusedWithRetryAfter) {
  Workspace ws = with_quotas("", "quotas:\n  default: {rate: 1/m, burst: 2}\n");
  RunningDaemon d(ws);
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 1}}).status, 200);
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 2}}).status, 200);
  auto third = invoke(d.port, "echo", {{"n", 3}});
  ASSERT_TRUE(refused_by(third, "rate")) << third.status << " " << third.body;
  const int retry = std::stoi(third.headers["retry-after"]);
  EXPECT_GE(retry, 1);
  EXPECT_LE(retry, 60);  // one token of 1/m
  EXPECT_EQ(third.json()["error"]["retry_after"], retry);
  EXPECT_NE(third.json()["error"]["message"].get<std::string>().find("principal agent"), std::string::npos);
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 1}}, kOtherKey).status, 200);
  // Its refusal is audited like any denial: the log has a record for it.
  auto stored = http(d.port, "GET", "/v1/invocations/" + third.json()["id"].get<std::string>());
  EXPECT_EQ(stored.json()["error"]["kind"], "quota_exceeded") << stored.body;
}

// A tool that spins uses up its principal's CPU-seconds: the next call is refused until the
// window moves, then admitted again.
TEST(Quotas, ASpinningToolUsesUpItsPrincipalsCpuBudget) {
  // 0.1 s: what the spin gets of its 1 s timeout even on a busy machine.
  Workspace ws = with_quotas("", "quotas:\n  principals:\n    agent: {cpuSeconds: 0.1/3s}\n");
  RunningDaemon d(ws);
  auto spun = invoke(d.port, "spin", json::object());
  ASSERT_EQ(spun.status, 200) << spun.body;
  EXPECT_EQ(spun.json()["error"]["kind"], "timeout") << spun.body;
  const json usage = spun.json()["usage"];
  ASSERT_GE(usage.value("cpu_user_ms", 0) + usage.value("cpu_sys_ms", 0), 100)
      << "the spin got less CPU than the budget: " << spun.body;
  auto next = invoke(d.port, "echo", {{"n", 1}});
  ASSERT_TRUE(refused_by(next, "cpuSeconds")) << next.status << " " << next.body;
  const int retry = std::stoi(next.headers["retry-after"]);
  EXPECT_LE(retry, 3);
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 1}}, kOtherKey).status, 200);  // its own budget
  std::this_thread::sleep_for(std::chrono::seconds(retry) + 200ms);
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 2}}).status, 200);
}

// quotas.users counts a user across agents: two slow calls for alice through two agents
// hold her places, and a third, through either agent, is refused naming her.
TEST(Quotas, AUsersConcurrentQuotaHoldsAcrossAgents) {
  Workspace ws;
  auto corp = identity::TokenSigner::load_or_create(ws.dir() + "/corp.key");
  ASSERT_TRUE(corp.ok());
  std::ofstream(ws.dir() + "/corp-jwks.json") << corp->jwks().dump();
  ws.rewrite(R"(server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 6, queueLength: 64}
identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksFile: corp-jwks.json}
roles:
  - name: staff
    rules:
      - {effect: allow, actions: [invoke], tools: ["slow", "echo"], maxRisk: low}
bindings:
  - role: staff
    users: [{issuer: corp, claim: sub, value: alice}])", "");
  std::string yaml = ws.config_text();
  yaml.replace(yaml.find("tools: [\"echo\"]"), std::string("tools: [\"echo\"]").size(), "tools: [\"echo\", \"slow\"]");
  ws.write_config(yaml + "quotas:\n  users: {concurrent: 2}\n");
  RunningDaemon d(ws);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string alice = *corp->issue({{"iss", "https://idp.corp.example"}, {"aud", "airlock"}, {"sub", "alice"},
                                          {"iat", now}, {"exp", now + 300}, {"jti", "jti-alice"}});
  auto call = [&](const std::string& key, const std::string& tool, json args) {
    return http_with(d.port, "POST", "/v1/tools/" + tool + "/invoke", json{{"arguments", args}}.dump(), key,
                     {{"Airlock-Subject-Token", alice}});
  };
  auto first = std::async(std::launch::async, [&] { return call(kKey, "slow", {{"seconds", 3}}); });
  auto second = std::async(std::launch::async, [&] { return call(kOtherKey, "slow", {{"seconds", 3}}); });
  for (int i = 0; i < 500 && http(d.port, "GET", "/metrics").body.find("airlock_sandboxes_running 2") == std::string::npos; ++i)
    std::this_thread::sleep_for(10ms);
  auto third = call(kOtherKey, "echo", {{"n", 1}});
  ASSERT_TRUE(refused_by(third, "concurrent")) << third.status << " " << third.body;
  EXPECT_NE(third.json()["error"]["message"].get<std::string>().find("user alice"), std::string::npos) << third.body;
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 1}}, kOtherKey).status, 200);  // the agent alone is not limited
  EXPECT_EQ(first.get().json()["status"], "ok");
  EXPECT_EQ(second.get().json()["status"], "ok");
  EXPECT_EQ(call(kKey, "echo", {{"n", 2}}).status, 200);  // her places are given back
}

// The HIGH tier runs behind the same quota stage: on gVisor a principal's second slow call is
// refused by `concurrent`, and a spinning tool's CPU (the sandbox's cgroup, the Sentry's
// included) uses up its `cpuSeconds` so that the next call is refused.
TEST(Quotas, TheGvisorTierHonoursTheSameQuotas) {
  if (::access("/usr/bin/runsc", X_OK) != 0) GTEST_SKIP() << "runsc is not installed: no gVisor tier here";
  Workspace ws;
  ws.rewrite("", R"(  - name: slow-high
    risk: high
    runtime: {type: python, file: tools/slow.py}
    limits: {timeout: 30s}
  - name: spin-high
    risk: high
    runtime: {type: python, file: tools/spin.py}
    limits: {timeout: 10s}
)");
  // The budget is well above what runsc's own start costs (0.3-0.6 CPU-seconds a call here,
  // more on a loaded host: 0.5 was once used up by the first call alone), and well below what
  // the spin takes in its 10 s.
  ws.write_config(ws.config_text() + "quotas:\n  principals:\n    agent: {concurrent: 1, cpuSeconds: 2/60s}\n");
  RunningDaemon d(ws);
  auto slow = std::async(std::launch::async, [&] { return invoke(d.port, "slow-high", {{"seconds", 3}}); });
  // (Not airlock_sandboxes_running: that counts the local tier's sandboxes only.)
  for (int i = 0; i < 1000 && http(d.port, "GET", "/metrics").body.find("airlock_invocations_running 1") == std::string::npos; ++i)
    std::this_thread::sleep_for(10ms);
  auto second = invoke(d.port, "slow-high", {{"seconds", 1}});
  EXPECT_TRUE(refused_by(second, "concurrent")) << second.status << " " << second.body;
  auto first = slow.get();
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_EQ(first.json()["status"], "ok") << first.body;
  auto spun = invoke(d.port, "spin-high", json::object());
  ASSERT_EQ(spun.status, 200) << spun.body;
  auto cpu_ms = [](const Reply& r) {
    const json usage = r.json()["usage"];
    return usage.value("cpu_user_ms", 0) + usage.value("cpu_sys_ms", 0);
  };
  ASSERT_GE(cpu_ms(first) + cpu_ms(spun), 2000) << "the calls got less CPU than the budget: " << spun.body;
  auto next = invoke(d.port, "slow-high", {{"seconds", 0}});
  EXPECT_TRUE(refused_by(next, "cpuSeconds")) << next.status << " " << next.body;
}

}  // namespace
}  // namespace airlock::server::test
