// For the tests that run `airlock serve` processes on one PostgreSQL database (replicas_test,
// session_replicas_test): a workspace's storage moved to the shared database, a replica
// process, the shared database with its audit log, and waiting without timing assertions.
// The including target defines AIRLOCK_BINARY.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/log_reader.hpp"
#include "pg_support.hpp"
#include "server_test_support.hpp"

namespace airlock::replicas_test {

using namespace std::chrono_literals;
using server::test::free_port;
using server::test::http;
using server::test::Workspace;

// `ws`'s storage block (the test workspace's SQLite one) replaced by the shared database, the
// shared keys and the replicas' timing.
inline void to_postgres(const Workspace& ws, const std::string& url, const std::string& key_file,
                        const std::string& timing = "heartbeatInterval: 500ms, failoverAfter: 2s") {
  std::string text = ws.config_text();
  const std::string sqlite_block = "storage: {dataDir: data, checkpointEvery: 100}";
  auto at = text.find(sqlite_block);
  if (at == std::string::npos) throw std::runtime_error("the test workspace's storage block changed");
  text.replace(at, sqlite_block.size(),
               "storage: {dataDir: data, checkpointEvery: 100, signingKeyFile: \"" + key_file +
                   "\", tokenKeyFile: \"" + key_file + ".token\", " + timing + ", postgres: {url: \"" + url +
                   "\"}}");
  ws.write_config(text);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `airlock serve` in its own process, on a port known in advance; waits until it serves
// (over plain HTTP; with server.tls, `plain_http` false, the caller waits its own way).
class Replica {
 public:
  // A port found free can be taken before the daemon binds it (most of these ports lie in the
  // kernel's ephemeral range, where any outgoing connection may land): a daemon that exits
  // saying so is started again on another port.
  Replica(const Workspace& ws, std::uint16_t first_port, bool plain_http = true) : log_(ws.dir() + "/daemon.log") {
    port = free_port(first_port);
    for (int attempt = 0; attempt < 5 && !launch(ws, plain_http); ++attempt) port = free_port(port + 1);
  }
  ~Replica() {
    if (pid_ > 0) stop(SIGTERM);
  }
  bool serving() const { return http(port, "GET", "/healthz", "", "").status == 200; }
  int stop(int signal) {
    if (pid_ <= 0) return -1;  // never kill(-1, ...)
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  std::string log() const { return read_file(log_); }
  std::uint16_t port = 0;

 private:
  // Starts the daemon on `port`; false when it exited because the port was taken.
  bool launch(const Workspace& ws, bool plain_http) {
    const auto log_size_before = log().size();
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 2);
      const std::string listen = "127.0.0.1:" + std::to_string(port);
      ::execl(AIRLOCK_BINARY, "airlock", "serve", "--config", ws.config_path().c_str(), "--listen",
              listen.c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return log().substr(log_size_before).find("Address already in use") == std::string::npos;
      }
      if (plain_http && http(port, "GET", "/healthz", "", "").status == 200) return true;
      if (!plain_http && i >= 25) return true;  // TLS: the caller waits its own way
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  std::string log_;
  pid_t pid_ = -1;
};

// A shared database, its key, and workspaces for the replicas.
struct Shared {
  std::string database = fresh_database("replicas");
  std::string url = url_of(database);
  std::string key_dir = [] {
    std::string tmpl = "/tmp/airlock-replicas-key-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
    return tmpl;
  }();
  std::string key_file = key_dir + "/audit-signing.key";
  ~Shared() { std::filesystem::remove_all(key_dir); }

  std::vector<std::string> column(const std::string& sql) const {
    auto rows = cluster().column(sql, database);
    if (!rows) throw std::runtime_error(rows.error().message);
    return *rows;
  }
  std::size_t count(const std::string& sql) const { return std::stoul(column(sql).at(0)); }

  // The invocation ids of the shared audit log's records, in order.
  std::vector<std::string> audit_ids() const {
    audit::LogLocation location;
    location.postgres_url = url;
    location.key_file = key_file;
    auto reader = audit::LogReader::open(location);
    if (!reader) throw std::runtime_error(reader.error().message);
    std::vector<std::string> ids;
    auto read = reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
      ids.push_back(nlohmann::json::parse(text).value("invocation_id", ""));
      return true;
    });
    if (!read) throw std::runtime_error(read.error().message);
    return ids;
  }

  // The shared audit log's records of `schema` (airlock.session/v1...), in order.
  std::vector<nlohmann::json> audit_records(const std::string& schema) const {
    audit::LogLocation location;
    location.postgres_url = url;
    location.key_file = key_file;
    auto reader = audit::LogReader::open(location);
    if (!reader) throw std::runtime_error(reader.error().message);
    std::vector<nlohmann::json> out;
    auto read = reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
      auto record = nlohmann::json::parse(text, nullptr, false);
      if (record.is_object() && record.value("schema", "") == schema) out.push_back(std::move(record));
      return true;
    });
    if (!read) throw std::runtime_error(read.error().message);
    return out;
  }
};

// The sum of a counter's series whose labels include `label` (Prometheus exposition).
inline double counter_sum(const std::string& exposition, const std::string& name, const std::string& label) {
  double sum = 0;
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name + "{", 0) == 0 && line.find(label) != std::string::npos)
      sum += std::stod(line.substr(line.rfind(' ') + 1));
  return sum;
}

// `airlock audit verify --config FILE`: its exit status.
inline int audit_verify(const Workspace& ws) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::execl(AIRLOCK_BINARY, "airlock", "audit", "verify", "--config", ws.config_path().c_str(), nullptr);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Waits (up to `limit`) for `done`; true when it came. Never a timing assertion: the limit
// only keeps a broken build from hanging.
inline bool eventually(const std::function<bool()>& done, std::chrono::seconds limit = 30s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}


}  // namespace airlock::replicas_test
