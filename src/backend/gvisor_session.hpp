// Sessions on the gvisor backend (docs/sessions.md, "HIGH-tier sessions on gVisor"): a session
// is one runsc sandbox made from the same OCI bundle as a gVisor tool call (the read-only
// view, the tier's limits in a cgroup of its own, egress only through the proxy's listeners in
// a network namespace of its own, credentials only in the environment of the 0600 config.json),
// whose init is `sleep infinity`. Each exec is `runsc exec --process` with the process spec
// of the call itself (uid/gid 1000, every capability set empty, noNewPrivileges, the same
// RLIMIT_NOFILE and environment): the Sentry is the seccomp layer of both, and the exec is a
// sibling of the init inside the same sandbox and the same cgroup. The workspace is a
// directory on the host (a tmpfs capped at the tier's disk when the daemon is root) bound over
// the work dir; its files are served from the host side by the local session's own file code
// (sandbox/session/session_init_files.hpp: openat2 RESOLVE_BENEATH the workspace), in a
// helper process running as the sandbox's user.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/runsc_command.hpp"
#include "backend/session_backend.hpp"
#include "egress/policy.hpp"

namespace airlock::backend {

struct GvisorSessionOptions {
  RunscInvocation runsc;  // the gvisor backend's (its platform, --rootless)
  std::string state_dir;  // <dataDir>/gvisor: each session's directory is made here
  std::shared_ptr<const std::vector<egress::Endpoint>> forbidden;  // never reachable
};

class GvisorSessionBackend : public SessionBackend {
 public:
  explicit GvisorSessionBackend(GvisorSessionOptions options) : options_(std::move(options)) {}
  // A new sandbox for `request` (context.warm_key is not used: none is kept ready).
  Result<std::unique_ptr<Session>> start_session(const RunRequest& request, const RunContext& context) override;
  // A session without egress rules restored from a checkpoint of one (Session::checkpoint):
  // its workspace unpacked from the image's archive as the sandbox's user, then `runsc restore`.
  Result<std::unique_ptr<Session>> restore_session(const RunRequest& request, const RunContext& context,
                                                   const MemoryImage& image) override;

 private:
  GvisorSessionOptions options_;
};

// The prefix of a session's directory and container id under the state directory:
// "airlock-gv-<pid>-s<n>", so remove_stale_runs (gvisor_backend.hpp) removes what a killed
// daemon left of its sessions too.
std::string gvisor_session_id(unsigned long sequence);

}  // namespace airlock::backend
