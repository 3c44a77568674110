#include "server/mcp_server/mcp_listeners.hpp"

#include <vector>

namespace airlock::server {

McpListeners::~McpListeners() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (keeper_.joinable()) keeper_.join();
}

bool McpListeners::add(const std::string& key, Listener listener) {
  std::function<void()> replaced;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    auto it = listeners_.find(key);
    if (it == listeners_.end() && listeners_.size() >= kMaxListeners) return false;
    if (it != listeners_.end()) replaced = std::move(it->second.end);
    listeners_[key] = std::move(listener);
    if (!keeper_.joinable()) keeper_ = std::thread([this] { keep_alive_loop(); });
  }
  if (replaced) replaced();
  return true;
}

void McpListeners::remove(const std::string& key) {
  std::lock_guard lock(mu_);
  listeners_.erase(key);
}

void McpListeners::end_outside_lock(std::vector<std::function<void()>> ends) {
  for (auto& end : ends)
    if (end) end();
}

void McpListeners::end_session(const std::string& session) {
  std::vector<std::function<void()>> ends;
  {
    std::lock_guard lock(mu_);
    for (auto it = listeners_.begin(); it != listeners_.end();) {
      if (!session.empty() && it->second.session == session) {
        ends.push_back(std::move(it->second.end));
        it = listeners_.erase(it);
      } else {
        ++it;
      }
    }
  }
  end_outside_lock(std::move(ends));
}

void McpListeners::end_all() {
  std::vector<std::function<void()>> ends;
  {
    std::lock_guard lock(mu_);
    for (auto& [key, l] : listeners_) ends.push_back(std::move(l.end));
    listeners_.clear();
  }
  end_outside_lock(std::move(ends));
}

void McpListeners::notify_all(const nlohmann::json& notification) {
  std::vector<McpSend> sends;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, l] : listeners_) sends.push_back(l.send);
  }
  for (const auto& send : sends) send(notification);  // each only queues (or writes a line)
}

void McpListeners::notify_session(const std::string& session, const nlohmann::json& notification) {
  if (session.empty()) return;  // a stateless subscription belongs to no session
  std::vector<McpSend> sends;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, l] : listeners_)
      if (l.session == session) sends.push_back(l.send);
  }
  for (const auto& send : sends) send(notification);
}

void McpListeners::notify_key(const std::string& key, const nlohmann::json& notification) {
  McpSend send;
  {
    std::lock_guard lock(mu_);
    const auto found = listeners_.find(key);
    if (found == listeners_.end()) return;
    send = found->second.send;
  }
  send(notification);
}

std::size_t McpListeners::size() const {
  std::lock_guard lock(mu_);
  return listeners_.size();
}

void McpListeners::keep_alive_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (wake_.wait_for(lock, kKeepAlive, [this] { return stopping_; })) break;
    std::vector<McpSend> sends;
    for (const auto& [key, l] : listeners_) sends.push_back(l.send);
    lock.unlock();
    for (const auto& send : sends) send(nullptr);
    lock.lock();
  }
}

}  // namespace airlock::server
