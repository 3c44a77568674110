// The part of a ChildPlan a warm call's child needs (warm_child.cpp), as the supervisor sends
// it to the template with each call: the work dir, the size of the fresh tmpfs, the host
// name, the ids, the egress listeners, the rlimits and the Landlock rules of that call's own
// Spec, planned by make_child_plan exactly as for a cold run. The seccomp program is the one built in.
#pragma once

#include <string>

#include "common/result.hpp"
#include "sandbox/child.hpp"

namespace airlock::sandbox {

// cgroup v2: where a warm template sees its cgroup tree (read-only; sandbox/cgroup.hpp,
// WarmCgroupTree), in which the plan names the call's leaf.
inline constexpr const char* kWarmCgroupTreeInSandbox = "/airlock-warm-cgroup";

std::string encode_warm_call_plan(const ChildPlan& plan);

// Fills plan's workdir, root_options, hostname, uid, gid, last_cap, unshare_cgroup_ns,
// warm_cgroup, listeners, rlimits, landlock and seccomp from the encoded text.
Status decode_warm_call_plan(const std::string& text, ChildPlan& plan);

}  // namespace airlock::sandbox
