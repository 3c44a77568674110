// The OCI bundle one gVisor run starts from (docs/gvisor.md): config.json and a rootfs that
// shows the same minimal read-only view of the system as the local sandbox (sandbox/plan.hpp
// shares the lists): /usr and the host's /bin, /sbin, /lib* (directories bound read-only,
// merged-/usr symlinks made the same), a generated /etc with the few host files programs
// need, the spec's binds, and size-capped tmpfs for the work dir and /tmp. The program runs
// as the sandbox user (kSandboxUid) with no capabilities and no_new_privileges.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

// config.json for `spec` (its argv, env with the PATH/HOME/LANG defaults, binds, limits,
// hostname, work dir). Pure: no I/O beyond reading which system roots the host has.
nlohmann::json oci_config(const sandbox::Spec& spec);

// Its "process" alone: what `runsc exec --process` takes for a session's exec
// (backend/gvisor_session.hpp), the same user, capabilities and rlimits as the call's.
nlohmann::json oci_process(const sandbox::Spec& spec);

// Writes <dir>/config.json and <dir>/rootfs (the read-only root: mount points, symlinks, the
// generated /etc files). `dir` must exist and be empty.
Status write_oci_bundle(const std::string& dir, const sandbox::Spec& spec);

}  // namespace airlock::backend
