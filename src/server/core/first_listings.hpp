// Whether every MCP server configured at start has been listed once (its tools are in the
// registry) or has failed its first listing: until then the daemon is starting (/healthz
// answers 503 "starting"), and tools/list and GET /v1/tools wait (bounded, when_done) so that
// no client's first listing misses a server's tools. Reloads list again but do not make the
// daemon "starting" anew.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
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
  // Calls `then` once nothing is pending or `timeout` has passed, whichever comes first: at
  // once when nothing is pending, else from a thread of this object's, outside its lock. Past
  // kMaxWaiters waiting, at once (a client cannot hold unbounded memory by asking).
  void when_done(std::chrono::milliseconds timeout, std::function<void()> then);
  static constexpr std::size_t kMaxWaiters = 4096;
  // Calls every waiter now (the daemon stops), and each later one at once.
  void release_all();

  FirstListings() = default;
  ~FirstListings();  // the waiters left are dropped, not called (their transport is gone)
  FirstListings(const FirstListings&) = delete;
  FirstListings& operator=(const FirstListings&) = delete;

 private:
  struct Waiter {
    std::chrono::steady_clock::time_point deadline;
    std::function<void()> then;
  };
  void wake_loop();

  mutable std::mutex mu_;
  mutable std::condition_variable done_;
  std::set<std::string> pending_;
  std::map<std::string, std::string> failed_;
  std::vector<Waiter> waiters_;
  bool stopping_ = false, waking_ = false;  // waking_: wake_loop runs
  std::thread waker_;
};

// {server: why its first listing failed}, as /healthz, GET /v1/tools and tools/list name them.
nlohmann::json failed_servers(const FirstListings::Report& report);

}  // namespace airlock::server
