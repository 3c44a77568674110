#include "server/console/console_session_store.hpp"

#include <openssl/rand.h>

#include <vector>

#include "common/digest.hpp"

namespace airlock::server::console {

Result<std::string> random_hex(std::size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1)
    return Error::make("internal", "the random number generator failed");
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : buf) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool MemorySessionStore::expired(const Entry& e, Clock::time_point now) const {
  return now - e.last_used >= options_.idle || now - e.created >= options_.absolute;
}

void MemorySessionStore::prune(Clock::time_point now) {
  for (auto it = sessions_.begin(); it != sessions_.end();)
    it = expired(it->second, now) ? sessions_.erase(it) : std::next(it);
  while (!sessions_.empty() && sessions_.size() >= options_.max_sessions) {
    auto lru = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
      if (it->second.last_used < lru->second.last_used) lru = it;
    sessions_.erase(lru);
  }
}

Result<SessionStore::Created> MemorySessionStore::create(std::string credential) {
  auto id = random_hex(32);
  auto csrf = random_hex(32);
  if (!id) return id.error();
  if (!csrf) return csrf.error();
  std::lock_guard lock(mu_);
  const auto now = now_();
  prune(now);
  sessions_[sha256_hex(*id)] = Entry{Session{std::move(credential), *csrf}, now, now};
  return Created{*id, *csrf};
}

Result<std::optional<Session>> MemorySessionStore::use(const std::string& id) {
  if (id.empty()) return std::optional<Session>();
  std::lock_guard lock(mu_);
  auto it = sessions_.find(sha256_hex(id));
  if (it == sessions_.end()) return std::optional<Session>();
  const auto now = now_();
  if (expired(it->second, now)) {
    sessions_.erase(it);
    return std::optional<Session>();
  }
  it->second.last_used = now;
  return std::optional<Session>(it->second.session);
}

Status MemorySessionStore::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  sessions_.erase(sha256_hex(id));
  return {};
}

Result<std::size_t> MemorySessionStore::size() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace airlock::server::console
