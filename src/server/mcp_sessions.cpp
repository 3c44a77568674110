#include "server/mcp_sessions.hpp"

#include <algorithm>
#include <random>

#include "common/hex.hpp"

namespace airlock::server {
namespace {

std::string random_id() {
  std::random_device random;  // the kernel's getrandom()
  std::string bytes(16, '\0');
  for (auto& b : bytes) b = static_cast<char>(random() & 0xff);
  return hex_encode(bytes);
}

}  // namespace

std::string McpSessions::open(const std::string& principal, const std::string& revision) {
  std::string id = random_id();
  std::lock_guard lock(mu_);
  if (sessions_.size() >= capacity_) {
    auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
      return a.second.last_used < b.second.last_used;
    });
    sessions_.erase(oldest);
  }
  sessions_[id] = Session{principal, revision, ++clock_};
  return id;
}

std::optional<std::string> McpSessions::revision(const std::string& id, const std::string& principal) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.principal != principal) return std::nullopt;
  it->second.last_used = ++clock_;
  return it->second.revision;
}

bool McpSessions::close(const std::string& id, const std::string& principal) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.principal != principal) return false;
  sessions_.erase(it);
  return true;
}

std::size_t McpSessions::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void McpCallsInFlight::add(const std::string& key, std::shared_ptr<pipeline::InvocationControl> control) {
  std::lock_guard lock(mu_);
  calls_[key] = std::move(control);
}

void McpCallsInFlight::remove(const std::string& key) {
  std::lock_guard lock(mu_);
  calls_.erase(key);
}

bool McpCallsInFlight::cancel(const std::string& key) {
  std::shared_ptr<pipeline::InvocationControl> control;
  {
    std::lock_guard lock(mu_);
    auto it = calls_.find(key);
    if (it == calls_.end()) return false;
    control = it->second;
  }
  control->cancel.cancel();  // outside the lock: it stops a sandbox
  return true;
}

std::string McpCallsInFlight::key(const std::string& channel, const std::string& request_id) {
  return channel + '\n' + request_id;
}

}  // namespace airlock::server
