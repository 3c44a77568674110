// Snapshot and fork (docs/sessions.md): POST /v1/sessions/{id}/snapshot archives the session's
// work dir (its files, not its memory) into a snapshot owned like the session, with the
// archive's SHA-256 and a retention; POST /v1/sessions {fromSnapshot} starts a new session of
// the same template from one (fork is snapshot then create); /v1/snapshots lists, shows and
// deletes them like sessions. The archive is made and unpacked by tar inside the session's own
// sandbox: the daemon stores and checks bytes, never the workspace's paths or links. A snapshot
// with memory (a gVisor session without egress rules) also holds runsc's checkpoint; a session
// from it is restored by the backend, which unpacks the archive as the sandbox's user first.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "backend/session_backend.hpp"
#include "common/result.hpp"
#include "pipeline/authenticator.hpp"
#include "server/http/http_message.hpp"
#include "server/sessions/session_service.hpp"
#include "server/sessions/snapshot_store.hpp"

namespace airlock::server {

inline constexpr std::size_t kMaxSnapshotsPerOwner = 16;
inline constexpr std::chrono::hours kDefaultSnapshotRetention{24 * 7};
inline constexpr std::chrono::hours kMaxSnapshotRetention{24 * 30};

// The snapshot `id` if `caller` owns it (or manages sessions); nothing otherwise, never saying
// whether it exists.
std::optional<SnapshotRow> find_snapshot(SnapshotStore& store, const std::string& id, const pipeline::Caller& caller,
                                         bool manages);

// Archives the session's work dir into a new snapshot, kept for `retention`; its "snapshotted"
// record. `memory`: first the session's checkpoint (backend::Session::checkpoint) into the
// snapshot's image directory, the session running on. Errors: quota_exceeded:snapshots,
// snapshot_too_large, snapshot_failed (tar's or runsc's own words), memory_snapshot_unsupported,
// session_paused, session_ended, storage.
Result<SnapshotRow> take_snapshot(SessionService& sessions, SnapshotStore& store, LiveSession& session,
                                  std::chrono::milliseconds retention, bool memory = false);

// A snapshot with memory, checked (its archive's SHA-256 and its image's digest: otherwise
// snapshot_corrupt, nothing started), for backend::SessionBackend::restore_session.
Result<backend::MemoryImage> verified_memory_image(SnapshotStore& store, const SnapshotRow& row);

// Unpacks the snapshot into a new session's work dir, once its archive's SHA-256 is checked
// (snapshot_corrupt when it does not match). For SessionService::CreateRequest::prepare.
Status restore_snapshot(SnapshotStore& store, const SnapshotRow& row, backend::Session& sandbox);

// POST /v1/sessions/{id}/snapshot {retention?: "7d", memory?: false} of the session's owner: 201,
// the snapshot. `memory: true` where the session's backend cannot is refused (501
// memory_snapshot_unsupported) with its reason (backend::Session::can_snapshot_memory), as it is
// for a session with credentials (its memory holds them).
HttpResponse snapshot_response(SessionService& sessions, LiveSession& session, const std::string& body);

bool is_snapshots_path(const std::vector<std::string>& parts);  // /v1/snapshots[/{id}]
void handle_snapshots(SnapshotStore& store, const pipeline::Caller& caller, bool manages, const HttpRequest& r,
                      const std::vector<std::string>& parts, const std::function<void(HttpResponse)>& reply);

}  // namespace airlock::server
