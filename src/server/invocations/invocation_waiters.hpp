// Long polls of GET /v1/invocations/{id}?wait=30s: each waits until its invocation finishes
// (notify) or its deadline passes (expire, from the approval sweeper's tick). Each callback
// is called exactly once, outside the lock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::server {

// A stored invocation (InvocationStore::get) a long poll waits for: running or awaiting its
// approval.
bool is_unfinished(const nlohmann::json& stored);

class InvocationWaiters {
 public:
  using Clock = std::chrono::steady_clock;
  // The most waiters at once: past it, a poll is answered at once (a client cannot hold
  // unbounded memory by opening polls).
  static constexpr std::size_t kMaxWaiters = 4096;

  // False (and `done` not kept) when too many wait already.
  bool add(const std::string& id, Clock::time_point deadline, std::function<void()> done);
  void notify(const std::string& id);
  void expire(Clock::time_point now);
  void release_all();  // shutdown: every poll is answered with what is stored
  // The invocations polled now, each once (replicas: the sweeper asks the shared store whether
  // another replica finished one of them).
  std::vector<std::string> ids();

 private:
  struct Waiter {
    std::string id;
    Clock::time_point deadline;
    std::function<void()> done;
  };
  std::mutex mu_;
  std::multimap<std::string, Waiter> by_id_;
};

}  // namespace airlock::server
