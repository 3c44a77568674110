// Where the console's pending OpenID sign-ins wait between the redirect to the provider and
// its callback (console_oidc.hpp): in this daemon's memory, or, with storage.postgres, in the
// database every replica shares, so that a callback a load balancer sends to another replica
// than the one that started the login completes. Kept under the SHA-256 of the state; a state
// is taken once, by one replica; a login lives kOidcLoginLifetime.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.hpp"
#include "server/console/console_session_store.hpp"
#include "storage/pg_database.hpp"

namespace airlock::server::console {

inline constexpr std::chrono::minutes kOidcLoginLifetime{10};
inline constexpr std::size_t kMaxPendingLogins = 1000;

struct PendingLogin {
  std::string nonce, verifier, token_endpoint, binding, client_id, redirect_uri;
};

class PendingLogins {
 public:
  virtual ~PendingLogins() = default;
  // Kept under the SHA-256 of `state`; when full, the oldest login ends.
  virtual Status put(const std::string& state, const PendingLogin& login) = 0;
  // The login of `state`, which ends now (a state is used once). Refused (code "oidc_state")
  // when unknown, expired, or started by another browser (`binding`); any other error is the
  // store's (the callback is refused either way).
  virtual Result<PendingLogin> take(const std::string& state, const std::string& binding) = 0;
  virtual Result<std::size_t> size() = 0;
};

// The refusals of take(), the same from every store.
Error unknown_login();
Error login_of_another_browser();
Error login_too_late();

class MemoryPendingLogins final : public PendingLogins {
 public:
  using Clock = std::chrono::steady_clock;
  explicit MemoryPendingLogins(std::function<Clock::time_point()> now = Clock::now) : now_(std::move(now)) {}
  Status put(const std::string& state, const PendingLogin& login) override;
  Result<PendingLogin> take(const std::string& state, const std::string& binding) override;
  Result<std::size_t> size() override;

 private:
  struct Entry {
    PendingLogin login;
    Clock::time_point created;
  };
  void prune(Clock::time_point now);

  std::function<Clock::time_point()> now_;
  std::mutex mu_;
  std::map<std::string, Entry> pending_;  // by the SHA-256 of the state
};

// storage.postgres: the table console_oidc_logins, the nonce and the PKCE verifier sealed with
// the secret store's key, the browser binding kept as its SHA-256 (console_oidc_logins_pg.cpp).
Result<std::shared_ptr<PendingLogins>> open_postgres_pending_logins(const storage::pg::Database::Location& location,
                                                                   std::shared_ptr<const creds::SealingKey> key,
                                                                   WallMs now = wall_ms);

}  // namespace airlock::server::console
