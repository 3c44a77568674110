// bench/egress: the egress proxy against a direct connection, in the same run.
//   Download/direct, Download/proxy      1 GiB from a loopback server (MB/s)
//   Connect/direct, Connect/proxy        connection set-up until the first byte arrives
//                                        (proxy: TCP connect + CONNECT + 200 + first byte)
//   CurlDownload/host, CurlDownload/sandbox   the same 1 GiB fetched by curl on the host
//                                        directly and inside `backend::run_local` through
//                                        the proxy (the whole path a tool sees)
// The proxy's listener is created on the host's loopback for the library-level rows (the
// proxy does not care which namespace its listener is in).
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backend/local.hpp"
#include "egress/policy.hpp"
#include "egress/proxy.hpp"

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

// A proxy allowing 127.0.0.1:*, listening on the host's loopback.
struct Proxy {
  std::uint16_t port = 0;
  std::unique_ptr<airlock::egress::EgressProxy> proxy;
  Proxy() {
    airlock::sandbox::NetworkPolicy net;
    net.allow.push_back(*airlock::egress::parse_allow_rule("127.0.0.1:*"));
    net.limits.max_bytes_down = 1ULL << 40;
    net.limits.max_connections = 10000;
    proxy = std::make_unique<airlock::egress::EgressProxy>(
        *airlock::egress::EgressPolicy::compile(net), "bench");
    proxy->add_proxy_listener(airlock::UniqueFd(listen_loopback(&port)));
    proxy->start();
  }
  ~Proxy() { proxy->stop(); }
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

void BM_Download(benchmark::State& state, bool through_proxy) {
  BlobServer server(kDownloadBytes, false);
  Proxy proxy;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    int fd = through_proxy ? tunnel(proxy.port, server.port()) : connect_loopback(server.port());
    if (drain(fd) != kDownloadBytes) std::abort();
    ::close(fd);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kDownloadBytes));
}

void BM_Connect(benchmark::State& state, bool through_proxy) {
  BlobServer server(1, false);
  Proxy proxy;
  std::vector<double> us;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    int fd = through_proxy ? tunnel(proxy.port, server.port()) : connect_loopback(server.port());
    char c;
    if (::recv(fd, &c, 1, 0) != 1) std::abort();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    ::close(fd);
    state.SetIterationTime(took.count());
    us.push_back(took.count() * 1e6);
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
      spec.network.allow.push_back(*airlock::egress::parse_allow_rule("127.0.0.1:*"));
      spec.network.limits.max_bytes_down = 1ULL << 40;
      spec.limits.wall_time = std::chrono::seconds(120);
      if (airlock::backend::run_local(spec).verdict != airlock::sandbox::Verdict::ok) std::abort();
    } else {
      std::string cmd = "curl -sS --noproxy '*' -o /dev/null " + url;
      if (std::system(cmd.c_str()) != 0) std::abort();
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kDownloadBytes));
}

}  // namespace

BENCHMARK_CAPTURE(BM_Download, direct, false)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Download, proxy, true)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Connect, direct, false)->Iterations(2000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Connect, proxy, true)->Iterations(2000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CurlDownload, host, false)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CurlDownload, sandbox, true)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
