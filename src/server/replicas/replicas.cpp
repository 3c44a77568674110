#include "server/replicas/replicas.hpp"

#include <unistd.h>

#include <climits>

namespace airlock::server {
namespace {

using Clock = std::chrono::steady_clock;

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "(unknown)";
  return name;
}

constexpr const char* kRegister =
    "INSERT INTO replicas (id, host, pid, started_at, heartbeat_at, address)"
    " VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp(), $4)"
    " ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp(), address = $4";

}  // namespace

Result<std::unique_ptr<ReplicaRegistry>> ReplicaRegistry::join(const storage::pg::Database::Location& location,
                                                               PostgresInvocationStore& store, Options options,
                                                               Hooks hooks) {
  auto db = storage::pg::Database::open(location, "the state database (replicas)");
  if (!db) return db.error();
  // No address yet: the port is bound after this (advertise()).
  auto joined = (*db)->exec("register replica " + store.replica(), kRegister,
                            {store.replica(), host_name(), std::to_string(::getpid()), std::nullopt});
  if (!joined) return joined.error();
  std::unique_ptr<ReplicaRegistry> registry(new ReplicaRegistry(std::move(*db), store, options, std::move(hooks)));
  registry->healthy_since_ = Clock::now();
  return registry;
}

Status ReplicaRegistry::register_row(const std::string& step) {
  std::optional<std::string> address;
  {
    std::lock_guard lock(address_mu_);
    if (!address_.empty()) address = address_;
  }
  auto done = db_->exec(step, kRegister, {store_.replica(), host_name(), std::to_string(::getpid()), address});
  if (!done) return done.error();
  return {};
}

Status ReplicaRegistry::advertise(const std::string& address) {
  {
    std::lock_guard lock(address_mu_);
    address_ = address;
  }
  return register_row("advertise replica " + store_.replica() + " at " + address);
}

ReplicaRegistry::~ReplicaRegistry() { stop(); }

void ReplicaRegistry::start() { thread_ = std::thread([this] { loop(); }); }

void ReplicaRegistry::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (auto flushed = store_.flush_pending(); !flushed)
    hooks_.log("replica " + store_.replica() + ": " + flushed.error().message);
  if (auto left = db_->exec("remove replica " + store_.replica(), "DELETE FROM replicas WHERE id = $1",
                            {store_.replica()});
      !left)
    hooks_.log("replica " + store_.replica() + ": " + left.error().message +
               " (the others will take it for dead after storage.failoverAfter)");
}

void ReplicaRegistry::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    round();
    lock.lock();
    wake_.wait_for(lock, options_.heartbeat_interval, [this] { return stopping_; });
  }
}

std::optional<std::string> ReplicaRegistry::storage_problem() const {
  std::lock_guard lock(problem_mu_);
  return problem_;
}

void ReplicaRegistry::round() {
  auto beat = heartbeat();
  {
    std::lock_guard lock(problem_mu_);
    problem_ = beat ? std::nullopt : std::optional<std::string>(beat.error().message);
  }
  if (!beat) {
    healthy_since_.reset();
    if (!reported_outage_) hooks_.log("replica " + store_.replica() + ": heartbeat failed: " + beat.error().message);
    reported_outage_ = true;
    return;
  }
  reported_outage_ = false;
  if (auto flushed = store_.flush_pending(); !flushed)
    hooks_.log("replica " + store_.replica() + ": " + flushed.error().message);
  const auto now = Clock::now();
  if (!healthy_since_) healthy_since_ = now;
  if (now - *healthy_since_ < options_.failover_after) return;
  remove_dead();
  abort_orphans();
  if (hooks_.after_failover) hooks_.after_failover();
}

// A row that is gone was taken for dead by another replica (this one's heartbeat failed for
// longer than failoverAfter): its running calls were recorded as aborted. It registers again.
Status ReplicaRegistry::heartbeat() {
  auto beat = db_->exec("heartbeat", "UPDATE replicas SET heartbeat_at = clock_timestamp() WHERE id = $1",
                        {store_.replica()});
  if (!beat) return beat.error();
  if (std::string(PQcmdTuples(beat->result.get())) != "0") return {};
  hooks_.log("replica " + store_.replica() +
             ": another replica took this one for dead (no heartbeat for longer than storage.failoverAfter) "
             "and recorded its running invocations as aborted; registering again");
  return register_row("register replica " + store_.replica());
}

void ReplicaRegistry::remove_dead() {
  auto dead = db_->exec("remove dead replicas",
                        "DELETE FROM replicas WHERE id <> $1"
                        " AND heartbeat_at < clock_timestamp() - $2::bigint * interval '1 millisecond'"
                        " RETURNING id, host, pid, extract(epoch FROM clock_timestamp() - heartbeat_at)::bigint",
                        {store_.replica(), std::to_string(options_.failover_after.count())});
  if (!dead) {
    hooks_.log("replica " + store_.replica() + ": " + dead.error().message);
    return;
  }
  for (int i = 0; i < dead->rows(); ++i)
    hooks_.log("replica " + dead->value(i, 0) + " (host " + dead->value(i, 1) + ", pid " + dead->value(i, 2) +
               ") has had no heartbeat for " + dead->value(i, 3) +
               " s (storage.failoverAfter): taking over its running invocations");
}

void ReplicaRegistry::abort_orphans() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    auto orphan = store_.abort_orphan(hooks_.record, hooks_.response);
    if (!orphan) {
      hooks_.log("replica " + store_.replica() + ": aborting a dead replica's invocation: " + orphan.error().message);
      return;
    }
    if (!*orphan) return;
    hooks_.aborted(**orphan);
  }
}

}  // namespace airlock::server
