// Parsing and printing of the units users type: durations ("30s", "250ms", "1m30s")
// and sizes ("512M", "64MiB", "1G", "4096").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock {

// Accepts one or more <number><unit> groups, units ns us ms s m h d; a bare number is seconds.
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

// Accepts <number>[unit], units B K Ki KB KiB M Mi MB MiB G Gi GB GiB T Ti (K=Ki=KiB=1024,
// KB=1000; Ki/Mi/Gi as in Kubernetes manifests).
// A bare number is bytes. Overflow and negative values are errors.
Result<std::uint64_t> parse_size(std::string_view text);

std::string format_duration(std::chrono::nanoseconds d);
std::string format_size(std::uint64_t bytes);

}  // namespace airlock
