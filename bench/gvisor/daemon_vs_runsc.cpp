// bench_gvisor (docs/gvisor.md, docs/performance.md): what the gvisor backend costs. In one
// process and run, calls one after another, p50/p99 each:
//   BM_DaemonHigh   a trivial Python tool of risk high through the daemon (POST /v1/...):
//                   the high tier's gvisor backend, its bundle, netns, cgroup, cleanup;
//   BM_RunscByHand  `runsc run` of the same bundle (the same runner, tool, argv, stdin and
//                   the high tier's limits, written by backend::write_request_bundle) by hand,
//                   with --network=none and no cgroup: runsc's own floor;
//   BM_BackendAlone the same request as BM_RunscByHand, through GvisorBackend::run() without
//                   the daemon: the backend's own cost (bundle, cgroup, netns, cleanup);
//   BM_DaemonLocal  the same tool at risk low: the local sandbox through the same daemon.
// Target: BM_DaemonHigh p50 <= BM_RunscByHand p50 + 20 ms.
// AIRLOCK_GVISOR_BENCH_CALLS: calls per benchmark (default 100), after 3 unmeasured ones.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "../mcp/daemon.hpp"
#include "../mcp/http_client.hpp"
#include "../mcp/percentiles.hpp"
#include "backend/gvisor_backend.hpp"
#include "backend/runsc_command.hpp"
#include "backend/runsc_platform.hpp"

namespace airlock::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
constexpr int kWarmup = 3;
const char* kTool = "def run(args):\n    return {\"n\": args.get(\"n\", 0) + 1}\n";

int calls() {
  const char* s = std::getenv("AIRLOCK_GVISOR_BENCH_CALLS");
  return s ? std::max(1, std::atoi(s)) : 100;
}

Result<Daemon*> daemon() {
  static auto started = Daemon::start({
      {"tools/trivial.py", kTool},
      {"airlock.yaml",
       "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
       "server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 4}\n"
       "storage: {dataDir: data}\n" +
           bench_principal_yaml() +
           "tiers:\n  high: {backend: gvisor}\n"
           "tools:\n"
           "  - name: trivial-high\n    risk: high\n    runtime: {type: python, file: tools/trivial.py}\n"
           "  - name: trivial\n    runtime: {type: python, file: tools/trivial.py}\n"},
  });
  if (!started) return started.error();
  return started->get();
}

Status call(HttpClient& client, const std::string& tool, int n) {
  auto reply = client.post("/v1/tools/" + tool + "/invoke",
                           nlohmann::json{{"arguments", {{"n", n}}}}.dump(),
                           {{"Authorization", std::string("Bearer ") + kBenchKey}});
  if (!reply) return reply.error();
  if (reply->status != 200 || reply->body.find("\"status\":\"ok\"") == std::string::npos)
    return Error::make(tool, "HTTP " + std::to_string(reply->status) + " " + reply->body.substr(0, 300));
  return {};
}

void through_daemon(benchmark::State& state, const std::string& tool) {
  auto d = daemon();
  if (!d) return state.SkipWithError(d.error().message.c_str());
  HttpClient client((*d)->port());
  if (auto c = client.connect(); !c.ok()) return state.SkipWithError(c.error().message.c_str());
  for (int i = 0; i < kWarmup; ++i)
    if (auto s = call(client, tool, i); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  Latencies latencies;
  int n = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto s = call(client, tool, n++);
    latencies.add(Clock::now() - t0);
    if (!s.ok()) return state.SkipWithError(s.error().message.c_str());
  }
  latencies.report(state);
}

void BM_DaemonHigh(benchmark::State& state) { through_daemon(state, "trivial-high"); }
void BM_DaemonLocal(benchmark::State& state) { through_daemon(state, "trivial"); }

// The request the daemon's execute stage makes for trivial-high (pipeline/stages/execute.cpp).
backend::RunRequest trivial_request(const std::string& daemon_dir) {
  backend::RunRequest r;
  r.limits.wall_time = std::chrono::seconds(120);
  r.limits.memory_bytes = 1ULL << 30;
  r.limits.pids = 128;
  r.mounts.push_back({backend::Mount::Kind::runner, daemon_dir + "/data/runtime", "/airlock", true});
  r.mounts.push_back({backend::Mount::Kind::tool_code, daemon_dir + "/tools", "/tool", true});
  r.argv = {"python3", "-I", "-S", "/airlock/airlock_runner.py", "module", "/tool/trivial.py"};
  r.stdin_bytes = R"({"n":1})";
  return r;
}

// One `runsc run` of the bundle, its stdin the request's, its output discarded.
Status runsc_run(const backend::RunscInvocation& runsc, const std::string& dir, int n) {
  const std::string id = "airlock-bench-" + std::to_string(::getpid()) + "-" + std::to_string(n);
  auto argv = runsc.global_args(dir + "/state");
  argv.insert(argv.end(), {"--network=none", "run", "--bundle", dir + "/bundle", id});
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* in = std::freopen((dir + "/stdin").c_str(), "r", stdin);
    std::FILE* out = std::freopen("/dev/null", "w", stdout);
    (void)in;
    (void)out;
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error::make("runsc", "runsc run exited with " + std::to_string(status));
  return {};
}

void BM_RunscByHand(benchmark::State& state) {
  auto d = daemon();
  if (!d) return state.SkipWithError(d.error().message.c_str());
  auto platform = backend::detect_runsc_platform("runsc", "");
  if (!platform) return state.SkipWithError(platform.error().message.c_str());
  backend::RunscInvocation runsc{platform->runsc, platform->platform, ::geteuid() != 0};
  const std::string dir = (*d)->dir() + "/by-hand";
  fs::create_directories(dir + "/bundle");
  fs::create_directories(dir + "/state");
  const auto request = trivial_request((*d)->dir());
  if (auto s = backend::write_request_bundle(request, dir + "/bundle"); !s.ok())
    return state.SkipWithError(s.error().message.c_str());
  {
    std::FILE* f = std::fopen((dir + "/stdin").c_str(), "w");
    std::fputs(request.stdin_bytes.c_str(), f);
    std::fclose(f);
  }
  int n = 0;
  for (int i = 0; i < kWarmup; ++i)
    if (auto s = runsc_run(runsc, dir, n++); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  Latencies latencies;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto s = runsc_run(runsc, dir, n++);
    latencies.add(Clock::now() - t0);
    if (!s.ok()) return state.SkipWithError(s.error().message.c_str());
  }
  latencies.report(state);
  fs::remove_all(dir);
}

void BM_BackendAlone(benchmark::State& state) {
  auto d = daemon();
  if (!d) return state.SkipWithError(d.error().message.c_str());
  backend::GvisorOptions options;
  options.state_dir = (*d)->dir() + "/alone";
  auto made = backend::GvisorBackend::create(options);
  if (!made) return state.SkipWithError(made.error().message.c_str());
  const auto request = trivial_request((*d)->dir());
  backend::RunContext context;
  auto once = [&]() -> Status {
    auto result = (*made)->run(request, context);
    if (result.verdict != sandbox::Verdict::ok)
      return Error::make("gvisor", std::string(sandbox::verdict_name(result.verdict)) + ": " + result.message);
    return {};
  };
  for (int i = 0; i < kWarmup; ++i)
    if (auto s = once(); !s.ok()) return state.SkipWithError(s.error().message.c_str());
  Latencies latencies;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto s = once();
    latencies.add(Clock::now() - t0);
    if (!s.ok()) return state.SkipWithError(s.error().message.c_str());
  }
  latencies.report(state);
}

BENCHMARK(BM_DaemonHigh)->Iterations(calls())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RunscByHand)->Iterations(calls())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BackendAlone)->Iterations(calls())->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DaemonLocal)->Iterations(calls())->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace airlock::bench

BENCHMARK_MAIN();
