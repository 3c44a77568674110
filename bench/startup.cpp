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

#include "sandbox/sandbox.hpp"

extern char** environ;

namespace {

constexpr int kRuns = 300;
using Argv = std::vector<std::string>;

const Argv kTrue = {"/bin/true"};
const Argv kPython = {"/usr/bin/python3", "-c", "pass"};

void spawn_and_wait(const Argv& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) std::abort();
  posix_spawn_file_actions_destroy(&actions);
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::abort();
}

void report(benchmark::State& state, std::vector<double>& ms) {
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[ms.size() * 99 / 100];
}

template <typename F>
void measure(benchmark::State& state, F once) {
  std::vector<double> ms;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    once();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    ms.push_back(took.count() * 1000);
  }
  report(state, ms);
}

// bwrap with the same view of the host as airlock's default profile.
Argv bwrap(const Argv& cmd) {
  Argv a = {"/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
            "--ro-bind", "/usr", "/usr"};
  for (const char* link : {"bin", "sbin", "lib", "lib64", "lib32", "libx32"}) {
    std::string host = std::string("/") + link;
    struct stat st {};
    if (lstat(host.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[256] = {};
      if (readlink(host.c_str(), target, sizeof target - 1) > 0)
        a.insert(a.end(), {"--symlink", target, host});
    } else {
      a.insert(a.end(), {"--ro-bind", host, host});
    }
  }
  for (const char* file : {"/etc/ld.so.cache", "/etc/alternatives", "/etc/ssl/certs"})
    a.insert(a.end(), {"--ro-bind", file, file});
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/work",
                     "--chdir", "/work"});
  a.insert(a.end(), cmd.begin(), cmd.end());
  return a;
}

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

BENCHMARK_MAIN();
