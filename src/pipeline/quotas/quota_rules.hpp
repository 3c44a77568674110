// The quota arithmetic, once, for every book (quota_book.hpp: in memory; server/
// quota_book_pg.hpp: in PostgreSQL, shared by the replicas): given what one account has used
// as seen at one instant, and its limits, whether one more call is admitted, and if not,
// which quota refuses it and when it could be admitted. Pure: no clock, no storage. Times
// are ages in seconds before that instant, so a book may take them from any one clock (the
// memory book's steady clock, the database's clock_timestamp()).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/sections/quotas_config.hpp"

namespace airlock::pipeline {

// Why a call was refused: the quota (`concurrent`, `rate` or `cpuSeconds`), whose (principal
// NAME or user ISSUER SUB), and when the same call could be admitted.
struct QuotaRefusal {
  std::string quota;
  std::string holder;      // "principal research-agent", "user https://idp.example alice"
  std::string message;     // one sentence for the caller
  std::chrono::seconds retry_after{1};
};

// One account (a principal's or a user's) as its book saw it at one instant.
struct QuotaUsage {
  std::uint32_t in_flight = 0;          // calls admitted and not yet ended
  std::optional<double> tokens;         // the bucket when last refilled; nullopt: never used (full)
  double seconds_since_refill = 0;      // since then
  struct Cpu {
    double age_seconds;                 // how long ago it was charged
    double cpu_seconds;
  };
  std::vector<Cpu> cpu;                 // oldest first; entries older than the window are ignored
};

struct QuotaDecision {
  std::optional<QuotaRefusal> refusal;  // nullopt: this account admits the call
  // The bucket refilled to the instant (when the limits have a rate): the book stores it, less
  // one token if the call is admitted by every account.
  std::optional<double> tokens;
};

// `holder` names the account in a refusal ("principal NAME", "user SUB (ISSUER)");
// `fallback_concurrent` caps in_flight where the limits set no `concurrent` (0: no cap).
QuotaDecision decide_quota(const QuotaUsage& usage, const policy::QuotaLimits& limits, const std::string& holder,
                           std::uint32_t fallback_concurrent);

// CPU charged within one hundredth of a window may be kept as one entry (at most ~100 per
// account): the entry leaves the window with its first charge, a little early for the rest.
inline constexpr int kCpuEntriesPerWindow = 100;

// The accounts one call of `principal` ("" for none) on behalf of `user` (a quota_user_key,
// "" for none) counts against, principal first: key ("p:NAME", "u:ISSUER\0SUB"), limits, and
// the holder a refusal names ("principal NAME", "user SUB (ISSUER)").
struct QuotaAccountRef {
  std::string key;
  policy::QuotaLimits limits;
  std::string holder;
};
std::vector<QuotaAccountRef> quota_accounts(const policy::QuotasConfig& quotas, const std::string& principal,
                                            const std::string& user);

// The key of a user in a book: issuer and sub (either may hold any character but NUL).
std::string quota_user_key(const std::string& issuer, const std::string& sub);

}  // namespace airlock::pipeline
