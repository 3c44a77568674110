// Who a request's credential was verified as, for the fair queue's intake (executor.hpp).
//
// Authentication runs on the intake's worker, after the request waited there: at intake, the
// credential is not yet verified. A credential that authenticated before is known here (by
// its SHA-256, never the text) with the principal it named, so its requests share that
// principal's place in the intake whatever else varies (`Bearer`/`bearer`, a fresh Airlock
// token, another user): one share per verified caller. A credential not known here waits as
// an unverified caller of its own, and unverified callers together hold at most half the
// intake. The memory only places requests in the intake; every request is still
// authenticated in full, so a stale entry (a revoked token, a removed key) changes nothing
// but whose share a request waited in.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "pipeline/invocation.hpp"
#include "server/core/executor.hpp"

namespace airlock::server {

class VerifiedCallers {
 public:
  // At most `capacity` credentials, each for `ttl` after it last authenticated.
  explicit VerifiedCallers(std::size_t capacity = 4096, std::chrono::seconds ttl = std::chrono::minutes(5));

  // The intake caller of a request not yet authenticated.
  IntakeCaller intake_caller(const pipeline::Invocation& inv) const;
  // After `inv`'s authenticate stage: its credential names its principal (or its user).
  void remember(const pipeline::Invocation& inv);

 private:
  struct Known {
    std::string caller;
    std::chrono::steady_clock::time_point until;
  };
  std::size_t capacity_;
  std::chrono::seconds ttl_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Known> by_credential_;  // credential's SHA-256 -> its caller
  std::deque<std::string> order_;                          // credentials, oldest first
};

// The fair queue's name for the principal's lane (or, without one, the user's).
std::string lane_of(const std::string& principal, const std::string& user_key);

}  // namespace airlock::server
