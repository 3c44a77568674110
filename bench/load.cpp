// bench/load: the daemon under load, beside `airlock run` in a loop (what the daemon adds).
//   Daemon:      `airlock serve` (a child process) with a trivial Python tool; 100 concurrent
//                clients on keep-alive connections call it for AIRLOCK_LOAD_SECONDS (60):
//                invocations/s, end-to-end p50/p99, p50/p99 per pipeline stage (from the
//                Server-Timing header), the daemon's RSS at start and end, errors.
//   AirlockRun:  the same tool module run by `airlock run` (the runner, stdin JSON) from as many
//                loops as there are CPUs, for the same time.
//   DaemonsOnStorage/{postgres}/{daemons}: one daemon on SQLite, or N daemons (a parameter)
//                sharing one PostgreSQL database (a throwaway cluster, fsync on), 100 clients
//                spread over them (issue 21); /quota 1: with every quota kind set (issue 22).
//   Daemon/{cold,warm}/{1,50}: the same daemon and tool, cold or with tools[].warm
//                (docs/warm-start.md), 1 and 50 clients: also the warm share of the calls and
//                the machine's CPU time per call (from /proc/stat, every process included).
//   CodeCall/{cold,warm}: a python-code tool (a small cell with a print and run(args)), cold or
//                warm, one client: end to end, the code's validation included (issue 36).
//   NetworkedCall/{cold,warm}: a tool with a network rule that fetches one small page from a
//                server on the host's loopback through its egress proxy (urllib, HTTP_PROXY),
//                cold or warm (its proxy bound at the hand-over), one client, end to end.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "common/digest.hpp"
#include "pg_cluster.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

int seconds() {
  const char* s = std::getenv("AIRLOCK_LOAD_SECONDS");
  return s ? std::max(1, std::atoi(s)) : 60;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

double rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// A directory with the tool and a config (airlock.yaml); more configs, one per daemon, with
// add_config().
struct Setup {
  std::string dir;
  bool warm;
  std::uint16_t fetch_port = 0;  // non-zero: a tool `fetch` allowed 127.0.0.1:fetch_port
  explicit Setup(bool warm_tools = false, std::uint16_t fetch_from = 0)
      : warm(warm_tools), fetch_port(fetch_from) {
    dir = (fs::temp_directory_path() / ("airlock-load-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir + "/tools");
    ::chmod(dir.c_str(), 0755);
    ::chmod((dir + "/tools").c_str(), 0755);
    std::ofstream(dir + "/tools/trivial.py") << "def run(args):\n    return {\"n\": args.get(\"n\", 0) + 1}\n";
    ::chmod((dir + "/tools/trivial.py").c_str(), 0644);
    std::ofstream(dir + "/tools/fetch.py")
        << "import urllib.request\ndef run(args):\n"
           "    return {\"body\": urllib.request.urlopen(args[\"url\"], timeout=10).read().decode()}\n";
    ::chmod((dir + "/tools/fetch.py").c_str(), 0644);
    add_config("airlock.yaml", "{dataDir: data}");
  }
  // `storage`: the config's storage section, in YAML flow style; `more`: sections after it.
  std::string add_config(const std::string& name, const std::string& storage, const std::string& more = "") const {
    std::ofstream(dir + "/" + name)
        << "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
           "server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 6, queueLength: 256}\n"
           "storage: " << storage << "\n"
           "principals:\n  - name: bench\n    apiKeySha256: " << airlock::sha256_hex("bench-key") << "\n"
           "    tools: [trivial, code" << (fetch_port ? ", fetch" : "") << "]\n"
           "tools:\n  - name: trivial\n    runtime: {type: python, file: tools/trivial.py}\n"
           "    inputSchema: {type: object, properties: {n: {type: integer}}}\n"
        << (warm ? "    warm: {}\n" : "")
        << "  - name: code\n    runtime: {type: python-code}\n" << (warm ? "    warm: {}\n" : "");
    if (fetch_port)
      std::ofstream(dir + "/" + name, std::ios::app)
          << "  - name: fetch\n    runtime: {type: python, file: tools/fetch.py}\n"
             "    network: {allow: [\"127.0.0.1:" << fetch_port << "\"]}\n" << (warm ? "    warm: {}\n" : "");
    std::ofstream(dir + "/" + name, std::ios::app) << more;
    return dir + "/" + name;
  }
  ~Setup() { fs::remove_all(dir); }
};

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

pid_t spawn(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet) {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) std::abort();
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

struct Sample {
  double total_ms;
  std::map<std::string, double> stages;
  bool ok;
};

std::map<std::string, double> parse_server_timing(std::string_view header) {
  std::map<std::string, double> out;
  std::size_t pos = 0;
  while (pos < header.size()) {
    auto end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    auto item = header.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    auto semi = item.find(";dur=");
    if (semi != std::string_view::npos)
      out[std::string(item.substr(0, semi))] = std::stod(std::string(item.substr(semi + 5)));
    pos = end + 1;
  }
  return out;
}

// Busy CPU time of the whole machine so far, in seconds.
double machine_busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user, nice, system, idle, iowait, irq, softirq, steal;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return (user + nice + system + irq + softirq) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// A daemon per config (`airlock serve`), each on its own port, waited for until it listens.
std::vector<std::pair<pid_t, std::uint16_t>> start_daemons(const std::vector<std::string>& configs) {
  std::vector<std::pair<pid_t, std::uint16_t>> daemons;
  for (const auto& config : configs) {
    const std::uint16_t port = free_port();
    // AIRLOCK_LOAD_BINARY: another build's `airlock` (with its airlock-serve beside it), for
    // an A/B of two builds in one run.
    const char* binary = std::getenv("AIRLOCK_LOAD_BINARY");
    daemons.emplace_back(spawn({binary && *binary ? binary : AIRLOCK_BINARY, "serve", "--config", config, "--listen",
                                "127.0.0.1:" + std::to_string(port)},
                               true),
                         port);
  }
  for (const auto& [pid, port] : daemons)
    for (int i = 0; i < 500; ++i) {
      try {
        asio::io_context io;
        beast::tcp_stream s(io);
        s.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
        break;
      } catch (...) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  return daemons;
}

// What the clients call: a tool, and the body of client c's call i.
struct Target {
  std::string tool = "trivial";
  std::function<std::string(int, int)> body = [](int c, int i) {
    return "{\"arguments\": {\"n\": " + std::to_string(c * 100000 + i) + "}}";
  };
  std::string path() const { return "/v1/tools/" + tool + "/invoke"; }
};

// `client_count` clients on keep-alive connections, client c calling daemon c % N.
void run_daemons(benchmark::State& state, bool warm, int client_count,
                 const std::vector<std::string>& configs, const Target& target = {}) {
  const auto daemons = start_daemons(configs);
  const pid_t daemon = daemons.front().first;
  const std::uint16_t port = daemons.front().second;
  const double rss_start = rss_mib(daemon);
  std::mutex mu;
  std::vector<Sample> samples;
  std::atomic<long> errors{0}, warm_starts{0};
  if (warm)  // the template starts with the first call; measure from when it is ready
    for (int i = 0; i < 200; ++i) {
      asio::io_context io;
      beast::tcp_stream stream(io);
      stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
      http::request<http::string_body> req{http::verb::post, target.path(), 11};
      req.set(http::field::host, "127.0.0.1");
      req.set(http::field::authorization, "Bearer bench-key");
      req.set(http::field::content_type, "application/json");
      req.body() = target.body(0, 1);
      req.prepare_payload();
      http::write(stream, req);
      beast::flat_buffer b;
      http::response<http::string_body> res;
      http::read(stream, b, res);
      if (res.body().find("\"start\":\"warm\"") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  const double busy_start = machine_busy_seconds();
  for (auto _ : state) {
    const auto deadline = Clock::now() + std::chrono::seconds(seconds());
    const auto start = Clock::now();
    std::vector<std::thread> clients;
    for (int c = 0; c < client_count; ++c)
      clients.emplace_back([&, c] {
        asio::io_context io;
        beast::tcp_stream stream(io);
        const std::uint16_t to = daemons[static_cast<std::size_t>(c) % daemons.size()].second;
        stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), to));
        std::vector<Sample> mine;
        beast::flat_buffer buffer;
        for (int i = 0; Clock::now() < deadline; ++i) {
          http::request<http::string_body> req{http::verb::post, target.path(), 11};
          req.set(http::field::host, "127.0.0.1");
          req.set(http::field::authorization, "Bearer bench-key");
          req.set(http::field::content_type, "application/json");
          req.keep_alive(true);
          req.body() = target.body(c, i);
          req.prepare_payload();
          auto t0 = Clock::now();
          beast::error_code ec;
          http::write(stream, req, ec);
          http::response<http::string_body> res;
          if (!ec) http::read(stream, buffer, res, ec);
          double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
          bool ok = !ec && res.result_int() == 200 && res.body().find("\"status\":\"ok\"") != std::string::npos;
          if (!ok) ++errors;
          if (ok && res.body().find("\"start\":\"warm\"") != std::string::npos) ++warm_starts;
          if (ec) break;
          mine.push_back({ms, parse_server_timing(res["Server-Timing"]), ok});
        }
        std::lock_guard lock(mu);
        samples.insert(samples.end(), mine.begin(), mine.end());
      });
    for (auto& t : clients) t.join();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const double busy = machine_busy_seconds() - busy_start;
  const double rss_end = rss_mib(daemon);
  for (const auto& [pid, unused] : daemons) ::kill(pid, SIGTERM);
  for (const auto& [pid, unused] : daemons) ::waitpid(pid, nullptr, 0);

  std::vector<double> total;
  std::map<std::string, std::vector<double>> stages;
  for (const auto& s : samples) {
    total.push_back(s.total_ms);
    for (const auto& [k, v] : s.stages) stages[k].push_back(v);
  }
  state.counters["invocations_per_s"] =
      benchmark::Counter(static_cast<double>(samples.size()), benchmark::Counter::kIsRate);
  state.counters["errors"] = static_cast<double>(errors.load());
  state.counters["p50_ms"] = percentile(total, 0.50);
  state.counters["p99_ms"] = percentile(total, 0.99);
  state.counters["rss_start_mib"] = rss_start;
  state.counters["rss_end_mib"] = rss_end;
  state.counters["warm_share"] =
      samples.empty() ? 0 : static_cast<double>(warm_starts.load()) / static_cast<double>(samples.size());
  state.counters["cpu_ms_per_call"] =
      samples.empty() ? 0 : busy * 1000 / static_cast<double>(samples.size());
  for (const auto& [stage, v] : stages) {
    std::printf("  stage %-14s p50 %8.3f ms   p99 %8.3f ms\n", stage.c_str(), percentile(v, 0.5), percentile(v, 0.99));
  }
}

void run_daemon(benchmark::State& state, bool warm, int client_count) {
  Setup setup(warm);
  run_daemons(state, warm, client_count, {setup.dir + "/airlock.yaml"});
}

void BM_Daemon(benchmark::State& state) { run_daemon(state, false, 100); }

// A python-code call as a model writes one: a loop, a print, run(args). Its validation (the
// AST worker and the rules) and DLP code scan are in the figure, as in every call's.
void BM_CodeCall(benchmark::State& state, bool warm) {
  Setup setup(warm);
  Target cell;
  cell.tool = "code";
  cell.body = [](int, int i) {
    return "{\"arguments\": {\"code\": \"total = sum(range(100))\\nprint(total)\\n"
           "def run(a):\\n    return {'n': a['n'] + total}\\n\", \"arguments\": {\"n\": " +
           std::to_string(i) + "}}}";
  };
  run_daemons(state, warm, 1, {setup.dir + "/airlock.yaml"}, cell);
}

// A server on the host's loopback that answers every request with a small page.
class PageServer {
 public:
  PageServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      std::abort();
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (int c; (c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; ::close(c)) {
        std::string head;
        char buf[4096];
        for (ssize_t n; head.find("\r\n\r\n") == std::string::npos && (n = ::recv(c, buf, sizeof buf, 0)) > 0;)
          head.append(buf, static_cast<std::size_t>(n));
        static const std::string page =
            "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
        (void)!::send(c, page.data(), page.size(), MSG_NOSIGNAL);
      }
    });
  }
  ~PageServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// A networked tool's call (docs/warm-start.md): its sandbox behind a proxy of its own, one
// page fetched through it. Warm: the child and its listener prepared ahead, the proxy bound
// at the hand-over.
void BM_NetworkedCall(benchmark::State& state, bool warm) {
  PageServer page;
  Setup setup(warm, page.port());
  Target fetch;
  fetch.tool = "fetch";
  const std::string url = "http://127.0.0.1:" + std::to_string(page.port()) + "/";
  fetch.body = [url](int, int) { return "{\"arguments\": {\"url\": \"" + url + "\"}}"; };
  run_daemons(state, warm, 1, {setup.dir + "/airlock.yaml"}, fetch);
}

void BM_DaemonStart(benchmark::State& state, bool warm) {
  run_daemon(state, warm, static_cast<int>(state.range(0)));
}

// A throwaway PostgreSQL 15 cluster (tests/support/pg_cluster), durable as a production server
// (fsync and synchronous_commit on), with a role and a database for the daemons' audit log.
struct BenchDatabase {
  std::unique_ptr<airlock::test::PgCluster> cluster;
  std::string url;
};

BenchDatabase start_bench_database() {
  airlock::test::PgCluster::Options options;
  options.settings = {{"fsync", "on"}, {"synchronous_commit", "on"}};
  auto started = airlock::test::PgCluster::start(options);
  if (!started) return {};
  if (!(*started)->exec("CREATE ROLE bench LOGIN PASSWORD 'bench-pw'") ||
      !(*started)->exec("CREATE DATABASE airlock OWNER bench"))
    return {};
  std::string url = (*started)->url("bench", "bench-pw", "airlock");
  return {std::move(*started), url};
}

// The daemon's throughput on its storage: postgres 0, one daemon on SQLite (the embedded
// default: <dataDir>/audit.db); postgres 1, `daemons` daemons sharing one PostgreSQL database
// (storage.postgres, one signing key file and one token key file), each with its own data directory; 100 clients
// spread over them. What is in PostgreSQL is what main puts there (the audit log; more as the
// state stores move).
// quota 1: every quota kind set (none refuses here), so each call's admission reads and
// writes the bucket and its end charges CPU (on PostgreSQL: the shared book, issue #22). With
// quota 0: no quotas section, so the calls are counted per replica in memory (the fallback).
void BM_DaemonsOnStorage(benchmark::State& state) {
  const bool postgres = state.range(0) == 1;
  const int count = static_cast<int>(state.range(1));
  const std::string quotas =
      state.range(2) ? "quotas:\n  default: {concurrent: 500, rate: 100000/s, cpuSeconds: 100000/m}\n" : "";
  Setup setup;
  BenchDatabase database;
  if (postgres) {
    database = start_bench_database();
    if (!database.cluster) {
      state.SkipWithError("cannot start PostgreSQL");
      return;
    }
  }
  std::vector<std::string> configs;
  for (int d = 0; d < count; ++d) {
    std::string storage = "{dataDir: data-" + std::to_string(d);
    if (postgres)
      storage += ", signingKeyFile: " + setup.dir + "/audit.key, tokenKeyFile: " + setup.dir +
                 "/token.key, postgres: {url: \"" + database.url + "\"}";
    configs.push_back(setup.add_config("airlock-" + std::to_string(d) + ".yaml", storage + "}", quotas));
  }
  run_daemons(state, false, 100, configs);
  state.SetLabel((postgres ? std::to_string(count) + " daemon(s), PostgreSQL" : std::string("1 daemon, SQLite")) +
                 (state.range(2) ? ", quotas" : ""));
}

void BM_AirlockRun(benchmark::State& state) {
  Setup setup;
  // The runner the daemon uses, from a throwaway data dir of a daemon start.
  const std::string runner_dir = setup.dir + "/runner";
  fs::create_directories(runner_dir);
  ::chmod(runner_dir.c_str(), 0755);
  fs::copy(AIRLOCK_RUNNER_SOURCE, runner_dir + "/airlock_runner.py");
  ::chmod((runner_dir + "/airlock_runner.py").c_str(), 0644);
  std::ofstream(setup.dir + "/in.json") << "{\"n\": 1}";
  ::chmod((setup.dir + "/in.json").c_str(), 0644);
  const unsigned loops = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<long> runs{0}, errors{0};
  std::mutex mu;
  std::vector<double> ms;
  for (auto _ : state) {
    const auto deadline = Clock::now() + std::chrono::seconds(std::max(10, seconds() / 3));
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    for (unsigned w = 0; w < loops; ++w)
      workers.emplace_back([&] {
        std::vector<double> mine;
        while (Clock::now() < deadline) {
          auto t0 = Clock::now();
          pid_t pid = spawn({AIRLOCK_BINARY, "run", "--ro", runner_dir + ":/airlock", "--ro",
                             setup.dir + "/tools:/tool", "--stdin", setup.dir + "/in.json", "--", "python3", "-I", "-S",
                             "/airlock/airlock_runner.py", "module", "/tool/trivial.py"},
                            true);
          int status = 0;
          ::waitpid(pid, &status, 0);
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          ++runs;
          if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++errors;
        }
        std::lock_guard lock(mu);
        ms.insert(ms.end(), mine.begin(), mine.end());
      });
    for (auto& t : workers) t.join();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.counters["invocations_per_s"] = benchmark::Counter(static_cast<double>(runs.load()), benchmark::Counter::kIsRate);
  state.counters["errors"] = static_cast<double>(errors.load());
  state.counters["p50_ms"] = percentile(ms, 0.50);
  state.counters["p99_ms"] = percentile(ms, 0.99);
}

// One call over a fresh connection: the status and the body.
std::pair<int, std::string> call_once(std::uint16_t port, const std::string& tool, const std::string& key,
                                      const std::string& arguments) {
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    http::request<http::string_body> req{http::verb::post, "/v1/tools/" + tool + "/invoke", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::authorization, "Bearer " + key);
    req.set(http::field::content_type, "application/json");
    req.body() = "{\"arguments\": " + arguments + "}";
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer b;
    http::response<http::string_body> res;
    http::read(stream, b, res);
    return {res.result_int(), res.body()};
  } catch (const std::exception& e) {
    return {0, e.what()};
  }
}

// The victim's 50 sequential calls: p50 and p99, and how many were not 200 ok.
struct VictimRun {
  std::vector<double> ms;
  int refused = 0;
};
VictimRun victim_calls(std::uint16_t port, const std::string& tool) {
  VictimRun run;
  for (int i = 0; i < 50; ++i) {
    auto t0 = Clock::now();
    auto [status, body] = call_once(port, tool, "victim-key", "{\"n\": " + std::to_string(i) + "}");
    run.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (status != 200 || body.find("\"status\":\"ok\"") == std::string::npos) ++run.refused;
  }
  return run;
}

// Issue #22: two agents on one daemon (quotas.default.concurrent 4, 6 workers). The victim
// makes 50 sequential calls of a trivial tool alone, then again while the flooder has 200
// concurrent calls of a tool that sleeps 2 s in flight: its p50/p99 in both, its refusals,
// and the flooder's 429 quota_exceeded. `warm`: the trivial tool forks from its template.
void BM_TwoAgents(benchmark::State& state, bool warm) {
  Setup setup(warm);
  std::ofstream(setup.dir + "/tools/sleep2.py") << "import time\n\ndef run(args):\n    time.sleep(2)\n    return {}\n";
  ::chmod((setup.dir + "/tools/sleep2.py").c_str(), 0644);
  std::ofstream(setup.dir + "/airlock.yaml")
      << "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n"
         "server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 6, queueLength: 256}\n"
         "storage: {dataDir: data}\n"
         "principals:\n"
         "  - {name: flooder, apiKeySha256: " << airlock::sha256_hex("flooder-key") << ", tools: [sleep2]}\n"
         "  - {name: victim, apiKeySha256: " << airlock::sha256_hex("victim-key") << ", tools: [trivial]}\n"
         "quotas: {default: {concurrent: 4}}\n"
         "tools:\n  - name: trivial\n    runtime: {type: python, file: tools/trivial.py}\n"
         "    inputSchema: {type: object, properties: {n: {type: integer}}}\n"
      << (warm ? "    warm: {}\n" : "")
      << "  - name: sleep2\n    runtime: {type: python, file: tools/sleep2.py}\n    limits: {timeout: 10s}\n";
  const std::uint16_t port = free_port();
  pid_t daemon = spawn({AIRLOCK_BINARY, "serve", "--config", setup.dir + "/airlock.yaml", "--listen",
                        "127.0.0.1:" + std::to_string(port)},
                       true);
  for (int i = 0; i < 500 && call_once(port, "trivial", "victim-key", "{}").first == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int i = 0; i < 20; ++i) (void)call_once(port, "trivial", "victim-key", "{}");  // the template, if any
  VictimRun alone, flooded;
  std::atomic<int> flood_ok{0}, flood_quota{0}, flood_other{0};
  for (auto _ : state) {
    const auto start = Clock::now();
    alone = victim_calls(port, "trivial");
    std::vector<std::thread> flood;
    for (int i = 0; i < 200; ++i)
      flood.emplace_back([&] {
        auto [status, body] = call_once(port, "sleep2", "flooder-key", "{}");
        if (status == 200) ++flood_ok;
        else if (status == 429 && body.find("quota_exceeded") != std::string::npos) ++flood_quota;
        else ++flood_other;
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    flooded = victim_calls(port, "trivial");
    for (auto& t : flood) t.join();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  ::kill(daemon, SIGTERM);
  ::waitpid(daemon, nullptr, 0);
  state.counters["victim_alone_p50_ms"] = percentile(alone.ms, 0.5);
  state.counters["victim_alone_p99_ms"] = percentile(alone.ms, 0.99);
  state.counters["victim_flooded_p50_ms"] = percentile(flooded.ms, 0.5);
  state.counters["victim_flooded_p99_ms"] = percentile(flooded.ms, 0.99);
  state.counters["victim_refused"] = alone.refused + flooded.refused;
  state.counters["flood_ok"] = flood_ok.load();
  state.counters["flood_quota_exceeded"] = flood_quota.load();
  state.counters["flood_other"] = flood_other.load();
}

}  // namespace

BENCHMARK(BM_Daemon)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
// daemons: 2 is the replicas figure, once the other state stores are in PostgreSQL too.
BENCHMARK(BM_DaemonsOnStorage)->ArgNames({"postgres", "daemons", "quota"})->Args({0, 1, 0})->Args({1, 1, 0})
    ->Args({1, 2, 0})->Args({0, 1, 1})->Args({1, 2, 1})->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK(BM_AirlockRun)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DaemonStart, cold, false)->Arg(1)->Arg(50)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DaemonStart, warm, true)->Arg(1)->Arg(50)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_CodeCall, cold, false)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_CodeCall, warm, true)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_NetworkedCall, cold, false)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_NetworkedCall, warm, true)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_TwoAgents, cold, false)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_TwoAgents, warm, true)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_MAIN();
