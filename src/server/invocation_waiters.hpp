// Long polls of GET /v1/invocations/{id}?wait=30s: each waits until its invocation finishes
// (notify) or its deadline passes (expire, from the approval sweeper's tick). Each callback
// is called exactly once, outside the lock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace airlock::server {

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
