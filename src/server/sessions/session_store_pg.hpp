// The session store in PostgreSQL (storage.postgres), shared by every replica: one row per
// session a live replica holds, naming that replica (docs/sessions.md, "Replicas"). A replica
// that does not hold a session finds here which one does, and its address (the `replicas`
// table, server/replicas/replicas.hpp), and forwards the request there
// (session_forwarder.hpp). When a replica dies, another takes its rows (take_orphan), exactly
// once, and records each session as ended, reason "aborted".
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/sessions/session_store.hpp"
#include "storage/pg_database.hpp"

namespace airlock::server {

class PostgresSessionStore final : public SessionStore {
 public:
  // Connects and creates the table when missing (the `replicas` table is the invocation
  // store's, created before). Rows it adds name `replica`, this daemon's id.
  static Result<std::unique_ptr<PostgresSessionStore>> open(const storage::pg::Database::Location& location,
                                                            std::string replica);
  const std::string& replica() const { return replica_; }

  Status add(const SessionRow& row) override;
  // A removal the database could not take (storage_unavailable) is kept and made by
  // flush_pending(): a row left behind would be recorded "aborted" when this replica dies,
  // after its "ended" record.
  Status remove(const std::string& id) override;
  Result<std::vector<SessionRow>> all() override;  // this replica's
  Status flush_pending();

  // Where a session is held: its row, the replica, and that replica's address ("" when the
  // replica has no row in `replicas`: it died and failover has not taken the session yet).
  struct Location {
    SessionRow row;
    std::string replica;
    std::string address;
  };
  Result<std::optional<Location>> locate(const std::string& id);
  // The sessions held by other replicas that are alive and reachable (a row with an address);
  // only `owner`'s (principal, issuer and sub exactly; the row's id and created are ignored)
  // unless it is nullopt.
  Result<std::vector<Location>> held_elsewhere(const std::optional<SessionRow>& owner);
  // Failover: one session whose replica has no row, locked (SKIP LOCKED: one replica takes
  // each) and deleted in the same transaction once `record` (its "ended" audit record) has
  // succeeded. nullopt: none is left. When `record` fails nothing changes.
  Result<std::optional<Location>> take_orphan(const std::function<Status(const Location&)>& record);
  // The ids of the replicas that have a row (breaking forwards to the others).
  Result<std::set<std::string>> live_replicas();

 private:
  PostgresSessionStore(std::unique_ptr<storage::pg::Database> db, std::string replica)
      : db_(std::move(db)), replica_(std::move(replica)) {}
  std::unique_ptr<storage::pg::Database> db_;
  const std::string replica_;
  std::mutex pending_mu_;
  std::set<std::string> pending_removals_;
};

}  // namespace airlock::server
