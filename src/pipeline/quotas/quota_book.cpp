#include "pipeline/quotas/quota_book.hpp"

namespace airlock::pipeline {
namespace {

using TimePoint = std::chrono::steady_clock::time_point;
using Seconds = std::chrono::duration<double>;

// Accounts idle this long have a full bucket and no CPU in any window (both at most 24h).
constexpr auto kForgetAfter = std::chrono::hours(25);
constexpr std::size_t kForgetSweepAbove = 10'000;  // accounts before idle ones are swept

}  // namespace

std::shared_ptr<MemoryQuotaBook> MemoryQuotaBook::create(Clock clock) {
  return std::shared_ptr<MemoryQuotaBook>(new MemoryQuotaBook(std::move(clock)));
}

QuotaUsage MemoryQuotaBook::usage_of(const Account& a, TimePoint now) {
  QuotaUsage u;
  u.in_flight = a.in_flight;
  u.tokens = a.tokens;
  u.seconds_since_refill = Seconds(now - a.refilled).count();
  for (const auto& [at, seconds] : a.cpu) u.cpu.push_back({Seconds(now - at).count(), seconds});
  return u;
}

QuotaAdmission MemoryQuotaBook::admit(const policy::QuotasConfig& quotas, const std::string& principal,
                                      const std::string& user) {
  const TimePoint now = clock_();
  const auto refs = quota_accounts(quotas, principal, user);
  std::lock_guard lock(mu_);
  forget_idle(now);
  std::vector<QuotaDecision> decisions;
  for (const auto& r : refs) {
    decisions.push_back(decide_quota(usage_of(accounts_[r.key], now), r.limits, r.holder, quotas.fallback_concurrent));
    if (decisions.back().refusal) return *decisions.back().refusal;  // nothing used up
  }
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    Account& a = accounts_[refs[i].key];
    ++a.in_flight;
    if (decisions[i].tokens) a.tokens = *decisions[i].tokens - 1, a.refilled = now;
    keys.push_back(refs[i].key);
  }
  return std::make_shared<QuotaHold>([book = shared_from_this(), keys] { book->release(keys); });
}

void MemoryQuotaBook::release(const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  for (const std::string& key : keys) {
    auto it = accounts_.find(key);
    if (it != accounts_.end() && it->second.in_flight > 0) --it->second.in_flight;
  }
}

void MemoryQuotaBook::charge_cpu(const policy::QuotasConfig& quotas, const std::string& principal,
                                 const std::string& user, double cpu_seconds) {
  if (!(cpu_seconds > 0)) return;
  const TimePoint now = clock_();
  const auto refs = quota_accounts(quotas, principal, user);
  std::lock_guard lock(mu_);
  for (const auto& r : refs) {
    if (!r.limits.cpu_seconds) continue;  // nothing to count against
    const auto window = r.limits.cpu_seconds->per;
    auto& cpu = accounts_[r.key].cpu;
    while (!cpu.empty() && cpu.front().first + window <= now) cpu.pop_front();
    if (!cpu.empty() && now - cpu.back().first < window / kCpuEntriesPerWindow)
      cpu.back().second += cpu_seconds;
    else
      cpu.emplace_back(now, cpu_seconds);
  }
}

std::uint32_t MemoryQuotaBook::in_flight(const std::string& principal, const std::string& user) {
  std::lock_guard lock(mu_);
  auto it = accounts_.find(user.empty() ? "p:" + principal : "u:" + user);
  return it == accounts_.end() ? 0 : it->second.in_flight;
}

void MemoryQuotaBook::forget_idle(TimePoint now) {
  if (accounts_.size() <= kForgetSweepAbove) return;
  for (auto it = accounts_.begin(); it != accounts_.end();) {
    const Account& a = it->second;
    const bool idle = a.in_flight == 0 && now - a.refilled > kForgetAfter &&
                      (a.cpu.empty() || now - a.cpu.back().first > kForgetAfter);
    it = idle ? accounts_.erase(it) : std::next(it);
  }
}

}  // namespace airlock::pipeline
