#include "server/mcp_server/mcp_sessions.hpp"

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

std::string mcp_principal(const pipeline::Caller& c) {
  std::string key = c.actor ? "agent:" + c.actor->principal : std::string("agent:");
  if (c.subject) key += "\nuser:" + c.subject->issuer + "\n" + c.subject->sub;
  return key;
}

std::string McpSessions::insert(const std::string& id, const std::string& principal, const McpSessionBook::Held& held,
                                std::vector<std::shared_ptr<LiveSession>>& ending) {
  std::string evicted;
  if (auto mine = held_.find(principal); mine != held_.end() && mine->second >= per_principal_) {
    evicted = evict_oldest([&](const std::string& p) { return p == principal; }, ending);
  } else if (sessions_.size() >= capacity_) {
    std::size_t most = 0;
    for (const auto& [p, n] : held_) most = std::max(most, n);
    evicted = evict_oldest([&](const std::string& p) { return held_.at(p) == most; }, ending);
  }
  sessions_[id] = Session{principal, held.revision, held.elicits_urls, ++clock_, nullptr, {}};
  ++held_[principal];
  return evicted;
}

Result<std::string> McpSessions::open(const std::string& principal, const std::string& revision, bool elicits_urls) {
  const std::string id = random_id();
  const McpSessionBook::Held held{revision, elicits_urls};
  if (book_)
    if (auto recorded = book_->open(id, principal, held); !recorded) return recorded.error();
  std::string evicted;
  std::vector<std::shared_ptr<LiveSession>> ending;
  {
    std::lock_guard lock(mu_);
    evicted = insert(id, principal, held, ending);
  }
  if (!evicted.empty()) {
    if (book_) (void)book_->close(evicted);  // else the book purges it when it has been idle long enough
    ended(evicted, std::move(ending));
  }
  return id;
}

std::string McpSessions::evict_oldest(const std::function<bool(const std::string&)>& whose,
                                      std::vector<std::shared_ptr<LiveSession>>& ending) {
  auto oldest = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
    if (whose(it->second.principal) &&
        (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used))
      oldest = it;
  if (oldest == sessions_.end()) return "";
  const std::string principal = oldest->second.principal, id = oldest->first;
  ending = std::move(oldest->second.workspaces);
  sessions_.erase(oldest);
  if (--held_[principal] == 0) held_.erase(principal);
  return id;
}

void McpSessions::ended(const std::string& id, std::vector<std::shared_ptr<LiveSession>> ending) const {
  if (end_) end_(id, std::move(ending));
}

std::optional<std::string> McpSessions::revision(const std::string& id, const std::string& principal) {
  if (book_) return reconcile(id, principal);
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.principal != principal) return std::nullopt;
  it->second.last_used = ++clock_;
  return it->second.revision;
}

std::optional<std::string> McpSessions::reconcile(const std::string& id, const std::string& principal) {
  auto shared = book_->revision(id, principal);
  std::string evicted;
  std::vector<std::shared_ptr<LiveSession>> ending;
  std::optional<std::string> out;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (shared && *shared) {  // held: adopted here if another replica opened it
      if (it == sessions_.end()) {
        evicted = insert(id, principal, **shared, ending);
      } else if (it->second.principal == principal) {
        it->second.last_used = ++clock_;
      } else {
        return std::nullopt;
      }
      out = (*shared)->revision;
    } else if (shared && it != sessions_.end() && it->second.principal == principal) {
      // Closed through another replica: its workspaces here end with it.
      evicted = id;
      ending = std::move(it->second.workspaces);
      sessions_.erase(it);
      if (--held_[principal] == 0) held_.erase(principal);
    }
  }
  if (!evicted.empty()) {
    if (evicted != id) (void)book_->close(evicted);
    ended(evicted, std::move(ending));
  }
  return out;
}

bool McpSessions::elicits_urls(const std::string& id) const {
  std::lock_guard lock(mu_);
  const auto it = sessions_.find(id);
  return it != sessions_.end() && it->second.elicits_urls;
}

bool McpSessions::close(const std::string& id, const std::string& principal) {
  bool held = false;
  if (book_) {  // opened on any replica: gone from the book, so every replica ends it
    auto shared = book_->revision(id, principal);
    held = shared && *shared && book_->close(id).ok();
  }
  std::vector<std::shared_ptr<LiveSession>> ending;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.principal != principal) return held;
    ending = std::move(it->second.workspaces);
    sessions_.erase(it);
    if (--held_[principal] == 0) held_.erase(principal);
  }
  ended(id, std::move(ending));
  return true;
}

std::shared_ptr<LiveSession> McpSessions::workspace(const std::string& id, const std::string& principal) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.principal != principal) return nullptr;
  auto& ws = it->second.workspace;
  if (ws && ws->state() == "ended") ws.reset();  // idle, its lifetime, a reload: the next use makes another
  return ws;
}

std::shared_ptr<LiveSession> McpSessions::add_workspace(const std::string& id, const std::string& principal,
                                                        std::shared_ptr<LiveSession> created) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.principal != principal) return nullptr;
  Session& s = it->second;
  std::erase_if(s.workspaces, [](const auto& w) { return w->state() == "ended"; });  // bounded by the sessions quota
  s.workspaces.push_back(created);
  if (!s.workspace || s.workspace->state() == "ended") s.workspace = std::move(created);
  return s.workspace;
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
