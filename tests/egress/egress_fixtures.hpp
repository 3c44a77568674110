// Fixtures of the egress tests, end to end: the Spec a test runs (a sandbox Spec and its
// egress rules), servers on the host's loopback, and the clients run inside.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend/local.hpp"
#include "egress/policy.hpp"

namespace airlock::egress::fixtures {

using namespace std::chrono_literals;
using Outcome = backend::RunResult;
using sandbox::Verdict;

// What these tests run: a sandbox Spec and the egress rules its proxy enforces.
struct Spec : sandbox::Spec {
  EgressRules egress;
};

#ifdef AIRLOCK_EGRESS_WARM_PROBES
// warm_probe.cpp: the probe run in a call of a warm networked tool (AIRLOCK_TEST_EGRESS_WARM).
bool warm_probes_asked();
Outcome run_warm_probe(const Spec& spec, const backend::LocalRunOptions& options);
#endif

inline Outcome run_local(const Spec& spec, const backend::LocalRunOptions& options = {}) {
#ifdef AIRLOCK_EGRESS_WARM_PROBES
  if (warm_probes_asked()) return run_warm_probe(spec, options);
#endif
  return backend::run_local(spec, spec.egress, options);
}

inline std::string describe(const Outcome& o) {
  return "\n" + backend::to_json(o).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A TCP server on the host's 127.0.0.1 that runs `handle` for each connection on its own
// thread and counts connections.
class LoopbackServer {
 public:
  using Handler = std::function<void(int fd)>;
  explicit LoopbackServer(Handler handle) : handle_(std::move(handle)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("loopback server");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        ++connections_;
        std::lock_guard lock(mu_);
        workers_.emplace_back([this, c] {
          handle_(c);
          ::close(c);
        });
      }
    });
  }
  ~LoopbackServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    std::lock_guard lock(mu_);
    for (auto& w : workers_) w.join();
  }
  std::uint16_t port() const { return port_; }
  int connections() const { return connections_; }

 private:
  Handler handle_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

inline std::string read_head(int fd) {
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) head += c;
  return head;
}

inline void send_all(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

inline Spec python(const std::string& code, const std::vector<std::string>& args = {}) {
  Spec spec;
  spec.argv = {"python3", "-c", code};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.limits.wall_time = 60s;
  return spec;
}

inline Spec curl(const std::vector<std::string>& args) {
  Spec spec;
  spec.argv = {"curl", "-sS", "--max-time", "20"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.limits.wall_time = 60s;
  return spec;
}

inline void allow(Spec& spec, const std::string& rule) {
  auto r = parse_allow_rule(rule);
  ASSERT_TRUE(r.ok()) << r.error().message;
  spec.egress.allow.push_back(*r);
}

}  // namespace airlock::egress::fixtures
