// The daemon's running account of its quotas (policy/quotas_config.hpp, docs/daemon.md
// "Quotas"): per principal and per end user, the invocations admitted and not yet ended, a
// token bucket, and the CPU-seconds their sandboxes used within the window. One book per
// daemon, kept across reloads: a reload changes the limits, not what was already used.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "policy/quotas_config.hpp"

namespace airlock::pipeline {

// Why a call was refused: the quota (`concurrent`, `rate` or `cpuSeconds`), whose (principal
// NAME or user ISSUER SUB), and when the same call could be admitted.
struct QuotaRefusal {
  std::string quota;
  std::string holder;      // "principal research-agent", "user https://idp.example alice"
  std::string message;     // one sentence for the caller
  std::chrono::seconds retry_after{1};
};

class QuotaBook;

// An admitted call's place: its principal's and user's `concurrent` count it until the hold
// is destroyed (the call ended, or it was suspended for a human approval).
class QuotaHold {
 public:
  QuotaHold(const QuotaHold&) = delete;
  QuotaHold& operator=(const QuotaHold&) = delete;
  ~QuotaHold();

 private:
  friend class QuotaBook;
  QuotaHold(std::shared_ptr<QuotaBook> book, std::string principal, std::string user)
      : book_(std::move(book)), principal_(std::move(principal)), user_(std::move(user)) {}
  std::shared_ptr<QuotaBook> book_;
  std::string principal_, user_;
};

class QuotaBook : public std::enable_shared_from_this<QuotaBook> {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  static std::shared_ptr<QuotaBook> create(Clock clock = [] { return std::chrono::steady_clock::now(); });

  // Admits one call of `principal` ("" for a user calling without an agent) on behalf of
  // `user` ("" without one) under `quotas`, or says which quota refuses it. A refused call
  // uses up nothing; an admitted one takes a token from each bucket and holds a place in
  // each `concurrent` until its hold is destroyed.
  std::variant<std::shared_ptr<QuotaHold>, QuotaRefusal> admit(const policy::QuotasConfig& quotas,
                                                               const std::string& principal,
                                                               const std::string& user);
  // The CPU-seconds an ended call's sandbox used, charged to its principal and user.
  void charge_cpu(const policy::QuotasConfig& quotas, const std::string& principal, const std::string& user,
                  double cpu_seconds);
  // Invocations admitted and not yet ended (tests, metrics).
  std::uint32_t in_flight(const std::string& principal, const std::string& user = {}) const;

 private:
  explicit QuotaBook(Clock clock) : clock_(std::move(clock)) {}
  friend class QuotaHold;
  struct Account {
    std::uint32_t in_flight = 0;
    double tokens = -1;  // < 0: a full bucket, not yet used
    std::chrono::steady_clock::time_point refilled{};
    std::deque<std::pair<std::chrono::steady_clock::time_point, double>> cpu;  // oldest first
  };
  struct Check {
    const policy::QuotaLimits* limits;
    Account* account;
    std::string holder;
    std::uint32_t fallback_concurrent;
  };
  std::optional<QuotaRefusal> refuse(const Check& c, std::chrono::steady_clock::time_point now);
  void release(const std::string& principal, const std::string& user);
  Account& account(const std::string& key);
  void forget_idle(std::chrono::steady_clock::time_point now);

  Clock clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Account> accounts_;  // "p:NAME" and "u:ISSUER SUB"
};

// The key of a user in the book: issuer and sub (either may hold any character but NUL).
std::string quota_user_key(const std::string& issuer, const std::string& sub);

}  // namespace airlock::pipeline
