// bench/approvals: GET /v1/approvals with 1,000 pending approvals (issue #19: the console and
// the API stay fast, list p50 <= 20 ms). A daemon in this process (tests/server's Workspace
// and RunningDaemon), a real user issuer (an Ed25519 key, its JWKS in a file), 1,000 critical
// calls made through POST /v1/tools/{name}/invoke (each answered 202 and stored), then:
//   List/1000    GET /v1/approvals as an approver: the whole list, over HTTP on loopback,
//                one connection per request (as the test client does)
//   Show         GET /v1/approvals/{id} of one of them
// Counters: p50_ms and p99_ms of the manual timings.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <vector>

#include "identity/signer.hpp"
#include "server_test_support.hpp"

namespace {

using namespace airlock::server::test;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kPending = 1000;

const char* kSections = R"(server: {listen: 127.0.0.1:0, maxBodyBytes: 64Ki, maxConcurrentInvocations: 2, queueLength: 64, drainTimeout: 20s}
identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksFile: corp-jwks.json}
roles:
  - name: approver
    rules:
      - {effect: allow, actions: [approve], tools: ["danger"]}
bindings:
  - role: approver
    users: [{issuer: corp, claim: groups, value: approvers}])";

const char* kTools = R"(
  - name: danger
    risk: critical
    approval: {approvers: 1, timeout: 1h}
    runtime: {type: python, file: tools/echo.py})";

struct Fixture {
  Workspace ws;
  std::optional<airlock::identity::TokenSigner> corp;
  std::unique_ptr<RunningDaemon> daemon;
  std::string approver_token, one_id;

  Fixture() {
    corp.emplace(std::move(*airlock::identity::TokenSigner::load_or_create(ws.dir() + "/corp.key")));
    std::ofstream(ws.dir() + "/corp-jwks.json") << corp->jwks().dump();
    ws.rewrite(kSections, kTools);
    std::string yaml = ws.config_text();
    yaml.replace(yaml.find("tiers:\n"), 7, "tiers:\n  critical: {backend: local}\n");
    ws.write_config(yaml);
    daemon = std::make_unique<RunningDaemon>(ws);
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
    approver_token = *corp->issue({{"iss", "https://idp.corp.example"}, {"aud", "airlock"}, {"sub", "bob"},
                                   {"iat", now}, {"exp", now + 3600}, {"groups", {"approvers"}}});
    for (int i = 0; i < kPending; ++i) {
      auto r = invoke(daemon->port, "danger", {{"i", i}});
      if (r.status != 202) throw std::runtime_error("not pending: " + r.body);
      if (i == kPending / 2) one_id = r.json()["approval"]["id"];
    }
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void report(benchmark::State& state, std::vector<double>& ms) {
  std::sort(ms.begin(), ms.end());
  if (ms.empty()) return;
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}

void timed_get(benchmark::State& state, const std::string& target, std::size_t expect_items) {
  auto& f = fixture();
  std::vector<double> ms;
  for (auto _ : state) {
    auto start = Clock::now();
    auto r = http(f.daemon->port, "GET", target, "", f.approver_token);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (r.status != 200) state.SkipWithError(("HTTP " + std::to_string(r.status) + " " + r.body).c_str());
    if (expect_items && r.json()["approvals"].size() != expect_items) state.SkipWithError("not all listed");
  }
  report(state, ms);
}

void BM_List(benchmark::State& state) { timed_get(state, "/v1/approvals", kPending); }
void BM_Show(benchmark::State& state) { timed_get(state, "/v1/approvals/" + fixture().one_id, 0); }

BENCHMARK(BM_List)->Name("List/1000")->Unit(benchmark::kMillisecond)->Iterations(200);
BENCHMARK(BM_Show)->Name("Show")->Unit(benchmark::kMillisecond)->Iterations(500);

}  // namespace

BENCHMARK_MAIN();
