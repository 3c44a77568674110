#include "server/sessions/session_store_pg.hpp"

#include "storage/pg_schema.hpp"

namespace airlock::server {
namespace {

using storage::pg::Params;
using storage::pg::Reply;

constexpr const char* kPgSchema = R"sql(
CREATE TABLE IF NOT EXISTS sessions(
  id text PRIMARY KEY, replica text NOT NULL, template text NOT NULL,
  principal text NOT NULL, subject_issuer text NOT NULL, subject_sub text NOT NULL,
  created_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_replica ON sessions (replica);
)sql";

// The columns every read selects, in this order (location_of reads them).
constexpr const char* kPgColumns =
    "s.id, s.template, s.principal, s.subject_issuer, s.subject_sub, s.created_ms, s.replica, r.address";

PostgresSessionStore::Location location_of(const Reply& rows, int i) {
  PostgresSessionStore::Location l;
  l.row = {rows.value(i, 0), rows.value(i, 1), rows.value(i, 2), rows.value(i, 3), rows.value(i, 4),
           std::stoll(rows.value(i, 5))};
  l.replica = rows.value(i, 6);
  l.address = rows.is_null(i, 7) ? "" : rows.value(i, 7);
  return l;
}

}  // namespace

Result<std::unique_ptr<PostgresSessionStore>> PostgresSessionStore::open(const storage::pg::Database::Location& location,
                                                                         std::string replica) {
  auto db = storage::pg::Database::open(location, "the state database (sessions)");
  if (!db) return db.error();
  if (auto made = storage::pg::create_schema(**db, "creating the sessions table", kPgSchema); !made) return made.error();
  return std::unique_ptr<PostgresSessionStore>(new PostgresSessionStore(std::move(*db), std::move(replica)));
}

Status PostgresSessionStore::add(const SessionRow& row) {
  auto done = db_->exec("record session " + row.id,
                        "INSERT INTO sessions (id, replica, template, principal, subject_issuer, subject_sub, created_ms)"
                        " VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        {row.id, replica_, row.template_name, row.principal, row.issuer, row.sub,
                         std::to_string(row.created_ms)});
  if (!done) return done.error();
  return {};
}

Status PostgresSessionStore::remove(const std::string& id) {
  auto done = db_->exec("remove session " + id, "DELETE FROM sessions WHERE id = $1 AND replica = $2", {id, replica_});
  std::lock_guard lock(pending_mu_);
  if (done) {
    pending_removals_.erase(id);
    return {};
  }
  if (done.error().code == "storage_unavailable") pending_removals_.insert(id);
  return done.error();
}

Status PostgresSessionStore::flush_pending() {
  std::set<std::string> ids;
  {
    std::lock_guard lock(pending_mu_);
    ids = pending_removals_;
  }
  for (const auto& id : ids)
    if (auto removed = remove(id); !removed) return removed;
  return {};
}

Result<std::vector<SessionRow>> PostgresSessionStore::all() {
  auto rows = db_->exec("read this replica's sessions",
                        "SELECT id, template, principal, subject_issuer, subject_sub, created_ms FROM sessions"
                        " WHERE replica = $1",
                        {replica_});
  if (!rows) return rows.error();
  std::vector<SessionRow> out;
  for (int i = 0; i < rows->rows(); ++i)
    out.push_back({rows->value(i, 0), rows->value(i, 1), rows->value(i, 2), rows->value(i, 3), rows->value(i, 4),
                   std::stoll(rows->value(i, 5))});
  return out;
}

Result<std::optional<PostgresSessionStore::Location>> PostgresSessionStore::locate(const std::string& id) {
  auto rows = db_->exec("locate session " + id,
                        std::string("SELECT ") + kPgColumns +
                            " FROM sessions s LEFT JOIN replicas r ON r.id = s.replica WHERE s.id = $1",
                        {id});
  if (!rows) return rows.error();
  if (rows->rows() == 0) return std::optional<Location>();
  return std::optional<Location>(location_of(*rows, 0));
}

Result<std::vector<PostgresSessionStore::Location>> PostgresSessionStore::held_elsewhere(
    const std::optional<SessionRow>& owner) {
  std::string sql = std::string("SELECT ") + kPgColumns +
                    " FROM sessions s JOIN replicas r ON r.id = s.replica"
                    " WHERE s.replica <> $1 AND r.address IS NOT NULL";
  Params params{replica_};
  if (owner) {
    sql += " AND s.principal = $2 AND s.subject_issuer = $3 AND s.subject_sub = $4";
    params.insert(params.end(), {owner->principal, owner->issuer, owner->sub});
  }
  auto rows = db_->exec("list sessions held by other replicas", sql + " ORDER BY s.created_ms, s.id", params);
  if (!rows) return rows.error();
  std::vector<Location> out;
  for (int i = 0; i < rows->rows(); ++i) out.push_back(location_of(*rows, i));
  return out;
}

Result<std::optional<PostgresSessionStore::Location>> PostgresSessionStore::take_orphan(
    const std::function<Status(const Location&)>& record) {
  std::optional<Location> taken;
  Status done = db_->transaction("take a dead replica's session", [&](storage::pg::Database::Tx& tx) -> Status {
    taken.reset();
    // SKIP LOCKED: a row another replica is taking now is its, not ours.
    auto rows = tx.exec("find a dead replica's session",
                        std::string("SELECT ") + kPgColumns +
                            " FROM sessions s LEFT JOIN replicas r ON r.id = s.replica WHERE r.id IS NULL"
                            " ORDER BY s.created_ms LIMIT 1 FOR UPDATE OF s SKIP LOCKED");
    if (!rows) return rows.error();
    if (rows->rows() == 0) return {};
    Location orphan = location_of(*rows, 0);
    if (auto recorded = record(orphan); !recorded) return recorded;
    auto removed = tx.exec("remove session " + orphan.row.id, "DELETE FROM sessions WHERE id = $1", {orphan.row.id});
    if (!removed) return removed.error();
    taken = std::move(orphan);
    return {};
  });
  if (!done) return done.error();
  return taken;
}

Result<std::set<std::string>> PostgresSessionStore::live_replicas() {
  auto rows = db_->exec("list the live replicas", "SELECT id FROM replicas");
  if (!rows) return rows.error();
  std::set<std::string> ids;
  for (int i = 0; i < rows->rows(); ++i) ids.insert(rows->value(i, 0));
  return ids;
}

}  // namespace airlock::server
