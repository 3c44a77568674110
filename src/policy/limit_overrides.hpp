// Partial limits over a tier's: a tool's (tools[].limits) or a session template's
// (sessionTemplates[].limits); policy::detail::with_overrides applies them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace airlock::policy {

struct LimitOverrides {
  std::optional<std::chrono::milliseconds> timeout, cpu_time;
  std::optional<std::uint64_t> memory, disk, output;
  std::optional<std::uint32_t> pids, open_files;
};

}  // namespace airlock::policy
