// The daemon's running account of its quotas (policy/sections/quotas_config.hpp, docs/daemon.md
// "Quotas"): per principal and per end user, the invocations admitted and not yet ended, a
// token bucket, and the CPU-seconds their sandboxes used within the window. One book per
// daemon, kept across reloads: a reload changes the limits, not what was already used.
// Two books: MemoryQuotaBook (here: one daemon, SQLite) and PostgresQuotaBook
// (pipeline/quotas/quota_book_pg.hpp: storage.postgres, the replicas' accounts together). Both decide
// with quota_rules.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>

#include "common/result.hpp"
#include "pipeline/quotas/quota_rules.hpp"
#include "policy/sections/quotas_config.hpp"

namespace airlock::pipeline {

// An admitted call's place: its principal's and user's `concurrent` count it until the hold
// is destroyed (the call ended, or it was suspended for a human approval).
class QuotaHold {
 public:
  explicit QuotaHold(std::function<void()> release) : release_(std::move(release)) {}
  QuotaHold(const QuotaHold&) = delete;
  QuotaHold& operator=(const QuotaHold&) = delete;
  ~QuotaHold() {
    if (release_) release_();
  }

 private:
  std::function<void()> release_;
};

// A hold, a refusal, or the book could not decide (an Error: "storage_unavailable" when its
// database cannot be reached): the call is then refused, never admitted unaccounted.
using QuotaAdmission = std::variant<std::shared_ptr<QuotaHold>, QuotaRefusal, Error>;

class QuotaBook {
 public:
  virtual ~QuotaBook() = default;
  // Admits one call of `principal` ("" for a user calling without an agent) on behalf of
  // `user` ("" without one) under `quotas`, or says which quota refuses it. A refused call
  // uses up nothing; an admitted one takes a token from each bucket and holds a place in
  // each `concurrent` until its hold is destroyed.
  virtual QuotaAdmission admit(const policy::QuotasConfig& quotas, const std::string& principal,
                               const std::string& user) = 0;
  // The CPU-seconds an ended call's sandbox used, charged to its principal and user.
  virtual void charge_cpu(const policy::QuotasConfig& quotas, const std::string& principal, const std::string& user,
                          double cpu_seconds) = 0;
  // Invocations admitted and not yet ended (tests, metrics).
  virtual std::uint32_t in_flight(const std::string& principal, const std::string& user = {}) = 0;
};

// The book of one daemon, in memory.
class MemoryQuotaBook : public QuotaBook, public std::enable_shared_from_this<MemoryQuotaBook> {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  static std::shared_ptr<MemoryQuotaBook> create(Clock clock = [] { return std::chrono::steady_clock::now(); });

  QuotaAdmission admit(const policy::QuotasConfig& quotas, const std::string& principal,
                       const std::string& user) override;
  void charge_cpu(const policy::QuotasConfig& quotas, const std::string& principal, const std::string& user,
                  double cpu_seconds) override;
  std::uint32_t in_flight(const std::string& principal, const std::string& user = {}) override;

 private:
  explicit MemoryQuotaBook(Clock clock) : clock_(std::move(clock)) {}
  struct Account {
    std::uint32_t in_flight = 0;
    std::optional<double> tokens;  // nullopt: a full bucket, not yet used
    std::chrono::steady_clock::time_point refilled{};
    std::deque<std::pair<std::chrono::steady_clock::time_point, double>> cpu;  // oldest first
  };
  static QuotaUsage usage_of(const Account& a, std::chrono::steady_clock::time_point now);
  void release(const std::vector<std::string>& keys);
  void forget_idle(std::chrono::steady_clock::time_point now);

  Clock clock_;
  std::mutex mu_;
  std::unordered_map<std::string, Account> accounts_;  // "p:NAME" and "u:ISSUER\0SUB"
};

}  // namespace airlock::pipeline
