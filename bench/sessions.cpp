// bench/sessions: a session sandbox (sandbox/session/session.hpp) beside what it replaces, in
// one run, each kRuns times, p50 and p99 of the wall time per run:
//   fork+exec /bin/true              no sandbox at all (the floor)
//   bwrap --unshare-all /bin/true    a fresh bubblewrap sandbox per command
//   sandbox::run /bin/true           a fresh Airlock sandbox per command (a tool call)
//   session: start + first exec      a new session and its first `true`, then its end
//   session: exec in a live session  `true` in a session that is already running
// and the memory an idle session holds (its cgroup's usage and the supervisor's RSS growth
// per session, with 50 sessions open). Then through a daemon in this process, over one
// keep-alive connection (as an agent's client holds it):
//   daemon: create + first exec      POST /v1/sessions, then POST .../exec of `true` (JSON)
//   daemon: exec in a live session   POST .../exec of `true`
//   daemon: 1 MiB file write, read   PUT and GET .../files/f, beside the naive way (an exec of
//                                    `cat > f` with the bytes as stdin, `cat f`) and the floor
//                                    (write and read 1 MiB in /dev/shm, no sandbox)
//   daemon: 500 sessions open        created one after the other, each idle after one exec:
//                                    errors, the daemon's RSS growth and this process's
//                                    memory cgroup growth (daemon and sessions) per session
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <nlohmann/json.hpp>

#include "bench_support.hpp"
#include "daemon_http.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/session/session.hpp"
#include "server_test_support.hpp"


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

// --- through the daemon ---

namespace beast = boost::beast;
namespace bhttp = beast::http;
using airlock::server::test::RunningDaemon;
using airlock::server::test::Workspace;

// One keep-alive connection to the daemon, with what a session's benchmarks send on it.
class Connection : public airlock::bench::KeepAliveConnection {
 public:
  using KeepAliveConnection::KeepAliveConnection;
  std::string create() {
    auto made = call(bhttp::verb::post, "/v1/sessions", R"({"template": "bench"})", 201);
    warm_starts += made["start"] == "warm";
    return made["id"];
  }
  int warm_starts = 0;  // creations that took a sandbox of the template's warm pool
  void exec_true(const std::string& id) {
    auto r = call(bhttp::verb::post, "/v1/sessions/" + id + "/exec", R"({"command": ["/bin/true"]})", 200);
    if (r["verdict"] != "ok") std::abort();
  }
  void end(const std::string& id) { call(bhttp::verb::delete_, "/v1/sessions/" + id, "", 200); }
};

struct BenchDaemon {
  Workspace ws{"server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 8, queueLength: 64, maxBodyBytes: 4Mi}",
               "\nsessionTemplates:\n  - name: bench\n    limits: {memory: 256Mi, pids: 64, idleTimeout: 1h, output: 4Mi}\n    warmPool: 2\n"};
  RunningDaemon daemon{ws};
};

BenchDaemon& bench_daemon() {
  static BenchDaemon d;
  return d;
}

// state.range(0): an untimed pause (ms) after each session's end, as an agent works in a session
// before it creates the next: the warm pool refills meanwhile. 0: creations back to back, each
// beside the refill the one before it started (a clone of the whole daemon process).
void BM_DaemonCreateAndFirstExec(benchmark::State& state) {
  Connection c(bench_daemon().daemon.port);
  const auto pause = std::chrono::milliseconds(state.range(0));
  std::vector<double> ms, create_ms;
  for (auto _ : state) {
    std::this_thread::sleep_for(pause);
    auto start = std::chrono::steady_clock::now();
    const std::string id = c.create();
    std::chrono::duration<double> created = std::chrono::steady_clock::now() - start;
    c.exec_true(id);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    ms.push_back(took.count() * 1000);
    create_ms.push_back(created.count() * 1000);
    c.end(id);  // not timed: the next session's start does not pay this one's end
  }
  std::sort(create_ms.begin(), create_ms.end());
  state.counters["create_p50_ms"] = create_ms[create_ms.size() / 2];
  airlock::bench::report(state, ms);
  state.counters["warm_starts"] = c.warm_starts;
}

void BM_DaemonExec(benchmark::State& state) {
  Connection c(bench_daemon().daemon.port);
  const std::string id = c.create();
  measure(state, [&] { c.exec_true(id); });
  c.end(id);
}

// 1 MiB of text (a source file's kind of bytes: words, spaces, newlines), which DLP scans as
// it would a real file.
const std::string& one_mib() {
  static const std::string bytes = [] {
    static constexpr std::string_view kLine = "def handle(request, response):  # returns the answer for one request\n";
    std::string text;
    while (text.size() < (1u << 20)) text += kLine;
    text.resize(1u << 20);
    return text;
  }();
  return bytes;
}

// The floor: 1 MiB written to a file in /dev/shm and read back, no sandbox, no HTTP.
void BM_HostFileWriteRead1MiB(benchmark::State& state) {
  const std::string path = "/dev/shm/airlock-bench-" + std::to_string(::getpid());
  std::string back(one_mib().size(), '\0');
  measure(state, [&] {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::write(fd, one_mib().data(), one_mib().size()) != static_cast<ssize_t>(one_mib().size())) std::abort();
    ::close(fd);
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::read(fd, back.data(), back.size()) != static_cast<ssize_t>(back.size())) std::abort();
    ::close(fd);
  });
  ::unlink(path.c_str());
}

void BM_DaemonFileWrite1MiB(benchmark::State& state) {
  Connection c(bench_daemon().daemon.port);
  const std::string id = c.create();
  measure(state, [&] {
    c.raw(bhttp::verb::put, "/v1/sessions/" + id + "/files/f", one_mib(), "application/octet-stream", 200);
  });
  c.end(id);
}

void BM_DaemonFileRead1MiB(benchmark::State& state) {
  Connection c(bench_daemon().daemon.port);
  const std::string id = c.create();
  c.raw(bhttp::verb::put, "/v1/sessions/" + id + "/files/f", one_mib(), "application/octet-stream", 200);
  measure(state, [&] {
    if (c.raw(bhttp::verb::get, "/v1/sessions/" + id + "/files/f", "", "", 200).size() != one_mib().size()) std::abort();
  });
  c.end(id);
}

// The naive way without a files API: the bytes as an exec's stdin, and back as its stdout.
void BM_DaemonExecWrite1MiB(benchmark::State& state) {
  Connection c(bench_daemon().daemon.port);
  const std::string id = c.create();
  const std::string body = nlohmann::json{{"command", {"/bin/sh", "-c", "cat > /work/f"}}, {"stdin", one_mib()}}.dump();
  measure(state, [&] { c.call(bhttp::verb::post, "/v1/sessions/" + id + "/exec", body, 200); });
  c.end(id);
}

void BM_DaemonExecRead1MiB(benchmark::State& state) {
  Connection c(bench_daemon().daemon.port);
  const std::string id = c.create();
  c.raw(bhttp::verb::put, "/v1/sessions/" + id + "/files/f", one_mib(), "application/octet-stream", 200);
  const std::string body = nlohmann::json{{"command", {"/bin/cat", "/work/f"}}}.dump();
  measure(state, [&] {
    auto r = c.call(bhttp::verb::post, "/v1/sessions/" + id + "/exec", body, 200);
    if (r["stdout"].get<std::string>().size() != one_mib().size()) std::abort();
  });
  c.end(id);
}

// This process's memory cgroup (v1 memory, v2 the unified one): the daemon and every
// session's cgroup below it. Its usage, and that usage by kind (KiB).
struct CgroupMemory {
  double usage = 0;
  double anon = 0;    // processes' private memory
  double file = 0;    // page cache: files read and written (the audit log, state.db), reclaimable
  double shmem = 0;   // tmpfs: the sessions' roots, work dirs and /tmp (part of file on v1 and v2)
  double kernel = 0;  // kernel objects: namespaces, page tables, stacks, slabs
};

CgroupMemory cgroup_memory() {
  CgroupMemory m;
  std::ifstream self("/proc/self/cgroup");
  for (std::string line; std::getline(self, line);) {
    const auto colon = line.find(':'), second = line.find(':', colon + 1);
    const std::string controllers = line.substr(colon + 1, second - colon - 1), path = line.substr(second + 1);
    const bool v1 = controllers == "memory";
    if (!v1 && !controllers.empty()) continue;
    const std::string dir = v1 ? "/sys/fs/cgroup/memory" + path : "/sys/fs/cgroup" + path;
    std::ifstream usage(dir + (v1 ? "/memory.usage_in_bytes" : "/memory.current"));
    double bytes = 0;
    if (!(usage >> bytes) || bytes <= 0) continue;
    m.usage = bytes / 1024;
    std::ifstream stat(dir + "/memory.stat");
    std::map<std::string, double> field;
    std::string key;
    for (double value; stat >> key >> value;) field[key] = value / 1024;
    if (v1) {  // hierarchical totals; the kernel's share from the kmem counter
      m.anon = field["total_rss"];
      m.file = field["total_cache"];
      m.shmem = field["total_shmem"];
      std::ifstream kmem(dir + "/memory.kmem.usage_in_bytes");
      if (kmem >> bytes) m.kernel = bytes / 1024;
    } else {
      m.anon = field["anon"];
      m.file = field["file"];
      m.shmem = field["shmem"];
      m.kernel = field["kernel"];
    }
    return m;
  }
  return m;
}

void BM_DaemonOpenSessions(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  Connection c(bench_daemon().daemon.port);
  for (auto _ : state) {
    const long rss_before = rss_kib();
    const CgroupMemory cgroup_before = cgroup_memory();
    std::vector<std::string> open;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
      open.push_back(c.create());
      c.exec_true(open.back());
    }
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    const long rss_after = rss_kib();
    const CgroupMemory cgroup_after = cgroup_memory();
    auto listed = c.call(bhttp::verb::get, "/v1/sessions", "", 200)["sessions"].size();
    state.counters["sessions_open"] = static_cast<double>(listed);
    state.counters["daemon_rss_kib_per_session"] = static_cast<double>(rss_after - rss_before) / count;
    // The whole cgroup's growth per session, and by kind: the page cache of the daemon's files
    // is reclaimable, not held by the sessions.
    state.counters["cgroup_kib_per_session"] = (cgroup_after.usage - cgroup_before.usage) / count;
    state.counters["cgroup_anon_kib_per_session"] = (cgroup_after.anon - cgroup_before.anon) / count;
    state.counters["cgroup_file_kib_per_session"] = (cgroup_after.file - cgroup_before.file) / count;
    state.counters["cgroup_shmem_kib_per_session"] = (cgroup_after.shmem - cgroup_before.shmem) / count;
    state.counters["cgroup_kernel_kib_per_session"] = (cgroup_after.kernel - cgroup_before.kernel) / count;
    for (const auto& id : open) c.end(id);
  }
}

}  // namespace

BENCHMARK(BM_ForkExec)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_Bwrap)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_SandboxRun)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_SessionStartAndFirstExec)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_SessionExec)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_IdleSessions)->Iterations(1)->UseManualTime();
BENCHMARK(BM_DaemonCreateAndFirstExec)->Arg(0)->Arg(50)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_DaemonExec)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_HostFileWriteRead1MiB)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_DaemonFileWrite1MiB)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_DaemonFileRead1MiB)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_DaemonExecWrite1MiB)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_DaemonExecRead1MiB)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_DaemonOpenSessions)->Arg(500)->Iterations(1)->UseManualTime();

BENCHMARK_MAIN();
