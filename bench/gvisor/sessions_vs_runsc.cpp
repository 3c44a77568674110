// bench_gvisor_sessions (docs/sessions.md, docs/performance.md): what a gVisor session costs
// (issue #37), in one process and run, p50/p99 each (counters, in ms):
//   BM_GvisorSessionCreateToFirstExec  GvisorSessionBackend::start_session + `true` + its end
//                                      (bundle, cgroup, netns, runsc run, state poll, exec);
//   BM_RunscByHandCreateToFirstExec    `runsc run --detach` of the same bundle by hand
//                                      (--network=none, no cgroup) + `runsc exec true`;
//   BM_LocalSessionCreateToFirstExec   the local backend's session + `true`;
//   BM_GvisorSessionExec               `true` in a live gVisor session, to its end;
//   BM_RunscExecByHand                 `runsc exec true` by hand in a detached sandbox;
//   BM_LocalSessionExec                `true` in a live local session.
// Each session is ended after it is measured (not counted). Targets (issue #37):
// create-to-first-exec <= by hand + 20 ms; exec <= `runsc exec` by hand + 2 ms.
// AIRLOCK_GVISOR_SESSION_BENCH_RUNS: runs per benchmark (default 20), after 2 unmeasured.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "backend/gvisor_backend.hpp"
#include "backend/gvisor_session.hpp"
#include "backend/local.hpp"
#include "backend/runsc_command.hpp"
#include "backend/runsc_platform.hpp"

namespace airlock::backend {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
constexpr int kWarmup = 2;

int runs() {
  const char* s = std::getenv("AIRLOCK_GVISOR_SESSION_BENCH_RUNS");
  return s ? std::max(1, std::atoi(s)) : 20;
}

const std::string& state_dir() {
  static const std::string dir = [] {
    std::string d = "/tmp/airlock-bench-gvs-" + std::to_string(::getpid());
    fs::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all("/tmp/airlock-bench-gvs-" + std::to_string(::getpid()), ec);
    });
    return d;
  }();
  return dir;
}

GvisorBackend* gvisor() {
  static GvisorBackend* made = [] () -> GvisorBackend* {
    GvisorOptions o;
    o.state_dir = state_dir() + "/gvisor";
    auto b = GvisorBackend::create(o);
    return b ? b->release() : nullptr;
  }();
  return made;
}

RunRequest session_request() {
  RunRequest r;
  r.limits.wall_time = std::chrono::minutes(10);
  r.limits.memory_bytes = 256ULL << 20;
  return r;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Runs `one` (its own seconds) runs() times after the warm-up; p50/p99 as counters.
template <typename F>
void measure(benchmark::State& state, F one) {
  for (int i = 0; i < kWarmup; ++i) (void)one();
  std::vector<double> ms;
  for (auto _ : state) {
    const double t = one();
    if (t < 0) {
      state.SkipWithError("a run failed");
      return;
    }
    ms.push_back(t);
    state.SetIterationTime(t / 1000);
  }
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
}

// `true` in the session, to its end: its round trip in ms, -1 when it failed.
double exec_true(Session& s) {
  const auto t0 = Clock::now();
  auto started = s.exec({{"/bin/true"}, {}, ""});
  if (!started) return -1;
  started->stdin_w.reset();
  char buf[64];
  while (::read(started->stdout_r.get(), buf, sizeof buf) > 0) {
  }
  auto end = s.wait(started->id, std::chrono::seconds(30));
  return end && end->exited && end->code == 0 ? ms_since(t0) : -1;
}

double create_and_exec(SessionBackend& b) {
  const auto t0 = Clock::now();
  auto s = b.start_session(session_request(), {});
  if (!s) return -1;
  const double first = exec_true(**s);
  const double t = first < 0 ? -1 : ms_since(t0);
  (void)(*s)->end();
  return t;
}

// argv with /dev/null as its stdio (a detached sandbox would hold a pipe open): its exit code.
int run_quietly(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// runsc by hand: the session's bundle (`sleep infinity`), --network=none, no cgroup.
struct ByHand {
  std::string dir;
  std::vector<std::string> args;
  explicit ByHand(const std::string& name) : dir(state_dir() + "/" + name) {
    fs::create_directories(dir + "/bundle");
    fs::create_directories(dir + "/state");
    RunRequest r = session_request();
    r.argv = {"/bin/sleep", "infinity"};
    (void)write_request_bundle(r, dir + "/bundle");
    args = gvisor()->invocation().global_args(dir + "/state");
    args.push_back("--network=none");
  }
  bool command(std::initializer_list<std::string> tail) const {
    auto argv = args;
    argv.insert(argv.end(), tail);
    return run_quietly(argv) == 0;
  }
  ~ByHand() {
    (void)force_delete(gvisor()->invocation(), dir + "/state", "c");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

void BM_GvisorSessionCreateToFirstExec(benchmark::State& state) {
  if (!gvisor()) return state.SkipWithError("runsc does not work here");
  GvisorSessionBackend b({gvisor()->invocation(), gvisor()->state_dir(), nullptr});
  measure(state, [&] { return create_and_exec(b); });
}

void BM_RunscByHandCreateToFirstExec(benchmark::State& state) {
  if (!gvisor()) return state.SkipWithError("runsc does not work here");
  measure(state, [] {
    ByHand h("byhand-create");
    const auto t0 = Clock::now();
    if (!h.command({"run", "--detach", "--bundle", h.dir + "/bundle", "c"})) return -1.0;
    if (!h.command({"exec", "c", "/bin/true"})) return -1.0;
    return ms_since(t0);
  });
}

void BM_LocalSessionCreateToFirstExec(benchmark::State& state) {
  LocalBackend b(nullptr, nullptr, 0);
  measure(state, [&] { return create_and_exec(b); });
}

void BM_GvisorSessionExec(benchmark::State& state) {
  if (!gvisor()) return state.SkipWithError("runsc does not work here");
  GvisorSessionBackend b({gvisor()->invocation(), gvisor()->state_dir(), nullptr});
  auto s = b.start_session(session_request(), {});
  if (!s) return state.SkipWithError(s.error().message.c_str());
  measure(state, [&] { return exec_true(**s); });
  (void)(*s)->end();
}

void BM_RunscExecByHand(benchmark::State& state) {
  if (!gvisor()) return state.SkipWithError("runsc does not work here");
  ByHand h("byhand-exec");
  if (!h.command({"run", "--detach", "--bundle", h.dir + "/bundle", "c"}))
    return state.SkipWithError("runsc run --detach failed");
  measure(state, [&] {
    const auto t0 = Clock::now();
    return h.command({"exec", "c", "/bin/true"}) ? ms_since(t0) : -1.0;
  });
}

void BM_LocalSessionExec(benchmark::State& state) {
  LocalBackend b(nullptr, nullptr, 0);
  auto s = b.start_session(session_request(), {});
  if (!s) return state.SkipWithError(s.error().message.c_str());
  measure(state, [&] { return exec_true(**s); });
  (void)(*s)->end();
}

#define AIRLOCK_SESSION_BENCH(name) BENCHMARK(name)->Iterations(runs())->UseManualTime()->Unit(benchmark::kMillisecond)
AIRLOCK_SESSION_BENCH(BM_GvisorSessionCreateToFirstExec);
AIRLOCK_SESSION_BENCH(BM_RunscByHandCreateToFirstExec);
AIRLOCK_SESSION_BENCH(BM_LocalSessionCreateToFirstExec);
AIRLOCK_SESSION_BENCH(BM_GvisorSessionExec);
AIRLOCK_SESSION_BENCH(BM_RunscExecByHand);
AIRLOCK_SESSION_BENCH(BM_LocalSessionExec);

}  // namespace
}  // namespace airlock::backend

BENCHMARK_MAIN();
