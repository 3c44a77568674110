// The gvisor backend (docs/gvisor.md): each call runs in gVisor's runsc from an OCI bundle
// Airlock writes for it (backend/oci_bundle.hpp), in a cgroup of its own that carries the
// tier's limits, behind the same egress proxy as the local sandbox, in a network namespace
// whose only way out is that proxy's listener (backend/gvisor_run.hpp). Everything a run
// makes (its directory under <dataDir>/gvisor/, runsc's state, the cgroup, the processes)
// is removed when it ends; what a killed daemon left is removed when the next one starts.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/runsc_command.hpp"
#include "common/result.hpp"
#include "egress/policy.hpp"

namespace airlock::backend {

class GvisorRun;

struct GvisorOptions {
  std::string runsc = "runsc";  // a name is looked up in PATH
  std::string platform;         // "": detected (backend/runsc_platform.hpp)
  std::string state_dir;        // <dataDir>/gvisor: every run's directory is made here
  std::shared_ptr<const std::vector<egress::Endpoint>> forbidden;  // never reachable
};

// What runsc needs beyond the tool's own limits: the Sentry, the gofer and runsc itself live
// in the run's cgroup too (measured: ~55 threads and ~40 MiB for a shell command on ptrace).
inline constexpr std::uint64_t kGvisorMemoryOverheadBytes = 64ULL << 20;
inline constexpr std::uint32_t kGvisorPidsOverhead = 128;

// The cgroup's limits of a run (or a session): the tool's plus the overheads above.
sandbox::Limits gvisor_cgroup_limits(const sandbox::Limits& tool);

class GvisorBackend : public Backend {
 public:
  // Finds runsc and a platform that works, checks the cgroup limits can be enforced, makes
  // the state directory and removes what an earlier daemon left in it. Errors say the fix.
  static Result<std::unique_ptr<GvisorBackend>> create(const GvisorOptions& options);
  ~GvisorBackend() override;

  RunResult run(const RunRequest& request, const RunContext& context) override;
  std::string_view name() const override { return "gvisor"; }
  bool stopping() const override { return stopping_; }
  void shutdown() override;

  const RunscInvocation& invocation() const { return runsc_; }
  const std::string& state_dir() const { return state_dir_; }
  const std::shared_ptr<const std::vector<egress::Endpoint>>& forbidden() const { return forbidden_; }
  std::size_t running() const;

 private:
  GvisorBackend(RunscInvocation runsc, GvisorOptions options);
  void add(GvisorRun* run);
  void remove(GvisorRun* run);

  RunscInvocation runsc_;
  std::string state_dir_;
  std::shared_ptr<const std::vector<egress::Endpoint>> forbidden_;
  mutable std::mutex mu_;
  std::set<GvisorRun*> running_;
  std::atomic<bool> stopping_{false};
};

// The bundle of a run without running it (bench/gvisor runs it with `runsc run` by hand):
// writes <dir>/bundle for the request as the backend would.
Status write_request_bundle(const RunRequest& request, const std::string& dir);

// Removes the run directories under `state_dir` whose daemon (the pid in their name) is gone:
// their containers are force-deleted first. Returns how many were removed.
int remove_stale_runs(const RunscInvocation& runsc, const std::string& state_dir);

}  // namespace airlock::backend
