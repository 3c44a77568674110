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

// The PATH a sandboxed program gets unless its spec's env sets one.
inline constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// The host paths every sandbox shows read-only at the same place: /usr, and those of /bin,
// /sbin, /lib* the host has (directories bound, symlinks made the same). Binds come on top.
std::vector<std::string> system_read_only_roots();

// The sandbox's /etc/passwd and /etc/group: root, the sandbox user (home `home`), nobody.
std::string passwd_text(const std::string& home);
std::string group_text();

// The host files of /etc every sandbox shows read-only at the same place (those the host has);
// the rest of its /etc is generated (passwd, group, hosts, hostname).
struct SystemEtcEntry {
  const char* path;
  bool is_file;
};
std::vector<SystemEtcEntry> system_etc_entries();

// Where execve will look for argv[0]: the program itself if it has a '/', else each absolute
// directory of `path` in order.
std::vector<std::string> exec_candidates(const std::string& program, const std::string& path);

Result<ChildPlan> make_child_plan(const Spec& spec, const CgroupSupport& cgroups);

}  // namespace airlock::sandbox
