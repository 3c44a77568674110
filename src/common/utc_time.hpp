// Times as RFC 3339 text in UTC, the one form every answer, record and listing uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace airlock {

// Milliseconds since the Unix epoch: of `t`, and of now (how the stores keep times).
std::int64_t unix_ms(std::chrono::system_clock::time_point t);
std::int64_t unix_ms_now();

// 2026-12-01T18:04:05.123Z
std::string rfc3339_ms(std::int64_t ms_since_epoch);
std::string rfc3339_ms(std::chrono::system_clock::time_point t);
// 2026-12-01T18:04:05Z
std::string rfc3339_seconds(std::int64_t seconds_since_epoch);

}  // namespace airlock
