// Per-sandbox cgroups: created under this process's own cgroup, limits written before the
// child runs, counters read for the verdict and usage, removed at the end.
//
// cgroup v2 is used when our cgroup can hand the memory and pids controllers to a child;
// otherwise the v1 hierarchies for memory, pids and cpuacct where they are mounted and
// writable; otherwise none (the sandbox then relies on rlimits, see `airlock doctor`).
// AIRLOCK_CGROUP=auto|v1|v2|none overrides the choice (tests use it).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/spec.hpp"

namespace airlock::sandbox {

enum class CgroupMode { none, v1, v2 };

// cgroup v2: a warm template's subtree (sandbox/warm/warm.hpp). Its directory holds no process (it
// hands its controllers to its children): the template runs in its leaf "template", each call
// in a leaf "call-N" the supervisor makes with the call's limits. The template sees the tree
// read-only and clones each call's init straight into its leaf (CLONE_INTO_CGROUP), so the
// tree is the common ancestor the kernel asks it to be allowed to write. Shared by the
// template's cgroup and each of its calls': removed when the last of them is.
class WarmCgroupTree;

// What this host offers, detected once per process.
struct CgroupSupport {
  CgroupMode mode = CgroupMode::none;
  std::string v2_base;        // our own cgroup in the unified hierarchy (v2 mode)
  bool v2_memory = false;     // memory controller usable below v2_base
  bool v2_pids = false;
  bool v2_cpu = false;        // cpu controller (cpu.max: Limits::cpus) usable below v2_base
  std::string v1_memory;      // our own cgroup in each v1 hierarchy; empty when unusable
  std::string v1_pids;
  std::string v1_cpuacct;
  std::string v1_cpu;         // the cpu hierarchy (cfs quota), made only for Limits::cpus
  std::string v1_freezer;     // the freezer hierarchy, made only for Limits::freezable
  bool v1_memsw = false;      // memory.memsw.* exists (swap accounting)
  std::string why_not;        // why a mechanism is missing, for doctor and messages

  bool limits_memory() const { return mode == CgroupMode::v2 ? v2_memory : !v1_memory.empty(); }
  bool limits_pids() const { return mode == CgroupMode::v2 ? v2_pids : !v1_pids.empty(); }
  bool measures_cpu() const { return mode == CgroupMode::v2 || !v1_cpuacct.empty(); }
  bool limits_cpu_bandwidth() const { return mode == CgroupMode::v2 ? v2_cpu : !v1_cpu.empty(); }
};

const CgroupSupport& cgroup_support();
// Where detection learns where the hierarchies are mounted: the usual places when they
// provably are the hierarchies' roots (cheap), else /proc/self/mountinfo; or mountinfo always.
enum class CgroupMountLookup { usual_places_first, mountinfo };

// Detection without the cache (doctor prints both the forced and the detected mode).
CgroupSupport detect_cgroup_support(
    const std::string& forced_mode,
    CgroupMountLookup lookup = CgroupMountLookup::usual_places_first);

// For `airlock doctor`: which hierarchy holds each controller, and our place in the unified one.
struct CgroupFacts {
  std::vector<std::pair<std::string, std::string>> controllers;  // name, "v1" | "v2" | "unmounted"
  bool unified_holds_us = false;  // a cgroup2 hierarchy is mounted and holds this process
  std::string v2_path;            // our cgroup there (the one detection delegates from)
  bool v2_writable = false;
  std::string v2_controllers;     // its cgroup.controllers
  std::string v2_subtree;         // its cgroup.subtree_control, as detection left it
};
CgroupFacts read_cgroup_facts(const CgroupSupport& support);

struct CgroupStats {
  std::uint64_t oom_kills = 0;
  std::optional<std::uint64_t> memory_peak_bytes;
  std::optional<std::uint64_t> cpu_user_ns;
  std::optional<std::uint64_t> cpu_sys_ns;
  std::optional<std::uint64_t> pids_peak;
  std::optional<std::uint64_t> pids_refused;  // pids.events "max": forks refused at the limit
};

class SandboxCgroup {
 public:
  SandboxCgroup() = default;
  SandboxCgroup(SandboxCgroup&&) noexcept = default;
  SandboxCgroup& operator=(SandboxCgroup&&) noexcept;
  SandboxCgroup(const SandboxCgroup&) = delete;
  SandboxCgroup& operator=(const SandboxCgroup&) = delete;
  ~SandboxCgroup();

  // Creates the cgroup(s) and writes the limits. With CgroupMode::none returns an empty object.
  static Result<SandboxCgroup> create(const Limits& limits);
  // v2 only: a warm template's tree and its leaf "template" with `limits`. `sandbox_uid` is
  // the host uid the sandbox's processes run as: the tree's and each call's cgroup.procs are
  // made its (the kernel checks the cloning process may write both).
  static Result<SandboxCgroup> create_warm_template(const Limits& limits, uid_t sandbox_uid);
  // v2 only: a call's leaf in its template's tree, with the call's limits.
  static Result<SandboxCgroup> create_warm_call(const Limits& limits,
                                                std::shared_ptr<WarmCgroupTree> tree);

  bool active() const { return !dirs_.empty(); }
  CgroupMode mode() const { return mode_; }
  int clone_into_fd() const { return v2_dir_fd_.get(); }  // -1 unless v2
  // A warm template's tree (v2), else null; its host path; this cgroup's name within it.
  const std::shared_ptr<WarmCgroupTree>& warm_tree() const { return tree_; }
  std::string warm_tree_dir() const;
  std::string name_in_warm_tree() const;
  // v1 placement: the `tasks` file of each hierarchy, opened for writing. The sandbox's first
  // process writes "0" into each to move itself. A write of another pid takes the kernel's
  // threadgroup lock, whose RCU grace period costs 5-16 ms when no other move happened just
  // before (every `airlock run`); a thread moving itself skips it (~0.2 ms).
  Result<std::vector<UniqueFd>> open_join_fds() const;
  std::optional<std::uint64_t> cpu_usage_ns() const;        // user + system
  CgroupStats read_stats() const;
  // Only the CPU counters of read_stats (two files, not six): a live session's usage.
  CgroupStats read_cpu() const;
  // A warm call's child prepared ahead of its call (sandbox/warm/warm.hpp) has run in this cgroup
  // before the hand-over: from now on the CPU counters (cpu_usage_ns, read_stats) and the
  // memory peak count only what follows. The limits themselves are the cgroup's, as written.
  void count_from_now();
  void kill_all() const;  // cgroup.kill on v2; v1 relies on the pid namespace (thawed first)
  // Freezes (or thaws) every process in it: v2 cgroup.freeze, v1 the freezer hierarchy (for
  // Limits::freezable). Returns once the kernel says it is frozen (or thawed); refused where
  // no freezer is usable.
  Status freeze(bool frozen) const;
  // SIGKILL to every process listed in the cgroup(s), v1 and v2: for processes that are not
  // in a pid namespace of ours (gVisor's sandbox and gofer).
  void kill_listed() const;
  // The cgroup.procs files to write "0" into to join (v1: each hierarchy; v2: the one).
  std::vector<std::string> procs_files() const;
  Status remove();        // rmdir; also done by the destructor

 private:
  Status adopt_v2_leaf(const std::string& dir, const Limits& limits);

  CgroupMode mode_ = CgroupMode::none;
  std::vector<std::string> dirs_;  // v2: one; v1: memory, pids, cpuacct (those in use)
  std::string memory_dir_, pids_dir_, cpu_dir_, freezer_dir_;
  UniqueFd v2_dir_fd_;
  std::shared_ptr<WarmCgroupTree> tree_;  // after dirs_ in removal: its leaves go first
  struct CpuBase {  // count_from_now
    std::uint64_t total = 0, user = 0, sys = 0;
  } cpu_base_;
};

// Removes cgroups named airlock-<pid>-* whose creating process no longer exists (left by a
// supervisor that was SIGKILLed). Returns how many were removed.
int remove_stale_cgroups();

}  // namespace airlock::sandbox
