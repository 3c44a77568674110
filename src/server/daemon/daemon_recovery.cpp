// What a dead daemon or replica left: the recovery at start (stale cgroups, unfinished
// invocations, leftover leases), and on PostgreSQL the replicas' failover and shared quota book.
#include "server/daemon/daemon_state.hpp"

#include <iostream>

#include "creds/broker.hpp"
#include "pipeline/stages/audit_record.hpp"
#include "pipeline/storage_locations.hpp"
#include "sandbox/cgroup.hpp"
#include "server/sessions/session_failover.hpp"

namespace airlock::server {

namespace {

// The stored response of an invocation whose daemon died while it ran.
nlohmann::json aborted_response(const std::string& id, const std::string& tool, const std::string& why) {
  return {{"id", id},
          {"tool", tool},
          {"status", "error"},
          {"principal", ""},
          {"error", {{"kind", "aborted"}, {"message", why}}}};
}

}  // namespace

// Sandboxes of a killed predecessor died with it (PDEATHSIG, pid namespaces); their cgroups
// and its unfinished invocations are what is left. On PostgreSQL the running rows are other
// live replicas' too: a dead replica's are aborted by failover (ReplicaRegistry), not here.
Status Daemon::State::recover() {
  recovery.stale_cgroups = sandbox::remove_stale_cgroups();
  auto sessions_aborted = record_aborted_sessions(*session_store, *audit);  // this host's, also on PostgreSQL
  if (!sessions_aborted) return sessions_aborted.error();
  recovery.aborted_sessions = static_cast<int>(sessions_aborted->size());
  aborted_sessions = std::move(*sessions_aborted);
  if (pg_store) return {};
  for (const auto& r : store->running()) {
    if (auto s = pipeline::record_aborted(*audit, r.id, r.tool); !s) return s.error();
    (void)store->finish(r.id, "error", aborted_response(r.id, r.tool, "the daemon stopped while it ran"));
    ++recovery.aborted_invocations;
  }
  return {};
}

// Credentials a killed predecessor leased and never revoked: revoked before anything runs.
void Daemon::State::revoke_leftover_leases(const policy::Config& cfg) {
  creds::Broker broker(*leases, pipeline_deps.make_providers(cfg));
  auto r = broker.revoke_outstanding();
  recovery.revoked_leases = r.revoked;
  recovery.lease_errors = std::move(r.errors);
}

// On PostgreSQL: the credentials of the sessions recover() recorded aborted (this host's),
// by their invocation, the session's id; the shared table's other outstanding leases may be
// live replicas'. (On SQLite revoke_leftover_leases revokes them with every other.)
void Daemon::State::revoke_aborted_session_leases(const policy::Config& cfg) {
  if (aborted_sessions.empty()) return;
  creds::Broker broker(*leases, pipeline_deps.make_providers(cfg));
  for (const auto& id : aborted_sessions) {
    auto r = broker.revoke_of_invocation(id);
    recovery.revoked_leases += r.revoked;
    recovery.lease_errors.insert(recovery.lease_errors.end(), r.errors.begin(), r.errors.end());
  }
}

// The sessions recover() recorded aborted ran on this host's backends: what a backend keeps
// outside this host (a Kubernetes tier's session pods, labelled with the session's id) is
// deleted now that the backends are made, rather than when its expiry (the session's whole
// life) comes. A cluster out of reach is said, and its garbage collector deletes them later.
void Daemon::State::abandon_aborted_sessions() {
  for (const auto& id : aborted_sessions)
    if (auto removed = backends->abandon(id); !removed)
      std::cerr << "airlock: aborted session " << id << ": its pods: " << removed.error().message << "\n";
}

// Registers this replica before anything runs; its thread (heartbeats, failover) starts with
// the daemon. What failover does with a dead replica's running invocation is what recover()
// does at a restart, plus its credentials and pods (that replica cannot do it any more).
Status Daemon::State::join_replicas(const policy::Config& cfg) {
  if (!pg_store) return {};
  ReplicaRegistry::Options timing{cfg.storage.heartbeat_interval, cfg.storage.failover_after};
  const std::string after = std::to_string(cfg.storage.failover_after.count()) + " ms";
  ReplicaRegistry::Hooks hooks;
  hooks.record = [this](const ReplicaRegistry::Orphan& o) { return pipeline::record_aborted(*audit, o.id, o.tool); };
  hooks.response = [after](const ReplicaRegistry::Orphan& o) {
    auto response = aborted_response(o.id, o.tool,
                                     "the replica running it (" + o.replica + ") stopped: no heartbeat for " + after);
    response["principal"] = o.owner.principal;  // its caller still finds it
    if (!o.owner.sub.empty()) response["subject"] = {{"issuer", o.owner.issuer}, {"sub", o.owner.sub}};
    return response;
  };
  hooks.aborted = [this](const ReplicaRegistry::Orphan& o) { abandoned(o); };
  hooks.after_failover = [this] {  // dead replicas' sessions; dead (or cleanly stopped) ones' quota places
    take_over_sessions();
    auto released = pg_quotas->release_dead_replicas();
    if (!released) std::cerr << "airlock: failover: " << released.error().message << "\n";
    else if (*released > 0) std::cerr << "airlock: failover: released " << *released << " quota place(s) of dead replicas\n";
  };
  hooks.log = [](const std::string& line) { std::cerr << "airlock: " << line << "\n"; };
  auto joined = ReplicaRegistry::join(pipeline::state_location(cfg.storage).postgres, *pg_store, timing,
                                      std::move(hooks));
  if (!joined) return joined.error();
  replicas = std::move(*joined);
  std::cerr << "airlock: replica " << pg_store->replica() << " joined (heartbeat every "
            << cfg.storage.heartbeat_interval.count() << " ms, failover after " << after << ")\n";
  return {};
}

// Quotas and the fair queue (docs/daemon.md): one book for the daemon's life, over reloads.
// On PostgreSQL the replicas' book, shared (pipeline/quotas/quota_book_pg.hpp); else this daemon's.
Status Daemon::State::open_quotas(const policy::Config& cfg) {
  if (!pg_store) {
    pipeline_deps.quotas = pipeline::MemoryQuotaBook::create();
    return {};
  }
  // Admissions and CPU charges with synchronous_commit off: a database crash may forget the
  // last few hundred ms of them, an undercount, for one fsync less per call (docs/performance.md,
  // "Quotas on PostgreSQL"). Releases stay synchronous.
  pipeline::PostgresQuotaBook::Options relaxed;
  relaxed.synchronous_commit = false;
  auto book = pipeline::PostgresQuotaBook::open(pipeline::state_location(cfg.storage).postgres, pg_store->replica(), relaxed);
  if (!book) return book.error();
  pg_quotas = *book;
  pipeline_deps.quotas = pg_quotas;
  return {};
}

// A dead replica's invocation, recorded as aborted: its credentials revoked (the value died
// with the replica: each provider ends what it can without it, as at a restart) and its pods
// deleted.
void Daemon::State::abandoned(const ReplicaRegistry::Orphan& orphan) {
  metrics.count("airlock_failover_aborted_total");
  creds::Broker broker(*leases, pipeline_deps.make_providers(config()));
  const auto revoked = broker.revoke_of_invocation(orphan.id);
  std::string problems;
  for (const auto& e : revoked.errors) problems += " " + e + ";";
  if (auto removed = backends->abandon(orphan.id); !removed) problems += " pods: " + removed.error().message + ";";
  std::cerr << "airlock: failover: invocation " << orphan.id << " (" << orphan.tool << ") of replica " << orphan.replica
            << " recorded as aborted; revoked " << revoked.revoked << " credential lease(s)"
            << (problems.empty() ? "" : "; problems:" + problems) << "\n";
}

// A dead replica's sessions died with it: each is recorded as ended, "aborted" (exactly once,
// whichever replica takes it), and its credential leases (leased under the session's id) are
// revoked, and its pods (a Kubernetes tier's) deleted. Then the forwards under way to replicas that are gone are cut.
void Daemon::State::take_over_sessions() {
  if (!pg_sessions) return;
  auto taken = record_orphaned_sessions(*pg_sessions, *audit, [this](const PostgresSessionStore::Location& l) {
    metrics.count("airlock_failover_sessions_aborted_total");
    creds::Broker broker(*leases, pipeline_deps.make_providers(config()));
    const auto revoked = broker.revoke_of_invocation(l.row.id);
    std::string problems;
    for (const auto& e : revoked.errors) problems += " " + e + ";";
    if (auto removed = backends->abandon(l.row.id); !removed) problems += " pods: " + removed.error().message + ";";
    std::cerr << "airlock: failover: session " << l.row.id << " (" << l.row.template_name << ") of replica "
              << l.replica << " recorded as ended, aborted; revoked " << revoked.revoked << " credential lease(s)"
              << (problems.empty() ? "" : "; problems:" + problems) << "\n";
  });
  if (!taken) std::cerr << "airlock: failover: sessions: " << taken.error().message << "\n";
  if (auto live = pg_sessions->live_replicas(); live && session_forwarder) session_forwarder->cut_dead(*live);
}

}  // namespace airlock::server
