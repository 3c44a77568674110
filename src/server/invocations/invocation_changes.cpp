#include "server/invocations/invocation_changes.hpp"

namespace airlock::server {

void InvocationChanges::listen(Listener listener) {
  std::lock_guard lock(mu_);
  listeners_.push_back(std::move(listener));
}

// Under the lock: listeners only queue, and one that says its owner is gone is dropped here.
void InvocationChanges::publish(const std::string& id, const nlohmann::json& stored) {
  std::lock_guard lock(mu_);
  std::erase_if(listeners_, [&](const Listener& listener) { return !listener(id, stored); });
}

}  // namespace airlock::server
