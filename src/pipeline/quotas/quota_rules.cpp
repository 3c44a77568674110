#include "pipeline/quotas/quota_rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace airlock::pipeline {
namespace {

std::chrono::seconds whole_seconds_from(double seconds) {
  return std::chrono::seconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(seconds))));
}

double bucket_size(const policy::QuotaLimits& q) { return std::max(1.0, q.burst ? *q.burst : q.rate->amount); }

std::string format_amount(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string format_window(std::chrono::milliseconds per) {
  if (per.count() % 3'600'000 == 0) return per.count() == 3'600'000 ? "h" : std::to_string(per.count() / 3'600'000) + "h";
  if (per.count() % 60'000 == 0) return per.count() == 60'000 ? "m" : std::to_string(per.count() / 60'000) + "m";
  if (per.count() % 1000 == 0) return per.count() == 1000 ? "s" : std::to_string(per.count() / 1000) + "s";
  return std::to_string(per.count()) + "ms";
}

std::optional<QuotaRefusal> over_concurrent(const QuotaUsage& a, const policy::QuotaLimits& q, const std::string& holder,
                                            std::uint32_t fallback) {
  const std::uint32_t cap = q.concurrent ? *q.concurrent : fallback;
  if (cap == 0 || a.in_flight < cap) return std::nullopt;
  return QuotaRefusal{"concurrent", holder,
                      holder + " has " + std::to_string(a.in_flight) + " invocations running or queued, " +
                          (q.concurrent ? "its quota `concurrent` is " + std::to_string(cap)
                                        : "the most without a `concurrent` quota (server.maxConcurrentInvocations + "
                                          "server.queueLength) is " + std::to_string(cap)),
                      std::chrono::seconds(1)};
}

std::optional<QuotaRefusal> over_cpu(const QuotaUsage& a, const policy::QuotaLimits& q, const std::string& holder) {
  const double window = std::chrono::duration<double>(q.cpu_seconds->per).count();
  double used = 0;
  for (const auto& c : a.cpu)
    if (c.age_seconds < window) used += c.cpu_seconds;
  if (used < q.cpu_seconds->amount) return std::nullopt;
  const double total = used;
  // Admitted again once enough of the oldest usage has left the window.
  double wait = 0;
  for (const auto& c : a.cpu) {
    if (c.age_seconds >= window) continue;
    used -= c.cpu_seconds;
    wait = window - c.age_seconds;
    if (used < q.cpu_seconds->amount) break;
  }
  return QuotaRefusal{"cpuSeconds", holder,
                      holder + " used " + format_amount(total) + " CPU-seconds of its quota `cpuSeconds` of " +
                          format_amount(q.cpu_seconds->amount) + "/" + format_window(q.cpu_seconds->per),
                      whole_seconds_from(wait)};
}

}  // namespace

QuotaDecision decide_quota(const QuotaUsage& a, const policy::QuotaLimits& q, const std::string& holder,
                           std::uint32_t fallback_concurrent) {
  QuotaDecision d;
  if (q.rate) {
    const double size = bucket_size(q);
    d.tokens = a.tokens ? std::min(size, *a.tokens + std::max(0.0, a.seconds_since_refill) * q.rate->per_second())
                        : size;
  }
  if ((d.refusal = over_concurrent(a, q, holder, fallback_concurrent))) return d;
  if (q.rate && *d.tokens < 1) {
    d.refusal = QuotaRefusal{"rate", holder,
                             holder + " is over its quota `rate` of " + format_amount(q.rate->amount) + "/" +
                                 format_window(q.rate->per) + " (burst " + format_amount(bucket_size(q)) + ")",
                             whole_seconds_from((1 - *d.tokens) / q.rate->per_second())};
    return d;
  }
  if (q.cpu_seconds) d.refusal = over_cpu(a, q, holder);
  return d;
}

std::vector<QuotaAccountRef> quota_accounts(const policy::QuotasConfig& quotas, const std::string& principal,
                                            const std::string& user) {
  std::vector<QuotaAccountRef> out;
  if (!principal.empty()) out.push_back({"p:" + principal, quotas.for_principal(principal), "principal " + principal});
  if (!user.empty()) {
    const auto nul = user.find('\0');
    const std::string holder = nul == std::string::npos
                                   ? "user " + user
                                   : "user " + user.substr(nul + 1) + " (" + user.substr(0, nul) + ")";
    out.push_back({"u:" + user, quotas.users, holder});
  }
  return out;
}

std::string quota_user_key(const std::string& issuer, const std::string& sub) {
  return issuer + std::string(1, '\0') + sub;
}

}  // namespace airlock::pipeline
