// bench/code_cells: the code interpreter (issue #36) through a daemon in this process, over one
// keep-alive connection, beside its references, in one run, p50 and p99 of each:
//   jupyter: cell round trip          `x = x + 1` on a local Jupyter kernel (python3-ipykernel,
//                                     jupyter_client's KernelManager, ZeroMQ on loopback, no
//                                     sandbox): bench/jupyter_roundtrip.py, run from here
//   daemon: cell in a live session    POST /v1/sessions/{id}/code `x = x + 1` (validated, DLP,
//                                     audited, the session's sandbox)
//   daemon: create to first cell      POST /v1/sessions then the first cell's answer; Arg 0: the
//                                     interpreter starts on that cell, Arg 1: the template's warm
//                                     pool started it ahead (interpreter.start: ahead)
//   daemon: python-code tool          POST /v1/tools/{tool}/invoke, arguments {"code": ...}:
//                                     a stateless call; Arg 0 cold (a sandbox and python3 per
//                                     call), Arg 1 warm (a child of the tool's warm template)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_support.hpp"
#include "daemon_http.hpp"
#include "server_test_support.hpp"

namespace {

namespace bhttp = boost::beast::http;
using airlock::bench::KeepAliveConnection;
using airlock::bench::measure;
using airlock::server::test::RunningDaemon;
using airlock::server::test::Workspace;
using nlohmann::json;
constexpr int kRuns = 300;
constexpr int kCreations = 60;

struct BenchDaemon {
  Workspace ws{"server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 8, queueLength: 64, maxBodyBytes: 4Mi}",
               R"(  - name: code-cold
    runtime: {type: python-code}
  - name: code-warm
    runtime: {type: python-code}
    warm:
sessionTemplates:
  - name: cells
    limits: {memory: 512Mi, pids: 64, idleTimeout: 1h, output: 4Mi}
    warmPool: 2
  - name: notebook
    limits: {memory: 512Mi, pids: 64, idleTimeout: 1h, output: 4Mi}
    warmPool: 2
    interpreter: {start: ahead}
)"};
  RunningDaemon daemon{ws};
};

BenchDaemon& bench_daemon() {
  static BenchDaemon d;
  return d;
}

class Cells : public KeepAliveConnection {
 public:
  using KeepAliveConnection::KeepAliveConnection;
  std::string create(const std::string& template_name) {
    return call(bhttp::verb::post, "/v1/sessions", json{{"template", template_name}}.dump(), 201)["id"];
  }
  json cell(const std::string& id, const std::string& code) {
    auto answer = call(bhttp::verb::post, "/v1/sessions/" + id + "/code", json{{"code", code}}.dump(), 200);
    if (answer["verdict"] != "ok") {
      std::fprintf(stderr, "cell: %s\n", answer.dump().c_str());
      std::abort();
    }
    return answer;
  }
  void end(const std::string& id) { call(bhttp::verb::delete_, "/v1/sessions/" + id, "", 200); }
};

// The reference's figures, measured by its own script in this run.
void BM_JupyterKernelCell(benchmark::State& state) {
  std::string out;
  for (auto _ : state) {
    FILE* p = ::popen(("/usr/bin/python3 " AIRLOCK_BENCH_DIR "/jupyter_roundtrip.py " + std::to_string(kRuns) +
                       " 2>/dev/null").c_str(), "r");
    if (!p) std::abort();
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    if (::pclose(p) != 0) {
      state.SkipWithError("bench/jupyter_roundtrip.py failed (python3-ipykernel, python3-jupyter-client?)");
      return;
    }
  }
  const json figures = json::parse(out);
  std::vector<double> ms = figures["cell_ms"].get<std::vector<double>>();
  double total = 0;
  for (double m : ms) total += m;
  state.SetIterationTime(total / 1000);
  airlock::bench::report(state, ms);
  state.counters["start_to_first_cell_ms"] = figures["start_to_first_cell_ms"].get<double>();
}

void BM_DaemonCell(benchmark::State& state) {
  Cells c(bench_daemon().daemon.port);
  const std::string id = c.create("cells");
  c.cell(id, "x = 0");
  measure(state, [&] { c.cell(id, "x = x + 1"); });
  if (c.cell(id, "x")["result"]["json"] != state.iterations()) std::abort();
  c.end(id);
}

// Paced as an agent creates sessions (50 ms between, untimed), so the pool has refilled.
void BM_DaemonCreateToFirstCell(benchmark::State& state) {
  Cells c(bench_daemon().daemon.port);
  const std::string template_name = state.range(0) ? "notebook" : "cells";
  std::vector<double> ms;
  int ahead = 0;
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto start = std::chrono::steady_clock::now();
    const std::string id = c.create(template_name);
    auto answer = c.cell(id, "x = 1\nx + 1");
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    ms.push_back(took.count() * 1000);
    ahead += answer["interpreter"].value("start", "") == "ahead";
    c.end(id);
  }
  airlock::bench::report(state, ms);
  state.counters["interpreter_started_ahead"] = ahead;
}

void BM_DaemonPythonCodeTool(benchmark::State& state) {
  KeepAliveConnection c(bench_daemon().daemon.port);
  const std::string tool = state.range(0) ? "code-warm" : "code-cold";
  const std::string body = json{{"arguments", {{"code", "x = 1 + 1\nprint(x)"}}}}.dump();
  int warm = 0;
  for (int i = 0; i < 50 && state.range(0); ++i) {  // until its template is up
    if (c.call(bhttp::verb::post, "/v1/tools/" + tool + "/invoke", body, 200).value("start", "") == "warm") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  measure(state, [&] {
    auto answer = c.call(bhttp::verb::post, "/v1/tools/" + tool + "/invoke", body, 200);
    if (answer["verdict"] != "ok") std::abort();
    warm += answer.value("start", "") == "warm";
  });
  state.counters["warm_starts"] = warm;
}

}  // namespace

BENCHMARK(BM_JupyterKernelCell)->Iterations(1)->UseManualTime();
BENCHMARK(BM_DaemonCell)->Iterations(kRuns)->UseManualTime();
BENCHMARK(BM_DaemonCreateToFirstCell)->Arg(0)->Arg(1)->Iterations(kCreations)->UseManualTime();
BENCHMARK(BM_DaemonPythonCodeTool)->Arg(0)->Arg(1)->Iterations(kRuns)->UseManualTime();

BENCHMARK_MAIN();
