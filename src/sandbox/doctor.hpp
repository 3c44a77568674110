// Probes for every mechanism the sandbox uses, and what the sandbox does without each.
#pragma once

#include <string>
#include <vector>

namespace airlock::sandbox {

struct MechanismCheck {
  std::string name;     // "user namespaces", "cgroup memory", ...
  bool works;
  std::string detail;   // what was found ("v1 at /sys/fs/cgroup/memory/...", "ABI 7")
  std::string without;  // what the sandbox does when it is missing
  bool required;        // true: the sandbox refuses to run without it
};

std::vector<MechanismCheck> check_mechanisms();

}  // namespace airlock::sandbox
