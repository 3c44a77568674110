// Which gVisor platform works here (docs/gvisor.md, "Platform detection"). kvm is fastest but
// needs /dev/kvm and can hang in a VM; ptrace works wherever ptrace does. Each candidate is
// probed by running /bin/true in runsc (`runsc do`), bounded by a timeout after which
// everything the probe started is killed. The result is cached per process.
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"

namespace airlock::backend {

struct RunscPlatform {
  std::string runsc;      // the absolute path of the runsc that was probed
  std::string platform;   // the first that ran /bin/true
  std::vector<std::string> tried;  // "kvm: hung, killed after 3 s", for doctor and errors
};

// `runsc` as configured (a name is looked up in PATH); `wanted` empty: the first of kvm
// (when /dev/kvm is usable) and ptrace that works; else only that platform. An error says
// what was tried and the fix.
Result<RunscPlatform> detect_runsc_platform(const std::string& runsc, const std::string& wanted);

// The absolute path of `runsc` (PATH lookup when it has no '/'), or an error with the fix.
Result<std::string> find_runsc(const std::string& runsc);

}  // namespace airlock::backend
