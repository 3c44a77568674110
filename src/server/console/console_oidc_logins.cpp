#include "server/console/console_oidc_logins.hpp"

#include "common/digest.hpp"

namespace airlock::server::console {

Error unknown_login() {
  return Error::make("oidc_state", "the state is not one of a sign-in this server started (unknown, used already, "
                                   "or the server restarted): start again");
}

Error login_of_another_browser() {
  return Error::make("oidc_state", "this sign-in was started in another browser (its cookie airlock_console_oidc is "
                                   "missing or different): refused");
}

Error login_too_late() { return Error::make("oidc_state", "the sign-in took longer than 10 minutes: start again"); }

void MemoryPendingLogins::prune(Clock::time_point now) {
  for (auto it = pending_.begin(); it != pending_.end();)
    it = now - it->second.created >= kOidcLoginLifetime ? pending_.erase(it) : std::next(it);
  while (pending_.size() >= kMaxPendingLogins) {
    auto oldest = pending_.begin();
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (it->second.created < oldest->second.created) oldest = it;
    pending_.erase(oldest);
  }
}

Status MemoryPendingLogins::put(const std::string& state, const PendingLogin& login) {
  std::lock_guard lock(mu_);
  const auto now = now_();
  prune(now);
  pending_[sha256_hex(state)] = Entry{login, now};
  return {};
}

Result<PendingLogin> MemoryPendingLogins::take(const std::string& state, const std::string& binding) {
  std::lock_guard lock(mu_);
  auto it = pending_.find(sha256_hex(state));
  if (it == pending_.end()) return unknown_login();
  const Entry entry = it->second;
  // Another browser's callback does not end the login: its own browser may still complete it.
  if (binding.empty() || !constant_time_equal(binding, entry.login.binding)) return login_of_another_browser();
  pending_.erase(it);
  if (now_() - entry.created >= kOidcLoginLifetime) return login_too_late();
  return entry.login;
}

Result<std::size_t> MemoryPendingLogins::size() {
  std::lock_guard lock(mu_);
  return pending_.size();
}

}  // namespace airlock::server::console
