#include "daemon.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "common/digest.hpp"
#include "http_client.hpp"

extern char** environ;

namespace airlock::bench {
namespace {

namespace fs = std::filesystem;

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

// The daemon's own output goes to serve.log in its directory (read it when a start fails).
Result<pid_t> spawn_daemon(const std::string& dir, std::uint16_t port) {
  std::vector<std::string> argv = {AIRLOCK_BINARY, "serve",
                                   "--config",     dir + "/airlock.yaml",
                                   "--listen",     "127.0.0.1:" + std::to_string(port)};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log = dir + "/serve.log";
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Error::make("spawn", std::string("cannot start ") + AIRLOCK_BINARY);
  return pid;
}

std::string log_tail(const std::string& dir) {
  std::ifstream in(dir + "/serve.log");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

}  // namespace

std::string bench_principal_yaml() {
  return "principals:\n  - name: bench\n    apiKeySha256: " + sha256_hex(kBenchKey) +
         "\n    tools: [\"*\"]\n";
}

Result<std::unique_ptr<Daemon>> Daemon::start(const std::map<std::string, std::string>& files) {
  std::unique_ptr<Daemon> d(new Daemon());
  d->dir_ = (fs::temp_directory_path() / ("airlock-bench-mcp-" + std::to_string(::getpid()) + "-" +
                                          std::to_string(free_port())))
                .string();
  for (const auto& [path, content] : files) {
    const fs::path file = fs::path(d->dir_) / path;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << content;
    ::chmod(file.c_str(), 0644);
    ::chmod(file.parent_path().c_str(), 0755);
  }
  d->port_ = free_port();
  auto pid = spawn_daemon(d->dir_, d->port_);
  if (!pid) return pid.error();
  d->pid_ = *pid;
  if (auto ready = d->wait_ready(); !ready.ok()) return ready.error();
  return d;
}

// Up to 30 s for /healthz to answer 200; a daemon that exits first has failed.
Status Daemon::wait_ready() {
  for (int i = 0; i < 1500; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return Error::make("serve", "airlock serve exited: " + log_tail(dir_));
    }
    HttpClient client(port_);
    if (client.connect().ok()) {
      auto reply = client.get("/healthz");
      if (reply && reply->status == 200) return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Error::make("serve", "airlock serve did not become ready: " + log_tail(dir_));
}

Daemon::~Daemon() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

}  // namespace airlock::bench
