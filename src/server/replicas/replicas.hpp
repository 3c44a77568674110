// Replicas sharing one PostgreSQL database (storage.postgres) and failover between them
// (docs/daemon.md, "Replicas and failover"). Each daemon registers a row in `replicas` under a
// fresh random id (host name, pid, started_at, heartbeat_at) and refreshes its heartbeat every
// storage.heartbeatInterval. Every replica also looks, as often, for replicas whose heartbeat
// is older than storage.failoverAfter: it removes such a row (DELETE ... RETURNING: exactly one
// replica does) and then aborts the running invocations whose replica has no row left, each
// under its row lock (PostgresInvocationStore::abort_orphan), so each is aborted exactly once.
// Then (Hooks::after_failover) the daemon releases the quota places such replicas held
// (pipeline/quotas/quota_book_pg.hpp).
//
// Each row also holds the replica's address (server.advertiseUrl, or derived from server.listen):
// a request for a session another replica holds is forwarded there (sessions/session_forwarder.hpp).
//
// Times are the database's clock, never two machines' clocks compared. A replica looks for
// dead ones only after its own heartbeat has succeeded for failoverAfter without a break: after
// an outage of the database every replica had a stale heartbeat, and the live ones must get
// the chance to refresh theirs before anyone is taken for dead.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "server/invocations/invocation_store_pg.hpp"
#include "storage/pg_database.hpp"

namespace airlock::server {

class ReplicaRegistry {
 public:
  struct Options {
    std::chrono::milliseconds heartbeat_interval{5000};
    std::chrono::milliseconds failover_after{30000};
  };
  using Orphan = PostgresInvocationStore::Orphan;
  // What failover does with each running invocation of a dead replica.
  struct Hooks {
    std::function<Status(const Orphan&)> record;            // the audit record, under the row lock
    std::function<nlohmann::json(const Orphan&)> response;  // its stored response ("aborted")
    std::function<void(const Orphan&)> aborted;             // after the commit: leases, pods, metric
    std::function<void()> after_failover;  // each failover round, after the orphans: quota holds
    std::function<void(const std::string&)> log;
  };

  // Registers this replica (store.replica() is its id) on a connection of its own, so a
  // heartbeat never waits behind the store's statements. Does not start the thread.
  static Result<std::unique_ptr<ReplicaRegistry>> join(const storage::pg::Database::Location& location,
                                                       PostgresInvocationStore& store, Options options,
                                                       Hooks hooks);
  ~ReplicaRegistry();  // stop()
  ReplicaRegistry(const ReplicaRegistry&) = delete;
  ReplicaRegistry& operator=(const ReplicaRegistry&) = delete;

  void start();
  // The URL the other replicas reach this one at (policy::advertised_url, once the port is
  // bound), written in its row now and whenever it registers again.
  Status advertise(const std::string& address);
  // Why the database did not answer this replica's last heartbeat; nullopt when it did (or
  // none was tried yet). GET /healthz reports it: a load balancer stops sending calls here.
  std::optional<std::string> storage_problem() const;
  // Stops the thread and removes this replica's row (a clean exit: nothing of it is orphaned
  // unless a row is still "running", which the others then abort). Idempotent.
  void stop();

 private:
  ReplicaRegistry(std::unique_ptr<storage::pg::Database> db, PostgresInvocationStore& store, Options options,
                  Hooks hooks)
      : db_(std::move(db)), store_(store), options_(options), hooks_(std::move(hooks)) {}
  void round();  // what the thread does every interval: the heartbeat, then failover when due
  Status heartbeat();
  Status register_row(const std::string& step);
  void remove_dead();
  void abort_orphans();
  void loop();

  std::unique_ptr<storage::pg::Database> db_;
  PostgresInvocationStore& store_;
  const Options options_;
  Hooks hooks_;
  std::mutex address_mu_;
  std::string address_;  // "" until advertise(): NULL in the row
  std::optional<std::chrono::steady_clock::time_point> healthy_since_;
  bool reported_outage_ = false;
  mutable std::mutex problem_mu_;
  std::optional<std::string> problem_;  // storage_problem()
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false, stopped_ = false;
  std::thread thread_;
};

}  // namespace airlock::server
