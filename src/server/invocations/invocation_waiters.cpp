#include "server/invocations/invocation_waiters.hpp"

#include <vector>

namespace airlock::server {

bool is_unfinished(const nlohmann::json& stored) {
  const std::string status = stored.value("status", "");
  return status == "running" || status == "pending_approval" || status == "suspended";
}

bool InvocationWaiters::add(const std::string& id, Clock::time_point deadline, std::function<void()> done) {
  std::lock_guard lock(mu_);
  if (by_id_.size() >= kMaxWaiters) return false;
  by_id_.emplace(id, Waiter{id, deadline, std::move(done)});
  return true;
}

void InvocationWaiters::notify(const std::string& id) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock(mu_);
    auto [first, last] = by_id_.equal_range(id);
    for (auto it = first; it != last; ++it) ready.push_back(std::move(it->second.done));
    by_id_.erase(first, last);
  }
  for (auto& done : ready) done();
}

void InvocationWaiters::expire(Clock::time_point now) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock(mu_);
    for (auto it = by_id_.begin(); it != by_id_.end();) {
      if (it->second.deadline <= now) {
        ready.push_back(std::move(it->second.done));
        it = by_id_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& done : ready) done();
}

std::vector<std::string> InvocationWaiters::ids() {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  for (auto it = by_id_.begin(); it != by_id_.end(); it = by_id_.upper_bound(it->first)) out.push_back(it->first);
  return out;
}

void InvocationWaiters::release_all() { expire(Clock::time_point::max()); }

}  // namespace airlock::server
