// Probes for every mechanism the sandbox uses, and what the sandbox does without each.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/cgroup.hpp"

namespace airlock::sandbox {

struct MechanismCheck {
  std::string name;     // "user namespaces", "cgroup memory", ...
  bool works;
  std::string detail;   // what was found ("v1 at /sys/fs/cgroup/memory/...", "ABI 7")
  std::string without;  // what the sandbox does when it is missing
  bool required;        // true: the sandbox refuses to run without it
};

std::vector<MechanismCheck> check_mechanisms();

// What the host-dependent checks are judged from: read from this host by check_mechanisms,
// given by the tests for hosts this one is not (Ubuntu's AppArmor, a container, pure v2).
struct HostFacts {
  bool root = false;
  int userns_errno = 0;                  // unshare(CLONE_NEWUSER) in a child
  std::string max_user_namespaces;       // user.max_user_namespaces
  std::string apparmor_restrict_userns;  // kernel.apparmor_restrict_unprivileged_userns; "" absent
  int seccomp_mode_before = 0;           // /proc/self/status "Seccomp:" before we filter anything
  int seccomp_filters_before = 0;        // "Seccomp_filters:"
  int seccomp_errno = 0;                 // installing an allow-all filter in a child
  int clone3_errno = 0;                  // clone3(NULL, 0): EFAULT/EINVAL where it exists
  std::string container;                 // the sign of one seen: "docker (/.dockerenv)"; "" if none
};

MechanismCheck user_namespaces_check(const HostFacts& facts);
// Only where the sysctl exists (Ubuntu 23.10 and later).
MechanismCheck apparmor_userns_check(const HostFacts& facts);
MechanismCheck clone3_check(const HostFacts& facts);
MechanismCheck seccomp_check(const HostFacts& facts, std::size_t filter_instructions);
// Only where a container (or a filter someone else installed) was seen.
MechanismCheck container_check(const HostFacts& facts);
MechanismCheck cgroup_hierarchies_check(const CgroupFacts& facts);
// Only where a unified hierarchy holds us.
MechanismCheck cgroup_v2_delegation_check(const CgroupFacts& facts, const CgroupSupport& support);
MechanismCheck warm_calls_check(const CgroupSupport& support, const std::optional<std::string>& why_not);

}  // namespace airlock::sandbox
