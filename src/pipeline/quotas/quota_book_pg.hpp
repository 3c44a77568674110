// The quota book in PostgreSQL (storage.postgres): every replica admits against the same
// accounts, so a principal's `concurrent`, `rate` and `cpuSeconds` hold for the replicas
// together (docs/daemon.md, "Quotas and the fair queue"). The arithmetic is
// pipeline/quotas/quota_rules.hpp's, as the memory book's; this class only reads and writes it.
//
// Tables: quota_accounts (one row per principal "p:NAME" or user "u:[ISSUER,SUB]": the lock
// admissions take, and the token bucket), quota_holds (one row per admitted call and account,
// naming the replica that holds it) and quota_cpu (CPU-seconds per account in slots of a
// hundredth of the window). An admission is one transaction: it locks the call's account rows
// in key order (two replicas admitting the same principal and user never deadlock), then
// reads the holds, the bucket and the CPU in a new statement (READ COMMITTED: one that sees
// what the lock's previous owner committed), then writes the hold and the token. Times are
// the database's clock_timestamp(), never two machines' clocks compared.
//
// A call none of whose accounts sets a quota (only the fallback `concurrent`, this replica's
// workers and queue) is counted in memory, per replica, at no round trip.
//
// The database away: an admission fails ("storage_unavailable": the call is refused, never
// admitted unaccounted); a release or CPU charge is kept in memory and written by the next
// admission or flush_pending() (the daemon's sweeper tick, its clean stop). The holds of a
// dead replica are removed by failover (release_dead_replicas, from server/replicas/replicas.cpp).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/quotas/quota_book.hpp"
#include "storage/pg_database.hpp"

namespace airlock::pipeline {

class PostgresQuotaBook : public pipeline::QuotaBook, public std::enable_shared_from_this<PostgresQuotaBook> {
 public:
  struct Options {
    // false: admissions and CPU charges commit with synchronous_commit off; a database crash
    // may then forget the last few hundred ms of them (an undercount). Releases are always
    // synchronous. docs/performance.md, "Quotas on PostgreSQL", says what the daemon uses and why.
    bool synchronous_commit = true;
    // Connections, taken in turn: one replica's admissions would otherwise wait for each
    // other's round trips and commits (several commits share one WAL flush).
    int connections = 4;
  };
  // Connects (connections of its own: admissions never wait behind the invocation store's
  // statements) and creates the tables when missing. Holds it admits name `replica`.
  static Result<std::shared_ptr<PostgresQuotaBook>> open(const storage::pg::Database::Location& location,
                                                         std::string replica, Options options);

  pipeline::QuotaAdmission admit(const policy::QuotasConfig& quotas, const std::string& principal,
                                 const std::string& user) override;
  void charge_cpu(const policy::QuotasConfig& quotas, const std::string& principal, const std::string& user,
                  double cpu_seconds) override;
  std::uint32_t in_flight(const std::string& principal, const std::string& user = {}) override;

  // Writes the releases and charges kept while the database was away; the first failure.
  Status flush_pending();
  // Removes the holds of replicas that have no row in `replicas` (dead, removed by failover,
  // or stopped with a release unwritten); how many.
  Result<int> release_dead_replicas();

 private:
  PostgresQuotaBook(std::vector<std::unique_ptr<storage::pg::Database>> dbs, std::string replica, Options options)
      : dbs_(std::move(dbs)), replica_(std::move(replica)), options_(options) {}
  storage::pg::Database& db() { return *dbs_[next_db_++ % dbs_.size()]; }
  struct Account;  // one locked account row as the admission read it
  struct Charge {
    std::string holder;
    long long slot_ms;
    double seconds;
  };
  Result<std::vector<Account>> lock_and_read(storage::pg::Database::Tx& tx, const std::vector<std::string>& holders);
  Status write(const std::string& step, const std::string& sql, const storage::pg::Params& params, bool relaxed);
  Status write_release(const std::string& hold_id);
  Status write_charge(const Charge& charge);
  void release(const std::string& hold_id);

  std::vector<std::unique_ptr<storage::pg::Database>> dbs_;
  // Calls whose accounts set no quota at all: only this replica's capacity bounds them.
  std::shared_ptr<pipeline::MemoryQuotaBook> local_ = pipeline::MemoryQuotaBook::create();
  std::atomic<std::size_t> next_db_{0};
  const std::string replica_;
  const Options options_;
  std::mutex pending_mu_;  // releases and charges the database did not take, in order
  std::vector<std::string> pending_releases_;
  std::vector<Charge> pending_charges_;
};

}  // namespace airlock::pipeline
