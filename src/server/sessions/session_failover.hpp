// Failover of sessions (storage.postgres; docs/sessions.md, "Replicas"): a replica taken for
// dead (server/replicas/replicas.hpp) leaves rows in the shared `sessions` table naming
// sessions that died with it. A live replica takes each, exactly once, and records it as
// ended, reason "aborted", as a restart does on SQLite (record_aborted_sessions).
#pragma once

#include <functional>

#include "audit/audit_log.hpp"
#include "common/result.hpp"
#include "server/sessions/session_store_pg.hpp"

namespace airlock::server {

// Every session whose replica has no row left: its "ended" record (reason "aborted", naming
// the dead replica) and the removal of its row, in one transaction under the row's lock; then
// `taken(session)` (its credential leases). Returns how many this replica took; an error when
// the table or the log failed (the rest are taken at the next round).
Result<int> record_orphaned_sessions(PostgresSessionStore& store, audit::AuditLog& audit,
                                     const std::function<void(const PostgresSessionStore::Location&)>& taken);

}  // namespace airlock::server
