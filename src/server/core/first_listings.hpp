// Whether every MCP server configured at start has been listed once (its tools are in the
// registry) or has failed its first listing: until then the daemon is starting (/healthz
// answers 503 "starting"; `airlock mcp` over stdio waits before it reads its first request),
// so that no client's first tools/list misses a server's tools. Reloads list again but do
// not make the daemon "starting" anew.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace airlock::server {

class FirstListings {
 public:
  struct Report {
    std::vector<std::string> pending;          // not yet listed nor failed
    std::map<std::string, std::string> failed;  // server -> why its first listing failed
  };
  // The servers configured at start.
  void expect(const std::vector<std::string>& servers);
  // The outcome of a server's listing (ignored for a server not expected, or not the first).
  void listed(const std::string& server);
  void failed(const std::string& server, const std::string& why);

  Report report() const;
  // Waits until nothing is pending or `timeout` passes; whether nothing is pending.
  bool wait(std::chrono::milliseconds timeout) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable done_;
  std::set<std::string> pending_;
  std::map<std::string, std::string> failed_;
};

}  // namespace airlock::server
