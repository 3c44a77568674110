#include "server/sessions/session_failover.hpp"

#include "audit/session_record.hpp"
#include "server/sessions/session_service.hpp"

namespace airlock::server {

Result<int> record_orphaned_sessions(PostgresSessionStore& store, audit::AuditLog& audit,
                                     const std::function<void(const PostgresSessionStore::Location&)>& taken) {
  auto record = [&audit](const PostgresSessionStore::Location& l) -> Status {
    auto r = aborted_session_record(l.row, "the replica that held it (" + l.replica +
                                               ") stopped: no heartbeat for storage.failoverAfter");
    auto receipt = audit.append(audit::to_fields(r));
    if (!receipt) return Error::make("audit_failed", "session " + l.row.id + "'s record: " + receipt.error().message);
    return {};
  };
  for (int count = 0;; ++count) {
    auto orphan = store.take_orphan(record);
    if (!orphan) return orphan.error();
    if (!*orphan) return count;
    if (taken) taken(**orphan);
  }
}

}  // namespace airlock::server
