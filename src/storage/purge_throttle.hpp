// When a state store deletes its expired rows: the writes themselves purge, at most once a
// period, so no thread of its own is needed. A purge that fails is simply tried at the next one.
#pragma once

#include <cstdint>
#include <mutex>

namespace airlock::storage {

class PurgeThrottle {
 public:
  explicit PurgeThrottle(std::int64_t every_ms = 60'000) : every_ms_(every_ms) {}

  // Whether a purge is due at `now_ms`; when it is, the next one is due a period later.
  bool due(std::int64_t now_ms) {
    std::lock_guard lock(mu_);
    if (now_ms < next_ms_) return false;
    next_ms_ = now_ms + every_ms_;
    return true;
  }

 private:
  const std::int64_t every_ms_;
  std::mutex mu_;
  std::int64_t next_ms_ = 0;
};

}  // namespace airlock::storage
