// bench_mcp: a trivial Python tool called over Streamable HTTP (/mcp, tools/call) beside the
// same call over POST /v1/tools/trivial/invoke: one daemon, one run, one keep-alive
// connection each, calls one after another; p50/p99 per path (docs/mcp-bench-notes.md).
// BM_Bridge: the same tools/call through `airlock mcp --server` (stdio bridged to /mcp, issue
// #38) interleaved with the call straight to /mcp: the difference is the bridge's.
// AIRLOCK_MCP_BENCH_CALLS: calls per path (default 1000), after 20 unmeasured ones.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "daemon.hpp"
#include "http_client.hpp"
#include "mcp_session.hpp"
#include "percentiles.hpp"
#include "stdio_server.hpp"

namespace airlock::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWarmup = 20;

int calls() {
  const char* s = std::getenv("AIRLOCK_MCP_BENCH_CALLS");
  return s ? std::max(1, std::atoi(s)) : 1000;
}

// The one daemon both benchmarks call (started by the first, stopped at exit).
Result<Daemon*> daemon() {
  static auto started = Daemon::start({
      {"tools/trivial.py", "def run(args):\n    return {\"n\": args.get(\"n\", 0) + 1}\n"},
      {"airlock.yaml",
       "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
       "server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 4}\n"
       "storage: {dataDir: data}\n" +
           bench_principal_yaml() +
           "tools:\n  - name: trivial\n    description: Adds one.\n"
           "    runtime: {type: python, file: tools/trivial.py}\n"
           "    inputSchema: {type: object, properties: {n: {type: integer}}}\n"},
  });
  if (!started) return started.error();
  return started->get();
}

Status v1_call(HttpClient& client, int n) {
  auto reply =
      client.post("/v1/tools/trivial/invoke", nlohmann::json{{"arguments", {{"n", n}}}}.dump(),
                  {{"Authorization", std::string("Bearer ") + kBenchKey}});
  if (!reply) return reply.error();
  if (reply->status != 200 || reply->body.find("\"status\":\"ok\"") == std::string::npos)
    return Error::make("v1",
                       "HTTP " + std::to_string(reply->status) + " " + reply->body.substr(0, 200));
  return {};
}

void BM_V1Invoke(benchmark::State& state) {
  auto d = daemon();
  if (!d) return state.SkipWithError(d.error().message.c_str());
  HttpClient client((*d)->port());
  if (auto c = client.connect(); !c.ok()) return state.SkipWithError(c.error().message.c_str());
  for (int i = 0; i < kWarmup; ++i)
    if (auto s = v1_call(client, i); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  Latencies latencies;
  int n = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto s = v1_call(client, n++);
    latencies.add(Clock::now() - t0);
    if (!s.ok()) return state.SkipWithError(s.error().message.c_str());
  }
  latencies.report(state);
}

void BM_McpToolsCall(benchmark::State& state) {
  auto d = daemon();
  if (!d) return state.SkipWithError(d.error().message.c_str());
  HttpClient client((*d)->port());
  if (auto c = client.connect(); !c.ok()) return state.SkipWithError(c.error().message.c_str());
  McpHttpSession session(client, kBenchKey);
  if (auto s = session.initialize(); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  for (int i = 0; i < kWarmup; ++i)
    if (auto r = session.call_tool("trivial", {{"n", i}}); !r)
      return state.SkipWithError(r.error().message.c_str());
  Latencies latencies;
  int n = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r = session.call_tool("trivial", {{"n", n++}});
    latencies.add(Clock::now() - t0);
    if (!r) return state.SkipWithError(r.error().message.c_str());
  }
  latencies.report(state);
}

// Both paths in one loop, call after call: a drift of the machine (the sandbox's start-up
// dominates either call) falls on both alike, so the difference is the MCP layer's.
void BM_Interleaved(benchmark::State& state) {
  auto d = daemon();
  if (!d) return state.SkipWithError(d.error().message.c_str());
  HttpClient v1((*d)->port()), mcp((*d)->port());
  if (auto c = v1.connect(); !c.ok()) return state.SkipWithError(c.error().message.c_str());
  if (auto c = mcp.connect(); !c.ok()) return state.SkipWithError(c.error().message.c_str());
  McpHttpSession session(mcp, kBenchKey);
  if (auto s = session.initialize(); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  Latencies v1_latencies, mcp_latencies;
  int n = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto s = v1_call(v1, n);
    v1_latencies.add(Clock::now() - t0);
    if (!s.ok()) return state.SkipWithError(s.error().message.c_str());
    t0 = Clock::now();
    auto r = session.call_tool("trivial", {{"n", n++}});
    mcp_latencies.add(Clock::now() - t0);
    if (!r) return state.SkipWithError(r.error().message.c_str());
  }
  v1_latencies.report(state, "v1_");
  mcp_latencies.report(state, "mcp_");
}

// The bridge and /mcp, call after call, as BM_Interleaved does for /mcp and /v1.
void BM_Bridge(benchmark::State& state) {
  auto d = daemon();
  if (!d) return state.SkipWithError(d.error().message.c_str());
  HttpClient mcp((*d)->port());
  if (auto c = mcp.connect(); !c.ok()) return state.SkipWithError(c.error().message.c_str());
  McpHttpSession session(mcp, kBenchKey);
  if (auto s = session.initialize(); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  auto bridge = StdioServer::spawn({AIRLOCK_BINARY, "mcp", "--server", "http://127.0.0.1:" + std::to_string((*d)->port()),
                                    "--key", kBenchKey});
  if (!bridge) return state.SkipWithError(bridge.error().message.c_str());
  if (auto s = (*bridge)->initialize(); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  for (int i = 0; i < kWarmup; ++i)
    if (auto r = (*bridge)->call_tool("trivial", {{"n", i}}); !r) return state.SkipWithError(r.error().message.c_str());
  // tools/call of the trivial tool (a sandbox each), and ping (the daemon's cheapest answer,
  // where the bridge's own cost shows with the least noise around it).
  Latencies direct, bridged, direct_ping, bridged_ping;
  int n = 0;
  const auto timed = [](Latencies& into, auto&& call) {
    const auto t0 = Clock::now();
    auto r = call();
    into.add(Clock::now() - t0);
    return r ? std::string() : r.error().message;
  };
  // Each pair in turn goes first: a call that follows another shares the machine with the
  // first one's sandbox teardown, which would otherwise fall on one path only.
  const auto call_direct = [&] { return timed(direct, [&] { return session.call_tool("trivial", {{"n", n}}); }); };
  const auto call_bridged = [&] { return timed(bridged, [&] { return (*bridge)->call_tool("trivial", {{"n", n}}); }); };
  for (auto _ : state) {
    std::string failed = n % 2 ? call_bridged() : call_direct();
    if (failed.empty()) failed = n % 2 ? call_direct() : call_bridged();
    if (failed.empty()) failed = timed(direct_ping, [&] { return session.request("ping", nlohmann::json::object()); });
    if (failed.empty()) failed = timed(bridged_ping, [&] { return (*bridge)->request("ping", nlohmann::json::object()); });
    if (!failed.empty()) return state.SkipWithError(failed.c_str());
    ++n;
  }
  direct.report(state, "mcp_");
  bridged.report(state, "bridge_");
  direct_ping.report(state, "mcp_ping_");
  bridged_ping.report(state, "bridge_ping_");
}

BENCHMARK(BM_V1Invoke)->Iterations(calls())->Unit(benchmark::kMillisecond);
BENCHMARK(BM_McpToolsCall)->Iterations(calls())->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Interleaved)->Iterations(calls())->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Bridge)->Iterations(calls())->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace airlock::bench

BENCHMARK_MAIN();
