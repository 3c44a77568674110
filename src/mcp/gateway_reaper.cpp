// The gateway's own threads. The reaper stops instances idle for their idleTimeout or over a
// lowered cap, and retires those whose sandbox ended on its own (a crash, counted for the
// backoff); it sleeps until the next deadline or a poke: no polling. The relister lists a
// server's tools again when it says they changed.
#include <optional>

#include "mcp/gateway_impl.hpp"

namespace airlock::mcp {

void Gateway::Impl::reap_loop() {
  std::unique_lock lock(mu);
  while (!stopped) {
    poked = false;
    reap_once(lock);
    if (stopped) break;
    if (poked) continue;
    std::optional<Clock::time_point> next;
    for (const auto& [key, slot] : slots) {
      if (!slot->instance || slot->active > 0) continue;
      auto at = slot->last_used + slot->config.idle_timeout;
      // An idle instance also ends when its credentials do (they are revoked then).
      const auto expires = slot->instance->credentials_expire_at();
      if (expires != creds::Clock::time_point::max()) {
        const auto left = expires - kCredentialRenewMargin - creds::Clock::now();
        at = std::min(at, Clock::now() + std::chrono::duration_cast<Clock::duration>(left));
      }
      if (!next || at < *next) next = at;
    }
    if (next)
      cv.wait_until(lock, *next, [&] { return poked || stopped; });
    else
      cv.wait(lock, [&] { return poked || stopped; });
  }
}

// One pass over the slots. Instances are dropped (and re-listings run) without the lock.
void Gateway::Impl::reap_once(std::unique_lock<std::mutex>& lock) {
  std::vector<std::shared_ptr<ServerInstance>> retired;
  const auto now = Clock::now();
  for (auto& [key, slot] : slots) {
    if (!slot->instance) continue;
    if (slot->instance->ended()) {
      retired.push_back(
          detach(*slot, true, slot->instance->end_verdict(std::chrono::milliseconds(0))));
    } else if (slot->active == 0 && now >= slot->last_used + slot->config.idle_timeout) {
      retired.push_back(detach(*slot, false, ""));
    } else if (slot->active == 0 && slot->instance->credentials_expire_before(
                                        creds::Clock::now() + kCredentialRenewMargin)) {
      retired.push_back(detach(*slot, false, ""));
    } else if (slot->relist && slot->first_listing_told) {
      slot->relist = false;
      relist_queue.push_back(slot);
      cv.notify_all();
    }
  }
  (void)make_room(0, nullptr, retired);  // a lowered cap: the idle instances over it go
  if (retired.empty()) return;
  lock.unlock();
  for (auto& inst : retired) inst->kill();
  retired.clear();
  lock.lock();
}

void Gateway::Impl::relist_loop() {
  std::unique_lock lock(mu);
  for (;;) {
    cv.wait(lock, [&] { return stopped || !relist_queue.empty(); });
    if (stopped) return;
    auto slot = relist_queue.front().lock();
    relist_queue.pop_front();
    if (!slot) continue;
    lock.unlock();
    relist(slot);
    slot.reset();
    lock.lock();
  }
}

// notifications/tools/list_changed: the new listing goes to `listed` (pinning decides).
void Gateway::Impl::relist(const std::shared_ptr<Slot>& slot) {
  std::shared_ptr<ServerInstance> inst;
  {
    std::lock_guard lock(mu);
    if (stopped) return;
    inst = slot->instance;
  }
  if (!inst) return;
  auto listed = inst->relist();
  if (listed && options.listed) options.listed(slot->server, *listed);
  inst.reset();  // may be the last reference (stopped meanwhile): never dropped under the lock
}

}  // namespace airlock::mcp
