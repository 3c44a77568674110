// bench/startup: how long it takes to run a trivial command, sandboxed and not.
//   airlock run -- CMD         (the CLI: a new process per run, as a user would)
//   sandbox::run in-process    (what the daemon pays per call)
//   bwrap --unshare-all        (Debian's bubblewrap, the same binds)
//   sandbox_floor CMD          (the same kernel steps as airlock run and nothing else:
//                              bench/sandbox_floor.cpp; the floor for these layers), and
//                              for /bin/true without each layer in turn (what it costs)
//   plain fork+exec            (no sandbox at all)
// for CMD = /bin/true and python3 -c pass. Each benchmark runs kRuns times and reports the
// p50 and p99 of the per-run wall time (counters p50_ms / p99_ms).
//
// Then a trivial Python tool (run(args) -> {"n": n + 1}) through Airlock's runner, with its
// arguments on stdin, four ways (docs/performance.md, "Warm start"):
//   plain python3              the runner without a sandbox (the reference)
//   airlock run                the CLI in a loop, as a user would
//   sandbox::run, cold         what the daemon pays per cold call
//   warm template              sandbox::WarmTemplate::start_call + wait: a fork of the
//                              template with fresh namespaces, cgroup, tmpfs and policy
//   warm, prepared             a child started ahead of its call, Sandbox::hand_over + wait
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "bench_support.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/warm/warm.hpp"


namespace {

constexpr int kRuns = 300;
using airlock::bench::Argv;
using airlock::bench::bwrap;
using airlock::bench::measure;
using airlock::bench::report;
using airlock::bench::spawn_and_wait;

const Argv kTrue = {"/bin/true"};
const Argv kPython = {"/usr/bin/python3", "-c", "pass"};

Argv airlock_cli(const Argv& cmd) {
  Argv a = {AIRLOCK_BINARY, "run", "--"};
  a.insert(a.end(), cmd.begin(), cmd.end());
  return a;
}

void BM_ForkExec(benchmark::State& state, const Argv& cmd) {
  measure(state, [&] { spawn_and_wait(cmd); });
}
void BM_Bwrap(benchmark::State& state, const Argv& cmd) {
  Argv argv = bwrap(cmd);
  measure(state, [&] { spawn_and_wait(argv); });
}
void BM_AirlockCli(benchmark::State& state, const Argv& cmd) {
  Argv argv = airlock_cli(cmd);
  measure(state, [&] { spawn_and_wait(argv); });
}
void BM_Floor(benchmark::State& state, const Argv& cmd) {
  Argv argv = {AIRLOCK_FLOOR_BINARY};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  measure(state, [&] { spawn_and_wait(argv); });
}
// The floor without one layer: what that layer costs (docs/performance.md).
void BM_FloorWithout(benchmark::State& state, const char* layer) {
  Argv argv = {AIRLOCK_FLOOR_BINARY, "--without", layer, "/bin/true"};
  measure(state, [&] { spawn_and_wait(argv); });
}
void BM_SandboxLibrary(benchmark::State& state, const Argv& cmd) {
  airlock::sandbox::Spec spec;
  spec.argv = cmd;
  measure(state, [&] {
    if (airlock::sandbox::run(spec).verdict != airlock::sandbox::Verdict::ok) std::abort();
  });
}

// The tool, written once into a temporary directory bound at /tool.
constexpr const char* kTrivialTool = "def run(args):\n    return {\"n\": args.get(\"n\", 0) + 1}\n";
constexpr const char* kToolArguments = "{\"n\": 41}";

const std::string& tool_dir() {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() / "airlock-bench-tool").string();
    std::filesystem::create_directories(d);
    std::ofstream(d + "/tool.py") << kTrivialTool;
    std::ofstream(d + "/args.json") << kToolArguments;
    std::filesystem::permissions(d, std::filesystem::perms(0755));
    return d;
  }();
  return dir;
}

Argv runner_argv(const char* mode) {
  return {"/usr/bin/python3", "-I", "-S", "/airlock/airlock_runner.py", mode, "/tool/tool.py"};
}

airlock::sandbox::Spec tool_spec(const char* mode) {
  airlock::sandbox::Spec spec;
  spec.argv = runner_argv(mode);
  spec.binds.push_back({AIRLOCK_RUNNER_DIR, "/airlock", false});
  spec.binds.push_back({tool_dir(), "/tool", false});
  return spec;
}

void expect_answer(const airlock::sandbox::Outcome& o) {
  if (o.verdict != airlock::sandbox::Verdict::ok || o.stdout_data != "{\"n\":42}\n") std::abort();
}

void BM_ToolPlainPython(benchmark::State& state) {
  Argv argv = {"/bin/sh", "-c",
               "exec /usr/bin/python3 -I -S " AIRLOCK_RUNNER_DIR "/airlock_runner.py module " +
                   tool_dir() + "/tool.py < " + tool_dir() + "/args.json"};
  measure(state, [&] { spawn_and_wait(argv); });
}

void BM_ToolAirlockCli(benchmark::State& state) {
  Argv argv = {AIRLOCK_BINARY, "run", "--ro", AIRLOCK_RUNNER_DIR ":/airlock", "--ro",
               tool_dir() + ":/tool", "--stdin", tool_dir() + "/args.json", "--"};
  for (const auto& a : runner_argv("module")) argv.push_back(a);
  measure(state, [&] { spawn_and_wait(argv); });
}

void BM_ToolCold(benchmark::State& state) {
  auto spec = tool_spec("module");
  spec.stdin_source.kind = airlock::sandbox::StdinSource::Kind::bytes;
  spec.stdin_source.bytes = kToolArguments;
  measure(state, [&] { expect_answer(airlock::sandbox::run(spec)); });
}

// The template is launched and supervised on a thread of its own, as the daemon does.
struct BenchTemplate {
  airlock::sandbox::Spec spec = tool_spec("template");
  airlock::sandbox::WarmTemplate* t = nullptr;
  std::thread supervisor;

  BenchTemplate() {
    spec.binds.push_back(
        {airlock::sandbox::warm_library_path(), airlock::sandbox::kWarmLibraryInSandbox, false});
    spec.limits.pids = 4096;
    std::promise<airlock::sandbox::WarmTemplate*> ready;
    supervisor = std::thread([&] {
      auto launched = airlock::sandbox::WarmTemplate::launch(spec, std::chrono::seconds(10));
      if (!launched) std::abort();
      ready.set_value(launched->get());
      (void)(*launched)->wait();
    });
    t = ready.get_future().get();
  }
  ~BenchTemplate() {
    t->retire();
    supervisor.join();
  }
  // A call's Spec: the template's binds, the call's input (or none: a child prepared ahead).
  airlock::sandbox::Spec call(bool with_input) const {
    airlock::sandbox::Spec call = tool_spec("template");
    call.binds = spec.binds;
    if (with_input) {
      call.stdin_source.kind = airlock::sandbox::StdinSource::Kind::bytes;
      call.stdin_source.bytes = std::string("{\"env\":{},\"arguments\":") + kToolArguments + "}";
    }
    return call;
  }
};

// A child started on demand: the call's namespaces, cgroup, tmpfs and policy on its path.
void BM_ToolWarm(benchmark::State& state) {
  BenchTemplate b;
  const auto call = b.call(true);
  measure(state, [&] {
    auto sandbox = b.t->start_call(call);
    if (!sandbox) std::abort();
    expect_answer((*sandbox)->wait());
  });
}

// A child prepared ahead of its call (what the daemon's WarmPool does): timed from the
// hand-over to the result; the next child is prepared meanwhile, on another thread, and waited
// for outside the timed part (a daemon prepares it while it answers and reads the next call).
void BM_ToolWarmPrepared(benchmark::State& state) {
  BenchTemplate b;
  const auto shape = b.call(false), call = b.call(true);
  auto prepare = [&] {
    auto child = b.t->start_call(shape);
    if (!child) std::abort();
    return std::move(*child);
  };
  auto next = prepare();
  std::vector<double> ms;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto child = std::move(next);
    if (!child->hand_over(call)) std::abort();
    auto preparing = std::async(std::launch::async, prepare);
    expect_answer(child->wait());
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    ms.push_back(took.count() * 1000);
    child.reset();
    next = preparing.get();
  }
  report(state, ms);
}

}  // namespace

// Interleaved per command so that background load affects each contender alike.
BENCHMARK_CAPTURE(BM_ForkExec, true, kTrue)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Bwrap, true, kTrue)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AirlockCli, true, kTrue)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SandboxLibrary, true, kTrue)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Floor, true, kTrue)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FloorWithout, cgroups, "cgroups")->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FloorWithout, network, "network")->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FloorWithout, mounts, "mounts")->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FloorWithout, landlock, "landlock")->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FloorWithout, seccomp, "seccomp")->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FloorWithout, all_five, "cgroups,network,mounts,landlock,seccomp")->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ForkExec, python, kPython)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Bwrap, python, kPython)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AirlockCli, python, kPython)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SandboxLibrary, python, kPython)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Floor, python, kPython)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ToolPlainPython)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ToolAirlockCli)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ToolCold)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ToolWarm)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ToolWarmPrepared)->Iterations(kRuns)->UseManualTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
