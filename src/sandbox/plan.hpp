// Turns a Spec into a ChildPlan: the mount layout, Landlock rules, rlimits and exec arguments,
// all decided in the supervisor so the child only executes them.
#pragma once

#include "common/result.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/child.hpp"
#include "sandbox/spec.hpp"

namespace airlock::sandbox {

// Host ids the sandbox user maps to. As root: nobody/nogroup (65534); otherwise the caller's
// own uid and gid (an unprivileged user can map only itself).
struct HostIds {
  bool root_mode;
  unsigned uid;
  unsigned gid;
};
HostIds host_ids();

// Normalises an absolute path ("/a//b/./c/" -> "/a/b/c"); rejects "..", relative paths and
// NUL bytes.
Result<std::string> normalize_absolute(const std::string& path);

Result<ChildPlan> make_child_plan(const Spec& spec, const CgroupSupport& cgroups);

}  // namespace airlock::sandbox
