#include "server/core/first_listings.hpp"

namespace airlock::server {

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

bool FirstListings::wait(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return done_.wait_for(lock, timeout, [this] { return pending_.empty(); });
}

}  // namespace airlock::server
