// bench/validate: how long static validation takes.
//   warm worker, 300-line tool       validate::Validator::check through the warm, sandboxed
//   warm worker, 5,000-line file     parse worker (what the daemon pays per call); second
//                                    argument: 1 the worker's C tree walk, 0 its Python walk
//   cold python3 -c "import ast; ast.parse(...)"   a fresh interpreter per parse, no sandbox,
//                                                  no rules: the cost the warm worker avoids
//   cold sandboxed ast_dump.py       a fresh sandbox + interpreter per parse (one-shot worker)
// Each reports p50 and p99 of the per-call wall time (counters p50_ms / p99_ms).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "sandbox/sandbox.hpp"
#include "validate/engine.hpp"
#include "validate/parse_worker.hpp"
#include "validate/validate.hpp"


namespace {

using airlock::bench::measure;
using airlock::validate::Policy;
using airlock::validate::Validator;
using airlock::validate::Verdict;

// One ordinary tool function (10 lines); the sources repeat it with fresh names.
std::string tool_block(int n) {
  std::string i = std::to_string(n);
  return "def summarize_" + i + "(path):\n"
         "    with open(path) as f:\n"
         "        rows = [json.loads(line) for line in f if line.strip()]\n"
         "    totals = collections.Counter(r.get('kind', 'other') for r in rows)\n"
         "    stamp = datetime.datetime.now().strftime('%Y-%m-%d')\n"
         "    words = re.findall(r'[a-z]+', ' '.join(r.get('text', '') for r in rows))\n"
         "    result = {'n': len(rows), 'kinds': dict(totals), 'date': stamp, 'words': len(words)}\n"
         "    with open('/work/summary_" + i + ".json', 'w') as out:\n"
         "        json.dump(result, out)\n"
         "    return result\n";
}

std::string tool_source(int lines) {
  std::string source = "import collections\nimport datetime\nimport json\nimport re\n";
  for (int n = 0; static_cast<int>(std::count(source.begin(), source.end(), '\n')) < lines; ++n)
    source += tool_block(n);
  return source;
}

airlock::validate::ParseWorkerConfig worker_config(bool native) {
  airlock::validate::ParseWorkerConfig config;
  config.script = airlock::validate::default_parser_script();
  if (native) {
    config.native_walker = airlock::validate::default_native_walker();
    if (config.native_walker.empty()) std::abort();  // built without python3-dev
  }
  return config;
}

void BM_WarmWorker(benchmark::State& state) {
  std::string source = tool_source(static_cast<int>(state.range(0)));
  airlock::validate::ValidatorOptions options;
  if (state.range(1) == 0) options.native_walker = "none";
  Validator validator(options);
  Policy policy;
  if (!validator.prepare(policy).ok()) std::abort();
  if (validator.check(source, policy).verdict != Verdict::accept) std::abort();  // warm-up
  measure(state, [&] {
    if (validator.check(source, policy).verdict != Verdict::accept) std::abort();
  });
  state.counters["lines"] = static_cast<double>(state.range(0));
}

// python3 -c "import ast, sys; ast.parse(sys.stdin.buffer.read())" with the source on stdin.
void spawn_cold_parse(const std::string& source) {
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) std::abort();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  const char* argv[] = {"/usr/bin/python3", "-c",
                        "import ast, sys; ast.parse(sys.stdin.buffer.read())", nullptr};
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, const_cast<char**>(argv), environ) != 0)
    std::abort();
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  if (write(in[1], source.data(), source.size()) != static_cast<ssize_t>(source.size())) std::abort();
  close(in[1]);
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::abort();
}

void BM_ColdPythonAstParse(benchmark::State& state) {
  std::string source = tool_source(static_cast<int>(state.range(0)));
  measure(state, [&] { spawn_cold_parse(source); });
  state.counters["lines"] = static_cast<double>(state.range(0));
}

void BM_ColdSandboxedDump(benchmark::State& state) {
  std::string source = tool_source(static_cast<int>(state.range(0)));
  airlock::validate::ParseWorkerConfig config;
  config.script = airlock::validate::default_parser_script();
  auto spec = airlock::validate::parser_sandbox_spec(config, {"dump"});
  spec.stdin_source.kind = airlock::sandbox::StdinSource::Kind::bytes;
  spec.stdin_source.bytes = source;
  measure(state, [&] {
    if (airlock::sandbox::run(spec).verdict != airlock::sandbox::Verdict::ok) std::abort();
  });
  state.counters["lines"] = static_cast<double>(state.range(0));
}

// The parts of a warm check, measured apart: the worker's reply read into the tree index, and
// the rules over it (both in this process; the worker's own time is the rest).
airlock::validate::ParsedSource worker_reply(const std::string& source, bool native) {
  airlock::validate::ParseWorker worker(worker_config(native));
  auto reply = worker.parse(source);
  if (!reply.ok()) std::abort();
  return std::move(*reply);
}

// Binary (C walk): the tree decoded into the index. JSON (Python walk): the reply parsed
// into nlohmann::json and indexed.
void BM_ReplyDecode(benchmark::State& state) {
  bool native = state.range(1) != 0;
  auto parsed = worker_reply(tool_source(static_cast<int>(state.range(0))), native);
  std::string text = parsed.reply.dump();
  measure(state, [&] {
    if (native) {
      std::string error;
      auto tree = airlock::validate::SyntaxTree::from_binary(parsed.tree_bytes, error);
      if (!tree) std::abort();
      benchmark::DoNotOptimize(tree->root());
    } else {
      auto json = airlock::validate::Json::parse(text);
      airlock::validate::SyntaxTree tree(json);
      benchmark::DoNotOptimize(tree.root());
    }
  });
  state.counters["reply_kb"] = static_cast<double>(native ? parsed.tree_bytes.size() : text.size()) / 1024;
}

// The index, the program facts and every rule, from the binary tree.
void BM_RulesOnly(benchmark::State& state) {
  auto parsed = worker_reply(tool_source(static_cast<int>(state.range(0))), true);
  Policy policy;
  airlock::validate::ExportTable exports;
  measure(state, [&] {
    airlock::validate::Program program(parsed, policy);
    benchmark::DoNotOptimize(program.analyze(exports));
  });
}

// The worker's round trip alone (request, parse, reply), for a one-line and a 300-line source.
void BM_WorkerRoundTrip(benchmark::State& state) {
  std::string source = state.range(0) <= 1 ? std::string("x = 1\n") : tool_source(static_cast<int>(state.range(0)));
  airlock::validate::ParseWorker worker(worker_config(state.range(1) != 0));
  if (!worker.parse(source).ok()) std::abort();
  measure(state, [&] {
    if (!worker.parse(source).ok()) std::abort();
  });
}

// The floor under any design that uses the interpreter's own ast module: ast.parse alone,
// repeated inside one running python3 (no process start, no JSON, no rules); with the cyclic
// garbage collector on (argument 1) and off (0, as in the worker).
void BM_AstParseFloor(benchmark::State& state) {
  std::string source = tool_source(static_cast<int>(state.range(0)));
  std::string path = "/tmp/airlock-bench-validate-" + std::to_string(getpid()) + ".py";
  FILE* f = fopen(path.c_str(), "w");
  if (!f) std::abort();
  fwrite(source.data(), 1, source.size(), f);
  fclose(f);
  std::string script =
      "import ast, gc, sys, time\n"
      "gc.enable() if int(sys.argv[2]) else gc.disable()\n"
      "b = open(sys.argv[1], 'rb').read()\n"
      "ts = []\n"
      "for _ in range(200):\n"
      "    t = time.perf_counter(); ast.parse(b); ts.append((time.perf_counter() - t) * 1e3)\n"
      "ts.sort(); print(ts[100], ts[198])\n";
  std::string command = "/usr/bin/python3 -c \"" + script + "\" " + path + " " + std::to_string(state.range(1));
  double p50 = 0, p99 = 0;
  for (auto _ : state) {
    FILE* p = popen(command.c_str(), "r");
    if (!p || fscanf(p, "%lf %lf", &p50, &p99) != 2) std::abort();
    pclose(p);
    state.SetIterationTime(p50 / 1000);
  }
  unlink(path.c_str());
  state.counters["p50_ms"] = p50;
  state.counters["p99_ms"] = p99;
}

}  // namespace

BENCHMARK(BM_AstParseFloor)->Args({300, 1})->Args({300, 0})->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WorkerRoundTrip)->Args({1, 1})->Args({300, 1})->Args({300, 0})->Iterations(300)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplyDecode)->Args({300, 1})->Args({300, 0})->Iterations(200)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RulesOnly)->Arg(300)->Iterations(200)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WarmWorker)->Args({300, 1})->Args({300, 0})->Iterations(300)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WarmWorker)->Args({5000, 1})->Args({5000, 0})->Iterations(100)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ColdPythonAstParse)->Arg(300)->Iterations(100)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ColdPythonAstParse)->Arg(5000)->Iterations(50)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ColdSandboxedDump)->Arg(300)->Iterations(100)->UseManualTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();

