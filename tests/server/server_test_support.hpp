// Helpers for the daemon's tests: a temp directory with tools and a config, a daemon on an
// ephemeral port, and a small HTTP client.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "server/daemon/daemon.hpp"

namespace airlock::server::test {

inline constexpr const char* kKey = "test-key-agent";
inline constexpr const char* kOtherKey = "test-key-other";

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

// One request; status 0 when the connection failed.
Reply http(std::uint16_t port, const std::string& method, const std::string& target,
           const std::string& body = "", const std::string& key = kKey);
Reply invoke(std::uint16_t port, const std::string& tool, const nlohmann::json& arguments,
             const std::string& key = kKey);
// With more headers (a Content-Type here replaces application/json).
Reply http_with(std::uint16_t port, const std::string& method, const std::string& target,
                const std::string& body, const std::string& key,
                const std::map<std::string, std::string>& headers);

// A directory with the test tools (tests/server/tools) and an airlock.yaml.
class Workspace {
 public:
  // `extra_yaml` is appended to the tools list; `server_yaml` replaces the server block.
  explicit Workspace(const std::string& server_yaml = "", const std::string& extra_tools = "");
  ~Workspace();
  const std::string& dir() const { return dir_; }
  std::string config_path() const { return dir_ + "/airlock.yaml"; }
  std::string audit_path() const { return dir_ + "/data/audit.db"; }
  policy::Config config() const;
  // Rewrites airlock.yaml: as the constructor would, or with the text as given.
  void rewrite(const std::string& server_yaml, const std::string& extra_tools) const;
  void write_config(const std::string& yaml) const;
  std::string config_text() const;

 private:
  std::string dir_;
};

// A daemon in this process, listening on an ephemeral port.
struct RunningDaemon {
  std::unique_ptr<Daemon> daemon;
  std::uint16_t port = 0;
  explicit RunningDaemon(const Workspace& ws, DaemonOptions options = {});
  ~RunningDaemon();
};

// Collects what tools POST to it on loopback (their credentials, so a test can check them).
class Collector {
 public:
  Collector();
  ~Collector();
  std::uint16_t port() const { return port_; }
  // The next body received, waiting up to 20 s ("" when none came).
  std::string next();

 private:
  void serve();
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> bodies_;
};

std::uint64_t audit_records(const std::string& audit_path);

// A loopback port nothing listens on, from [first, first + 10000), for a daemon that must
// listen on a port known in advance (a separate `airlock serve`, a restart). Choose `first`
// below the kernel's ephemeral range, so no port-0 bind or outgoing connection takes it
// between the probe and the daemon's bind; tests that run at once use different ranges.
std::uint16_t free_port(std::uint16_t first);

}  // namespace airlock::server::test
