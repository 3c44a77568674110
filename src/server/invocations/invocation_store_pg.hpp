// The invocation store in PostgreSQL (storage.postgres), shared by every replica. Each row
// names the replica that runs it; the `replicas` table (one row per live replica, its
// heartbeat: server/replicas/replicas.hpp) is created with the store's tables, so a store can find the
// running rows whose replica is gone.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <string>

#include "server/invocations/invocation_store.hpp"
#include "storage/pg_database.hpp"

namespace airlock::server {

class PostgresInvocationStore : public InvocationStore {
 public:
  // Connects and creates the tables when missing. Rows this store begins (or resumes) name
  // `replica`; "" draws a fresh random id.
  static Result<std::unique_ptr<PostgresInvocationStore>> open(const storage::pg::Database::Location& location,
                                                               std::string replica = "");
  const std::string& replica() const { return replica_; }

  Status begin(const std::string& id, const std::string& tool, const Owner& owner = {}) override;
  Status finish(const std::string& id, const std::string& status, const nlohmann::json& response) override;
  std::optional<nlohmann::json> get(const std::string& id) override;
  std::optional<Owner> owner(const std::string& id) override;
  std::optional<std::int64_t> started_ms(const std::string& id) override;
  Result<nlohmann::json> list(const Query& query) override;
  std::vector<Running> running() override;  // every replica's

  // One running row whose replica has no row in `replicas` (it died and another replica
  // removed it), claimed under its row lock so that exactly one replica aborts it:
  // `record(row)` (the audit record) then the row finished as `response(row)` with status
  // "error", in one transaction. nullopt: none is left. When `record` fails nothing changes.
  struct Orphan {
    std::string id, tool, replica;
    Owner owner;  // as the row began: the aborted response names it, so its caller still sees it
  };
  Result<std::optional<Orphan>> abort_orphan(const std::function<Status(const Orphan&)>& record,
                                             const std::function<nlohmann::json(const Orphan&)>& response);

  // A finish the server could not take (storage_unavailable) is kept, in memory, and written
  // by the next flush (the replica's heartbeat round, and its clean exit): a call that was
  // answered and audited must not stay "running", where failover would take it for orphaned.
  Status flush_pending();

 private:
  PostgresInvocationStore(std::unique_ptr<storage::pg::Database> db, std::string replica)
      : db_(std::move(db)), replica_(std::move(replica)) {}
  Status write_finish(const std::string& id, const std::string& status, const nlohmann::json& response);
  std::unique_ptr<storage::pg::Database> db_;
  const std::string replica_;
  std::mutex finish_mu_;  // finishes and the flush, in order: an older one never overwrites
  std::map<std::string, std::pair<std::string, nlohmann::json>> pending_;  // id -> status, response
};

}  // namespace airlock::server
