// How a pod's end becomes the run's Outcome: DeadlineExceeded → timeout, OOMKilled →
// memory_limit, the exit code, an image that cannot be pulled → setup_error naming it.
#pragma once

#include <string>

#include "backend/backend.hpp"
#include "backend/kubernetes/pod_watch.hpp"

namespace airlock::backend::kubernetes {

// `stdout_log`: the container's log, read up to limit+1 bytes (so a longer one is seen).
RunResult outcome_of(const PodEnd& end, const std::string& stdout_log, std::uint64_t output_limit);

RunResult setup_error(const std::string& message);

}  // namespace airlock::backend::kubernetes
