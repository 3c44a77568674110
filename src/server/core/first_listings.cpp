#include "server/core/first_listings.hpp"

#include <algorithm>

namespace airlock::server {

FirstListings::~FirstListings() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    done_.notify_all();
  }
  if (waker_.joinable()) waker_.join();
}

void FirstListings::expect(const std::vector<std::string>& servers) {
  std::lock_guard lock(mu_);
  pending_.insert(servers.begin(), servers.end());
}

void FirstListings::listed(const std::string& server) {
  std::lock_guard lock(mu_);
  if (pending_.erase(server) && pending_.empty()) done_.notify_all();
}

void FirstListings::failed(const std::string& server, const std::string& why) {
  std::lock_guard lock(mu_);
  if (!pending_.erase(server)) return;
  failed_[server] = why;
  if (pending_.empty()) done_.notify_all();
}

FirstListings::Report FirstListings::report() const {
  std::lock_guard lock(mu_);
  return {std::vector<std::string>(pending_.begin(), pending_.end()), failed_};
}

void FirstListings::release_all() {
  std::vector<Waiter> waiters;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    waiters.swap(waiters_);
    done_.notify_all();
  }
  if (waker_.joinable()) waker_.join();
  for (auto& w : waiters) w.then();
}

void FirstListings::when_done(std::chrono::milliseconds timeout, std::function<void()> then) {
  {
    std::lock_guard lock(mu_);
    if (!pending_.empty() && !stopping_ && waiters_.size() < kMaxWaiters) {
      waiters_.push_back({std::chrono::steady_clock::now() + timeout, std::move(then)});
      if (!waking_) {
        // The previous waker has returned (waking_ is cleared as its last step): joined at once.
        if (waker_.joinable()) waker_.join();
        waking_ = true;
        waker_ = std::thread([this] { wake_loop(); });
      } else {
        done_.notify_all();  // an earlier deadline, perhaps
      }
      return;
    }
  }
  then();
}

// Calls each waiter once nothing is pending or its deadline has passed; returns when none is left.
void FirstListings::wake_loop() {
  std::unique_lock lock(mu_);
  while (!waiters_.empty() && !stopping_) {
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::function<void()>> due;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (pending_.empty() || it->deadline <= now) {
        due.push_back(std::move(it->then));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    if (!due.empty()) {
      lock.unlock();
      for (auto& then : due) then();
      lock.lock();
      continue;
    }
    auto next = std::min_element(waiters_.begin(), waiters_.end(),
                                 [](const Waiter& a, const Waiter& b) { return a.deadline < b.deadline; })->deadline;
    done_.wait_until(lock, next);
  }
  waking_ = false;
}

nlohmann::json failed_servers(const FirstListings::Report& report) {
  nlohmann::json failed = nlohmann::json::object();
  for (const auto& [server, why] : report.failed) failed[server] = why;
  return failed;
}

}  // namespace airlock::server
