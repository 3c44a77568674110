// Where the console's sessions are kept (docs/console.md): in this daemon's memory, or, with
// storage.postgres, in the database every replica shares (a browser behind a round-robin load
// balancer stays signed in whichever replica it reaches). The same rules either way: an idle
// and an absolute timeout, a bound on the number of sessions (the least recently used ends),
// and a session ended by sign-out is refused at once everywhere.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "storage/pg_database.hpp"

namespace airlock::creds {
class SealingKey;
}

namespace airlock::server::console {

struct SessionOptions {
  std::chrono::seconds idle{15 * 60};         // unused this long: gone
  std::chrono::seconds absolute{8 * 60 * 60};  // gone this long after sign-in, used or not
  std::size_t max_sessions = 1000;             // full: the least recently used is ended
};

struct Session {
  std::string credential;  // the API key or user token signed in with
  std::string csrf;        // required in kCsrfHeader on every state change
};

// Hex of `bytes` random bytes from OpenSSL's RAND_bytes; an error if it has no entropy.
Result<std::string> random_hex(std::size_t bytes);

class SessionStore {
 public:
  virtual ~SessionStore() = default;
  struct Created {
    std::string id;  // for the cookie only
    std::string csrf;
  };
  virtual Result<Created> create(std::string credential) = 0;
  // The session of `id`, touched (its idle time starts again); none when unknown or expired.
  // An error when the store cannot answer: the caller refuses the request (fail closed).
  virtual Result<std::optional<Session>> use(const std::string& id) = 0;
  virtual Status remove(const std::string& id) = 0;
  virtual Result<std::size_t> size() = 0;
};

// In memory: a restart signs everyone out. Sessions are kept under the SHA-256 of their id.
class MemorySessionStore final : public SessionStore {
 public:
  using Clock = std::chrono::steady_clock;
  explicit MemorySessionStore(SessionOptions options = {}, std::function<Clock::time_point()> now = Clock::now)
      : options_(options), now_(std::move(now)) {}

  Result<Created> create(std::string credential) override;
  Result<std::optional<Session>> use(const std::string& id) override;
  Status remove(const std::string& id) override;
  Result<std::size_t> size() override;

 private:
  struct Entry {
    Session session;
    Clock::time_point created, last_used;
  };
  bool expired(const Entry& e, Clock::time_point now) const;
  void prune(Clock::time_point now);  // expired entries; then the LRU one while full

  SessionOptions options_;
  std::function<Clock::time_point()> now_;
  std::mutex mu_;
  std::map<std::string, Entry> sessions_;  // by sha256_hex(id)
};

// Milliseconds of the wall clock (every replica's clock, unlike a steady one, is comparable).
using WallMs = std::function<std::int64_t()>;
std::int64_t wall_ms();

// storage.postgres: the table console_sessions, keyed by the SHA-256 of the session id, the
// credential and the CSRF token sealed with the secret store's key (console_session_store_pg.cpp).
Result<std::shared_ptr<SessionStore>> open_postgres_session_store(const storage::pg::Database::Location& location,
                                                                 std::shared_ptr<const creds::SealingKey> key,
                                                                 SessionOptions options = {}, WallMs now = wall_ms);

}  // namespace airlock::server::console
