#include "server/mcp_server/mcp_task_watch.hpp"

#include "server/invocations/invocation_waiters.hpp"

namespace airlock::server {

McpTaskWatch::~McpTaskWatch() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

// A task whose end this daemon never saw (it ran through another replica) is let go after
// its ttl, as tasks/get lets it go.
void McpTaskWatch::evict_expired_locked(McpTasks::Clock::time_point now) {
  std::erase_if(by_id_, [now](const auto& entry) { return now - entry.second.started >= McpTasks::kTtl; });
}

// Tasks and changes nobody is left to tell (their session ended, their subscriptions too).
void McpTaskWatch::drop_unheard_locked() {
  std::erase_if(by_id_, [](const auto& entry) {
    return entry.second.session.empty() && entry.second.subscriptions.empty();
  });
  std::erase_if(queue_, [](const Change& change) { return change.session.empty() && change.subscriptions.empty(); });
}

McpTaskWatch::Watched* McpTaskWatch::entry_locked(const std::string& id, McpTasks::Clock::time_point started) {
  if (stopping_) return nullptr;
  if (const auto found = by_id_.find(id); found != by_id_.end()) return &found->second;
  if (by_id_.size() >= kMaxWatched) evict_expired_locked(McpTasks::Clock::now());
  if (by_id_.size() >= kMaxWatched) return nullptr;
  if (!worker_.joinable()) worker_ = std::thread([this] { loop(); });
  return &by_id_.emplace(id, Watched{"", {}, started}).first->second;
}

bool McpTaskWatch::watch(const std::string& id, const std::string& session, McpTasks::Clock::time_point started) {
  if (session.empty()) return false;
  std::lock_guard lock(mu_);
  Watched* entry = entry_locked(id, started);
  if (entry) entry->session = session;
  return entry != nullptr;
}

bool McpTaskWatch::watch_for(const std::string& id, const std::string& subscription,
                             McpTasks::Clock::time_point started) {
  std::lock_guard lock(mu_);
  Watched* entry = entry_locked(id, started);
  if (entry) entry->subscriptions.insert(subscription);
  return entry != nullptr;
}

void McpTaskWatch::changed(const std::string& id, const nlohmann::json& stored) {
  std::lock_guard lock(mu_);
  const auto found = by_id_.find(id);
  if (found == by_id_.end() || stopping_) return;
  const Watched& w = found->second;
  if (queue_.size() < kMaxQueued)
    queue_.push_back(Change{id, w.session, {w.subscriptions.begin(), w.subscriptions.end()}, w.started, stored});
  if (!is_unfinished(stored)) by_id_.erase(found);  // its last change
  wake_.notify_one();
}

void McpTaskWatch::forget_session(const std::string& session) {
  std::lock_guard lock(mu_);
  for (auto& [id, w] : by_id_)
    if (w.session == session) w.session.clear();
  for (auto& change : queue_)
    if (change.session == session) change.session.clear();
  drop_unheard_locked();
}

void McpTaskWatch::forget_subscription(const std::string& subscription) {
  std::lock_guard lock(mu_);
  for (auto& [id, w] : by_id_) w.subscriptions.erase(subscription);
  for (auto& change : queue_) std::erase(change.subscriptions, subscription);
  drop_unheard_locked();
}

std::size_t McpTaskWatch::watched() const {
  std::lock_guard lock(mu_);
  return by_id_.size();
}

// One thread for every task: it tells each change in the order the changes came.
void McpTaskWatch::loop() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Change change = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    deliver_(change);
    lock.lock();
  }
}

}  // namespace airlock::server
