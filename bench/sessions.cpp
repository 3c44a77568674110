// bench/sessions: a session sandbox (sandbox/session/session.hpp) beside what it replaces, in
// one run, each kRuns times, p50 and p99 of the wall time per run:
//   fork+exec /bin/true              no sandbox at all (the floor)
//   bwrap --unshare-all /bin/true    a fresh bubblewrap sandbox per command
//   sandbox::run /bin/true           a fresh Airlock sandbox per command (a tool call)
//   session: start + first exec      a new session and its first `true`, then its end
//   session: exec in a live session  `true` in a session that is already running
// and the memory an idle session holds (its cgroup's usage and the supervisor's RSS growth
// per session, with 50 sessions open). The daemon's figures (create over HTTP, 500 open
// sessions) come with the sessions API (issue #35).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/session/session.hpp"


namespace {

using namespace airlock::sandbox;
using airlock::bench::bwrap;
using airlock::bench::measure;
using airlock::bench::spawn_and_wait;
constexpr int kRuns = 300;

Spec session_spec() {
  Spec spec;
  spec.limits.wall_time = std::chrono::seconds(600);
  return spec;
}

// `true` in the session, to its end.
void exec_true(SessionSandbox& s) {
  auto started = s.exec({{"/bin/true"}, {}, ""});
  if (!started) std::abort();
  started->stdin_w.reset();
  auto end = s.wait(started->id, std::chrono::seconds(10));
  if (!end || !end->exited || end->code != 0) std::abort();
}

void BM_ForkExec(benchmark::State& state) {
  measure(state, [] { spawn_and_wait({"/bin/true"}); });
}

void BM_Bwrap(benchmark::State& state) {
  const auto argv = bwrap({"/bin/true"});
  measure(state, [&] { spawn_and_wait(argv); });
}

void BM_SandboxRun(benchmark::State& state) {
  Spec spec;
  spec.argv = {"/bin/true"};
  measure(state, [&] {
    if (run(spec).verdict != Verdict::ok) std::abort();
  });
}

void BM_SessionStartAndFirstExec(benchmark::State& state) {
  measure(state, [] {
    auto s = SessionSandbox::start(session_spec());
    if (!s) std::abort();
    exec_true(**s);
    if ((*s)->end().verdict != Verdict::ok) std::abort();
  });
}

void BM_SessionExec(benchmark::State& state) {
  auto s = SessionSandbox::start(session_spec());
  if (!s) std::abort();
  measure(state, [&] { exec_true(**s); });
}

long rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

// 50 idle sessions (each has run one `true`): what each holds in its cgroup (memory in use,
// cpu_used says nothing of memory: read from the Outcome's peak at the end) and what the
// supervising process grew by.
void BM_IdleSessions(benchmark::State& state) {
  constexpr int kSessions = 50;
  for (auto _ : state) {
    const long before = rss_kib();
    std::vector<std::unique_ptr<SessionSandbox>> open;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kSessions; ++i) {
      auto s = SessionSandbox::start(session_spec());
      if (!s) std::abort();
      exec_true(**s);
      open.push_back(std::move(*s));
    }
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    const long after = rss_kib();
    double peak_sum = 0;
    for (auto& s : open) peak_sum += static_cast<double>(s->end().usage.memory_peak_bytes.value_or(0));
    state.counters["sessions"] = kSessions;
    state.counters["supervisor_rss_kib_per_session"] = static_cast<double>(after - before) / kSessions;
    state.counters["cgroup_peak_kib_per_session"] = peak_sum / kSessions / 1024;
  }
}

}  // namespace

BENCHMARK(BM_ForkExec)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_Bwrap)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_SandboxRun)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_SessionStartAndFirstExec)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_SessionExec)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_IdleSessions)->Iterations(1)->UseManualTime();

BENCHMARK_MAIN();
