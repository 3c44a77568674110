// quotas: how much each principal (an agent) and each end user may run (docs/daemon.md,
// "Quotas"): invocations at once, a token-bucket rate, and CPU-seconds per window measured
// from the sandboxes' own usage. A principal's entry overrides `default` key by key.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace airlock::policy {

inline constexpr std::uint32_t kMaxQuotaConcurrent = 100'000;
inline constexpr std::uint32_t kMaxQuotaWeight = 100;

// "20/s", "100/m", "0.5/10s": `amount` per `per`.
struct QuotaRate {
  double amount = 0;
  std::chrono::milliseconds per{1000};
  double per_second() const { return amount * 1000.0 / static_cast<double>(per.count()); }
  bool operator==(const QuotaRate&) const = default;
};

// One set of limits; an absent one does not limit.
struct QuotaLimits {
  std::optional<std::uint32_t> concurrent;  // invocations admitted and not yet ended
  std::optional<QuotaRate> rate;            // invocations, a token bucket refilled at this rate
  std::optional<double> burst;              // the bucket's size; absent: one `per` of the rate
  std::optional<QuotaRate> cpu_seconds;     // CPU-seconds of the tools' sandboxes per window
  std::optional<std::uint32_t> weight;      // principals only: the fair queue's share (1)
  std::optional<std::uint32_t> sessions;    // sessions open at once (docs/sessions.md); 0: none
  bool operator==(const QuotaLimits&) const = default;
  bool limits_anything() const { return concurrent || rate || cpu_seconds; }
};

struct QuotasConfig {
  QuotaLimits defaults;                          // quotas.default: every principal's
  std::map<std::string, QuotaLimits> principals;  // quotas.principals.<name>: over the default
  QuotaLimits users;                             // quotas.users: each end user's, across agents
  // Where no `concurrent` is set: server.maxConcurrentInvocations + server.queueLength, what
  // the one queue held before quotas (set at load; 0: no bound).
  std::uint32_t fallback_concurrent = 0;

  // A principal's limits: its own keys, the default's for the rest.
  QuotaLimits for_principal(const std::string& name) const {
    auto it = principals.find(name);
    if (it == principals.end()) return defaults;
    QuotaLimits q = it->second;
    if (!q.concurrent) q.concurrent = defaults.concurrent;
    if (!q.rate) {  // the default's bucket, with the principal's own size if it gave one
      q.rate = defaults.rate;
      if (!q.burst) q.burst = defaults.burst;
    }
    if (!q.cpu_seconds) q.cpu_seconds = defaults.cpu_seconds;
    if (!q.weight) q.weight = defaults.weight;
    if (!q.sessions) q.sessions = defaults.sessions;
    return q;
  }
  bool operator==(const QuotasConfig&) const = default;
};

}  // namespace airlock::policy
