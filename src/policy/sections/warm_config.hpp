// tools[].warm: the tool's calls fork from a warm template (docs/warm-start.md), and when the
// template is replaced; server.maxWarmTemplates bounds how many templates run at once.
#pragma once

#include <chrono>
#include <cstdint>

namespace airlock::policy {

inline constexpr std::uint32_t kMaxWarmRecycleCalls = 1'000'000;
inline constexpr std::chrono::milliseconds kMinWarmRecycleAfter{1000};
inline constexpr std::chrono::milliseconds kMaxWarmRecycleAfter{24LL * 3600 * 1000};
inline constexpr unsigned kMaxWarmTemplates = 64;

struct WarmPolicy {
  // The template is replaced after this many calls, or this long after it started, whichever
  // comes first: its children share its address-space layout, so recycling re-randomises it.
  std::uint32_t recycle_calls = 1000;
  std::chrono::milliseconds recycle_after{10 * 60 * 1000};
  bool operator==(const WarmPolicy&) const = default;
};

}  // namespace airlock::policy
