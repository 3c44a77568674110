// tools[].approval: who must say yes before a critical tool runs, and how long they have
// (docs/approvals.md, docs/config.md).
#pragma once

#include <chrono>
#include <cstdint>

namespace airlock::policy {

// The most distinct approvers a tool may require, and the longest and shortest wait.
inline constexpr std::uint32_t kMaxApprovers = 10;
inline constexpr std::chrono::milliseconds kMaxApprovalTimeout{7LL * 24 * 3600 * 1000};
inline constexpr std::chrono::milliseconds kMinApprovalTimeout{1000};

struct ApprovalPolicy {
  std::uint32_t approvers = 1;                     // distinct people (or agents) who approve
  std::chrono::milliseconds timeout{15 * 60 * 1000};  // no decision by then: approval_expired
  bool operator==(const ApprovalPolicy&) const = default;
};

}  // namespace airlock::policy
