// bench/egress: the egress proxy against a direct connection, in the same run.
//   Download/direct                      1 GiB from a loopback server, client on the host
//   Download/proxy                       (root only) the same through the proxy (HTTP
//                                        CONNECT), in the deployed topology: the client and
//                                        the proxy's listener in a network namespace of their
//                                        own whose lo is set up as a sandbox's is
//                                        (sandbox::bring_up_loopback), the proxy and the
//                                        server on the host
//   Download/proxy_host_lo               the same with the listener on the host's loopback
//                                        (both hops on the host's lo, as the host set it up)
//   PythonDownload/host, PythonDownload/sandbox   one Python client reading 1 MiB at a time,
//                                        on the host directly and inside a real sandbox
//                                        (`backend::run_local`) through the proxy; it times
//                                        itself from its connect to the last byte
//   Connect/direct, Connect/proxy        connection set-up until the first byte arrives
//                                        (proxy: TCP connect + CONNECT + 200 + first byte)
//   CurlDownload/host, CurlDownload/sandbox   the same 1 GiB fetched by curl on the host
//                                        directly and inside `backend::run_local` through
//                                        the proxy (the whole path a tool sees, start-up
//                                        included)
//   NetworkedToolCall/cold, NetworkedToolCall/warm   a Python module tool with a network
//                                        rule that fetches a 6-byte page from a loopback server
//                                        through its egress proxy (urllib, HTTP_PROXY), one
//                                        call at a time through backend::LocalBackend: cold
//                                        (sandbox, proxy, Python, import, fetch) or warm (a child
//                                        of its template prepared ahead, its listener opened in
//                                        its own network namespace, the call's proxy bound at the
//                                        hand-over: docs/warm-start.md); /0: the same call
//                                        returning without a fetch, /1: with it
//   ShapedDownload/direct, ShapedDownload/proxy   (root only) the 1 GiB over an upstream link
//                                        shaped to 10 Gbit/s: server and the proxy's upstream
//                                        side in one network namespace whose lo is shaped
//                                        (tbf), the client and the proxy's listener in
//                                        another, set up as a sandbox's. Direct: the client
//                                        in the shaped one.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "backend/local.hpp"
#include "bench_support.hpp"
#include "egress/policy.hpp"
#include "egress/proxy.hpp"
#include "sandbox/loopback.hpp"
#include "sandbox/sandbox.hpp"

namespace {

constexpr std::uint64_t kDownloadBytes = 1ULL << 30;

int listen_loopback(std::uint16_t* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 512) != 0) std::abort();
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int connect_loopback(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) std::abort();
  return fd;
}

// Serves every connection: reads the request head (if `http`), then sends `bytes` bytes.
class BlobServer {
 public:
  BlobServer(std::uint64_t bytes, bool http) : bytes_(bytes), http_(http) {
    fd_ = listen_loopback(&port_);
    thread_ = std::thread([this] {
      for (;;) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        std::thread([this, c] { serve(c); }).detach();
      }
    });
  }
  ~BlobServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  void serve(int c) {
    if (http_) {
      std::string head;
      char ch;
      while (head.find("\r\n\r\n") == std::string::npos && ::recv(c, &ch, 1, 0) == 1) head += ch;
      std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(bytes_) +
                          "\r\nConnection: close\r\n\r\n";
      (void)!::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
    }
    static const std::vector<char> chunk(1 << 20, 'x');
    std::uint64_t left = bytes_;
    while (left > 0) {
      ssize_t n = ::send(c, chunk.data(), std::min<std::uint64_t>(left, chunk.size()), MSG_NOSIGNAL);
      if (n <= 0) break;
      left -= static_cast<std::uint64_t>(n);
    }
    ::close(c);
  }
  std::uint64_t bytes_;
  bool http_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// A proxy allowing 127.0.0.1:*, listening on the host's loopback (or on `listener`).
struct Proxy {
  std::uint16_t port = 0;
  std::unique_ptr<airlock::egress::EgressProxy> proxy;
  Proxy() : Proxy(-1, 0) {}
  Proxy(int listener, std::uint16_t listener_port) {
    airlock::egress::EgressRules net;
    net.allow.push_back(*airlock::egress::parse_allow_rule("127.0.0.1:*"));
    net.limits.max_bytes_down = 1ULL << 40;
    net.limits.max_connections = 10000;
    proxy = std::make_unique<airlock::egress::EgressProxy>(
        *airlock::egress::EgressPolicy::compile(net), "bench");
    if (listener < 0) listener = listen_loopback(&port);
    else port = listener_port;
    proxy->add_proxy_listener(airlock::UniqueFd(listener));
    proxy->start();
  }
  ~Proxy() { proxy->stop(); }
};

// A thread in a network namespace of its own, running the jobs given to it. Threads it starts
// stay in that namespace, and sockets stay in the namespace they were made in, so whatever a
// job creates lives there. Root only. `shape` empty: lo is set up as in a sandbox; otherwise
// lo is brought up as the kernel has it and shaped with `tc qdisc add dev lo root SHAPE`.
class NetnsThread {
 public:
  explicit NetnsThread(const std::string& shape) {
    thread_ = std::thread([this, shape] {
      const std::string tc = "tc qdisc add dev lo root " + shape;
      bool ok = ::unshare(CLONE_NEWNET) == 0 &&
                (shape.empty() ? airlock::sandbox::bring_up_loopback().err == 0
                               : std::system("ip link set lo up") == 0 &&
                                     std::system(tc.c_str()) == 0);
      {
        std::lock_guard lock(mutex_);
        ready_ = true;
        ok_ = ok;
      }
      changed_.notify_all();
      for (;;) {
        std::function<void()> job;
        {
          std::unique_lock lock(mutex_);
          changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
          if (jobs_.empty()) return;
          job = std::move(jobs_.front());
          jobs_.pop();
        }
        job();
        {
          std::lock_guard lock(mutex_);
          ++done_;
        }
        changed_.notify_all();
      }
    });
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return ready_; });
  }
  ~NetnsThread() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  bool ok() const { return ok_; }
  void run(std::function<void()> job) {  // runs `job` there and waits for it
    std::unique_lock lock(mutex_);
    jobs_.push(std::move(job));
    auto ticket = done_ + jobs_.size();
    changed_.notify_all();
    changed_.wait(lock, [&] { return done_ >= ticket; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::queue<std::function<void()>> jobs_;
  std::size_t done_ = 0;
  bool ready_ = false, ok_ = false, stopping_ = false;
  std::thread thread_;
};

// Connects through the proxy with CONNECT; returns the tunnel once the 200 has been read.
int tunnel(std::uint16_t proxy_port, std::uint16_t target) {
  int fd = connect_loopback(proxy_port);
  std::string req = "CONNECT 127.0.0.1:" + std::to_string(target) + " HTTP/1.1\r\n\r\n";
  (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string head;
  char ch;
  while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd, &ch, 1, 0) == 1) head += ch;
  if (head.rfind("HTTP/1.1 200", 0) != 0) std::abort();
  return fd;
}

std::uint64_t drain(int fd) {
  static thread_local std::vector<char> buf(1 << 20);
  std::uint64_t total = 0;
  ssize_t n;
  while ((n = ::recv(fd, buf.data(), buf.size(), 0)) > 0) total += static_cast<std::uint64_t>(n);
  return total;
}

enum class Path { direct, proxy, proxy_host_lo };

// Where a benchmark's client runs and what it connects to, for a Path: direct (no proxy), the
// proxy with its listener and the client in a namespace set up as a sandbox's (root only), or
// the proxy listening on the host's loopback.
struct Topology {
  std::unique_ptr<Proxy> proxy;           // none: direct
  std::unique_ptr<NetnsThread> sandbox;   // Path::proxy: where the client and listener live
  std::string skip;                       // why this Path cannot run here

  explicit Topology(Path path) {
    if (path == Path::proxy) {
      if (::geteuid() != 0) {
        skip = "needs root (a network namespace)";
        return;
      }
      sandbox = std::make_unique<NetnsThread>("");
      if (!sandbox->ok()) {
        skip = "could not set up the namespace";
        return;
      }
      std::uint16_t port = 0;
      int listener = -1;
      sandbox->run([&] { listener = listen_loopback(&port); });
      proxy = std::make_unique<Proxy>(listener, port);
    } else if (path == Path::proxy_host_lo) {
      proxy = std::make_unique<Proxy>();
    }
  }
  int connect(std::uint16_t target) const {
    return proxy ? tunnel(proxy->port, target) : connect_loopback(target);
  }
  void run(const std::function<void()>& client) {  // where the client belongs
    if (sandbox) sandbox->run(client);
    else client();
  }
};

void BM_Download(benchmark::State& state, Path path) {
  BlobServer server(kDownloadBytes, false);
  Topology topology(path);
  if (!topology.skip.empty()) return state.SkipWithError(topology.skip.c_str());
  for (auto _ : state) {
    double seconds = 0;
    topology.run([&] {
      auto start = std::chrono::steady_clock::now();
      int fd = topology.connect(server.port());
      if (drain(fd) != kDownloadBytes) std::abort();
      ::close(fd);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
    state.SetIterationTime(seconds);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kDownloadBytes));
}

// The client of PythonDownload: connects (through the proxy with CONNECT when given one),
// reads into a 1 MiB buffer until EOF, and prints the bytes and the seconds it took.
constexpr const char* kPythonClient = R"(
import socket, sys, time
target, proxy = int(sys.argv[1]), int(sys.argv[2])
start = time.monotonic()
s = socket.create_connection(("127.0.0.1", proxy or target))
if proxy:
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % target)
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head
buf = memoryview(bytearray(1 << 20))
total = 0
while True:
    n = s.recv_into(buf)
    if not n:
        break
    total += n
print(total, time.monotonic() - start)
)";

void BM_PythonDownload(benchmark::State& state, bool sandboxed) {
  BlobServer server(kDownloadBytes, false);
  for (auto _ : state) {
    airlock::sandbox::Spec spec;
    spec.argv = {"/usr/bin/python3", "-c", kPythonClient, std::to_string(server.port()),
                 sandboxed ? std::to_string(airlock::egress::kProxyPort) : "0"};
    std::string out;
    if (sandboxed) {
      airlock::egress::EgressRules rules;
      rules.allow.push_back(*airlock::egress::parse_allow_rule("127.0.0.1:*"));
      rules.limits.max_bytes_down = 1ULL << 40;
      spec.limits.wall_time = std::chrono::seconds(120);
      auto outcome = airlock::backend::run_local(spec, rules);
      if (outcome.verdict != airlock::sandbox::Verdict::ok) std::abort();
      out = outcome.stdout_data;
    } else {
      std::string cmd = "/usr/bin/python3 -c '" + std::string(kPythonClient) + "' " +
                        spec.argv[3] + " 0";
      FILE* p = ::popen(cmd.c_str(), "r");
      char line[256] = {};
      if (!p || !std::fgets(line, sizeof line, p) || ::pclose(p) != 0) std::abort();
      out = line;
    }
    std::uint64_t bytes = 0;
    double seconds = 0;
    if (std::sscanf(out.c_str(), "%lu %lf", &bytes, &seconds) != 2 || bytes != kDownloadBytes)
      std::abort();
    state.SetIterationTime(seconds);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kDownloadBytes));
}

void BM_ShapedDownload(benchmark::State& state, bool through_proxy) {
  if (::geteuid() != 0) return state.SkipWithError("needs root (network namespaces and tc)");
  NetnsThread upstream("tbf rate 10gbit burst 8mb latency 50ms");  // the link to the server
  NetnsThread sandbox("");                                          // where the tool runs
  if (!upstream.ok() || !sandbox.ok())
    return state.SkipWithError("could not set up the namespaces");
  std::unique_ptr<BlobServer> server;
  std::unique_ptr<Proxy> proxy;
  upstream.run([&] { server = std::make_unique<BlobServer>(kDownloadBytes, false); });
  if (through_proxy) {
    std::uint16_t port = 0;
    int listener = -1;
    sandbox.run([&] { listener = listen_loopback(&port); });
    upstream.run([&] { proxy = std::make_unique<Proxy>(listener, port); });  // connects from there
  }
  NetnsThread& client = through_proxy ? sandbox : upstream;
  for (auto _ : state) {
    double seconds = 0;
    client.run([&] {
      auto start = std::chrono::steady_clock::now();
      int fd = through_proxy ? tunnel(proxy->port, server->port())
                             : connect_loopback(server->port());
      if (drain(fd) != kDownloadBytes) std::abort();
      ::close(fd);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
    state.SetIterationTime(seconds);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kDownloadBytes));
  upstream.run([&] {
    proxy.reset();
    server.reset();
  });
}

void BM_Connect(benchmark::State& state, Path path) {
  BlobServer server(1, false);
  Topology topology(path);
  if (!topology.skip.empty()) return state.SkipWithError(topology.skip.c_str());
  std::vector<double> us;
  for (auto _ : state) {
    double seconds = 0;
    topology.run([&] {
      auto start = std::chrono::steady_clock::now();
      int fd = topology.connect(server.port());
      char c;
      if (::recv(fd, &c, 1, 0) != 1) std::abort();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ::close(fd);
    });
    state.SetIterationTime(seconds);
    us.push_back(seconds * 1e6);
  }
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[us.size() * 99 / 100];
}

void BM_CurlDownload(benchmark::State& state, bool sandboxed) {
  BlobServer server(kDownloadBytes, true);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/blob";
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    if (sandboxed) {
      airlock::sandbox::Spec spec;
      spec.argv = {"curl", "-sS", "-o", "/dev/null", url};
      airlock::egress::EgressRules rules;
      rules.allow.push_back(*airlock::egress::parse_allow_rule("127.0.0.1:*"));
      rules.limits.max_bytes_down = 1ULL << 40;
      spec.limits.wall_time = std::chrono::seconds(120);
      if (airlock::backend::run_local(spec, rules).verdict != airlock::sandbox::Verdict::ok)
        std::abort();
    } else {
      std::string cmd = "curl -sS --noproxy '*' -o /dev/null " + url;
      if (std::system(cmd.c_str()) != 0) std::abort();
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kDownloadBytes));
}

}  // namespace

// The networked tool of NetworkedToolCall, in a directory of its own for the run.
struct FetchTool {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("airlock-bench-fetch-" + std::to_string(::getpid()))).string();
  FetchTool() {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/fetch.py")
        << "import urllib.request\ndef run(args):\n"
           "    if not args.get(\"url\"):\n        return {}\n"
           "    return {\"body\": urllib.request.urlopen(args[\"url\"], timeout=10).read().decode()}\n";
    ::chmod(dir.c_str(), 0755);
    ::chmod((dir + "/fetch.py").c_str(), 0644);
  }
  ~FetchTool() { std::filesystem::remove_all(dir); }

  // fetch false: the same call without the fetch (what the call costs before its connection).
  airlock::backend::RunRequest request(std::uint16_t port, bool warm, bool fetch) const {
    using airlock::backend::Mount;
    const std::vector<std::string> runner = {"python3", "-I", "-S", "/airlock/airlock_runner.py"};
    airlock::backend::RunRequest r;
    r.argv = runner;
    r.argv.insert(r.argv.end(), {"module", "/tool/fetch.py"});
    r.mounts.push_back({Mount::Kind::runner, AIRLOCK_RUNNER_DIR, "/airlock", true});
    r.mounts.push_back({Mount::Kind::tool_code, dir, "/tool", true});
    r.egress.allow.push_back(*airlock::egress::parse_allow_rule("127.0.0.1:" + std::to_string(port)));
    r.stdin_bytes = fetch ? "{\"url\": \"http://127.0.0.1:" + std::to_string(port) + "/\"}" : "{}";
    if (warm) {
      r.warm = airlock::backend::WarmStart{"fetch", runner, 1000000, std::chrono::hours(1)};
      r.warm->template_argv.insert(r.warm->template_argv.end(), {"template", "/tool/fetch.py"});
    }
    return r;
  }
};

// Arg 1: the call fetches the page; Arg 0: it returns at once (its sandbox and proxy only).
void BM_NetworkedToolCall(benchmark::State& state, bool warm) {
  BlobServer page(6, true);
  FetchTool tool;
  airlock::backend::LocalBackend local(nullptr, std::make_shared<const std::vector<airlock::egress::Endpoint>>(),
                                       warm ? 1 : 0);
  const bool fetch = state.range(0) != 0;
  const auto request = tool.request(page.port(), warm, fetch);
  auto call = [&] {
    auto r = local.run(request, {});
    if (r.verdict != airlock::sandbox::Verdict::ok || r.egress.size() != (fetch ? 1u : 0u) ||
        (fetch && !r.egress[0].allowed))
      std::abort();
    return r.warm;
  };
  // Until the template is ready and has a child prepared: every timed call must be warm.
  for (int i = 0; warm && !call(); ++i) {
    if (i > 500) std::abort();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  airlock::bench::measure(state, [&] {
    if (call() != warm) std::abort();
  });
  local.shutdown();
}

BENCHMARK_CAPTURE(BM_Download, direct, Path::direct)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Download, proxy, Path::proxy)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Download, proxy_host_lo, Path::proxy_host_lo)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PythonDownload, host, false)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PythonDownload, sandbox, true)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ShapedDownload, direct, false)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ShapedDownload, proxy, true)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Connect, direct, Path::direct)->Iterations(2000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Connect, proxy, Path::proxy)->Iterations(2000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Connect, proxy_host_lo, Path::proxy_host_lo)->Iterations(2000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CurlDownload, host, false)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CurlDownload, sandbox, true)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_NetworkedToolCall, cold, false)->Arg(0)->Arg(1)->Iterations(200)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_NetworkedToolCall, warm, true)->Arg(0)->Arg(1)->Iterations(200)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
