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

#include "sandbox/sandbox.hpp"
#include "sandbox/session/session.hpp"

extern char** environ;

namespace {

using namespace airlock::sandbox;
constexpr int kRuns = 300;

void spawn_and_wait(std::vector<std::string> argv) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
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
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[ms.size() * 99 / 100];
}

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

// bwrap with the same view of the host as airlock's default profile (as bench/startup.cpp).
std::vector<std::string> bwrap_true() {
  std::vector<std::string> a = {"/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                                "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
                                "--ro-bind", "/usr", "/usr"};
  for (const char* link : {"bin", "sbin", "lib", "lib64", "lib32", "libx32"}) {
    std::string host = std::string("/") + link;
    struct stat st {};
    if (lstat(host.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[256] = {};
      if (readlink(host.c_str(), target, sizeof target - 1) > 0) a.insert(a.end(), {"--symlink", target, host});
    } else {
      a.insert(a.end(), {"--ro-bind", host, host});
    }
  }
  for (const char* file : {"/etc/ld.so.cache", "/etc/alternatives", "/etc/ssl/certs"})
    a.insert(a.end(), {"--ro-bind", file, file});
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/work", "--chdir", "/work",
                     "/bin/true"});
  return a;
}

void BM_Bwrap(benchmark::State& state) {
  const auto argv = bwrap_true();
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
