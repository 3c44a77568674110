// Snapshots with memory of gVisor sessions (docs/sessions.md, "Checkpoint and restore on this
// machine"): what a restore does on the host before `runsc restore` starts the sandbox.
#pragma once

#include <chrono>
#include <string>

#include "common/result.hpp"

namespace airlock::backend::gvisor_session {

// Unpacks the tar `archive` into `workspace` (a new, empty tmpfs) with GNU tar run as
// `uid`/`gid`, no supplementary groups and no_new_privs: the archive came out of a session, so
// it is unpacked with that session's user's rights, tar stripping leading '/' and refusing '..'
// in member names and link targets, and making an absolute or '..' symlink a placeholder file
// (so no later member is written through it). The files must be there before the restore: the
// restored processes' open files and cwd are looked up again by path. Errors: "snapshot_failed".
Status unpack_workspace(const std::string& archive, const std::string& workspace, unsigned uid, unsigned gid,
                        std::chrono::milliseconds timeout);

}  // namespace airlock::backend::gvisor_session
