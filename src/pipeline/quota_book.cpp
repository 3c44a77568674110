#include "pipeline/quota_book.hpp"

#include <algorithm>
#include <cmath>

namespace airlock::pipeline {
namespace {

using TimePoint = std::chrono::steady_clock::time_point;
using Seconds = std::chrono::duration<double>;

// Accounts idle this long have a full bucket and no CPU in any window (both at most 24h).
constexpr auto kForgetAfter = std::chrono::hours(25);
constexpr std::size_t kForgetSweepAbove = 10'000;  // accounts before idle ones are swept
// CPU used within one hundredth of a window is kept as one entry: at most ~100 per account.
constexpr int kCpuEntriesPerWindow = 100;

std::chrono::seconds whole_seconds_from(double seconds) {
  return std::chrono::seconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(seconds))));
}

double bucket_size(const policy::QuotaLimits& q) {
  return std::max(1.0, q.burst ? *q.burst : q.rate->amount);
}

// Drops CPU entries older than the window; returns what the rest add up to.
double cpu_in_window(std::deque<std::pair<TimePoint, double>>& cpu, std::chrono::milliseconds window,
                     TimePoint now) {
  while (!cpu.empty() && cpu.front().first + window <= now) cpu.pop_front();
  double used = 0;
  for (const auto& [at, seconds] : cpu) used += seconds;
  return used;
}

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

}  // namespace

std::string quota_user_key(const std::string& issuer, const std::string& sub) {
  return issuer + std::string(1, '\0') + sub;
}

QuotaHold::~QuotaHold() { book_->release(principal_, user_); }

std::shared_ptr<QuotaBook> QuotaBook::create(Clock clock) {
  return std::shared_ptr<QuotaBook>(new QuotaBook(std::move(clock)));
}

QuotaBook::Account& QuotaBook::account(const std::string& key) { return accounts_[key]; }

std::optional<QuotaRefusal> QuotaBook::refuse(const Check& c, TimePoint now) {
  const policy::QuotaLimits& q = *c.limits;
  Account& a = *c.account;
  const std::uint32_t cap = q.concurrent ? *q.concurrent : c.fallback_concurrent;
  if (cap > 0 && a.in_flight >= cap)
    return QuotaRefusal{"concurrent", c.holder,
                        c.holder + " has " + std::to_string(a.in_flight) + " invocations running or queued, " +
                            (q.concurrent ? "its quota `concurrent` is " + std::to_string(cap)
                                          : "the most without a `concurrent` quota (server.maxConcurrentInvocations + "
                                            "server.queueLength) is " + std::to_string(cap)),
                        std::chrono::seconds(1)};
  if (q.rate) {
    const double size = bucket_size(q);
    if (a.tokens < 0) a.tokens = size, a.refilled = now;
    a.tokens = std::min(size, a.tokens + Seconds(now - a.refilled).count() * q.rate->per_second());
    a.refilled = now;
    if (a.tokens < 1)
      return QuotaRefusal{"rate", c.holder,
                          c.holder + " is over its quota `rate` of " + format_amount(q.rate->amount) + "/" +
                              format_window(q.rate->per) + " (burst " + format_amount(size) + ")",
                          whole_seconds_from((1 - a.tokens) / q.rate->per_second())};
  }
  if (q.cpu_seconds) {
    const auto window = q.cpu_seconds->per;
    double used = cpu_in_window(a.cpu, window, now);
    if (used >= q.cpu_seconds->amount) {
      const double total = used;
      // Admitted again once enough of the oldest usage has left the window.
      TimePoint until = now;
      for (const auto& [at, seconds] : a.cpu) {
        used -= seconds;
        until = at + window;
        if (used < q.cpu_seconds->amount) break;
      }
      return QuotaRefusal{"cpuSeconds", c.holder,
                          c.holder + " used " + format_amount(total) + " CPU-seconds of its quota `cpuSeconds` of " +
                              format_amount(q.cpu_seconds->amount) + "/" + format_window(window),
                          whole_seconds_from(Seconds(until - now).count())};
    }
  }
  return std::nullopt;
}

std::variant<std::shared_ptr<QuotaHold>, QuotaRefusal> QuotaBook::admit(const policy::QuotasConfig& quotas,
                                                                         const std::string& principal,
                                                                         const std::string& user) {
  const TimePoint now = clock_();
  const policy::QuotaLimits principal_limits = quotas.for_principal(principal);
  std::lock_guard lock(mu_);
  forget_idle(now);
  std::vector<Check> checks;
  if (!principal.empty())
    checks.push_back({&principal_limits, &account("p:" + principal), "principal " + principal, quotas.fallback_concurrent});
  if (!user.empty()) {
    const auto nul = user.find('\0');
    checks.push_back({&quotas.users, &account("u:" + user), "user " + user.substr(nul + 1) + " (" + user.substr(0, nul) + ")",
                      quotas.fallback_concurrent});
  }
  for (const auto& c : checks)
    if (auto refusal = refuse(c, now)) return *refusal;
  for (const auto& c : checks) {
    ++c.account->in_flight;
    if (c.limits->rate) c.account->tokens -= 1;
  }
  return std::shared_ptr<QuotaHold>(new QuotaHold(shared_from_this(), principal, user));
}

void QuotaBook::release(const std::string& principal, const std::string& user) {
  std::lock_guard lock(mu_);
  for (const std::string& key : {principal.empty() ? std::string() : "p:" + principal,
                                 user.empty() ? std::string() : "u:" + user}) {
    if (key.empty()) continue;
    auto it = accounts_.find(key);
    if (it != accounts_.end() && it->second.in_flight > 0) --it->second.in_flight;
  }
}

void QuotaBook::charge_cpu(const policy::QuotasConfig& quotas, const std::string& principal, const std::string& user,
                           double cpu_seconds) {
  if (!(cpu_seconds > 0)) return;
  const TimePoint now = clock_();
  const policy::QuotaLimits principal_limits = quotas.for_principal(principal);
  std::lock_guard lock(mu_);
  auto charge = [&](const std::string& key, const policy::QuotaLimits& q) {
    if (!q.cpu_seconds) return;  // nothing to count against
    auto& cpu = account(key).cpu;
    (void)cpu_in_window(cpu, q.cpu_seconds->per, now);
    if (!cpu.empty() && now - cpu.back().first < q.cpu_seconds->per / kCpuEntriesPerWindow)
      cpu.back().second += cpu_seconds;
    else
      cpu.emplace_back(now, cpu_seconds);
  };
  if (!principal.empty()) charge("p:" + principal, principal_limits);
  if (!user.empty()) charge("u:" + user, quotas.users);
}

std::uint32_t QuotaBook::in_flight(const std::string& principal, const std::string& user) const {
  std::lock_guard lock(mu_);
  auto it = accounts_.find(user.empty() ? "p:" + principal : "u:" + user);
  return it == accounts_.end() ? 0 : it->second.in_flight;
}

void QuotaBook::forget_idle(TimePoint now) {
  if (accounts_.size() <= kForgetSweepAbove) return;
  for (auto it = accounts_.begin(); it != accounts_.end();) {
    const Account& a = it->second;
    const bool idle = a.in_flight == 0 && now - a.refilled > kForgetAfter &&
                      (a.cpu.empty() || now - a.cpu.back().first > kForgetAfter);
    it = idle ? accounts_.erase(it) : std::next(it);
  }
}

}  // namespace airlock::pipeline
