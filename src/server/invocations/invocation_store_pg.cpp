#include "server/invocations/invocation_store_pg.hpp"

#include "audit/invocation_record.hpp"

namespace airlock::server {
namespace {

using detail::now_ms;
using storage::pg::Params;

// Under a transaction-scoped advisory lock: CREATE TABLE IF NOT EXISTS from two replicas
// starting at once can otherwise both try to create the table (a unique violation in
// pg_type). The key pair is the audit store's first number and one of our own.
constexpr const char* kSchema = R"sql(
SELECT pg_advisory_xact_lock(1095912523, 21);
CREATE TABLE IF NOT EXISTS replicas(
  id text PRIMARY KEY, host text NOT NULL, pid integer NOT NULL,
  started_at timestamptz NOT NULL, heartbeat_at timestamptz NOT NULL);
ALTER TABLE replicas ADD COLUMN IF NOT EXISTS address text;
CREATE TABLE IF NOT EXISTS invocations(
  id text PRIMARY KEY, tool text NOT NULL, status text NOT NULL, response text,
  started_ms bigint NOT NULL, finished_ms bigint,
  principal text, subject_issuer text, subject_sub text, verdict text, error_kind text,
  replica text);
CREATE INDEX IF NOT EXISTS invocations_started ON invocations (started_ms);
CREATE INDEX IF NOT EXISTS invocations_tool ON invocations (tool, started_ms);
CREATE INDEX IF NOT EXISTS invocations_status ON invocations (status, started_ms);
CREATE INDEX IF NOT EXISTS invocations_principal ON invocations (principal, started_ms);
CREATE INDEX IF NOT EXISTS invocations_subject ON invocations (subject_sub, started_ms);
CREATE INDEX IF NOT EXISTS invocations_running ON invocations (replica) WHERE status = 'running';
)sql";

// A name from a request as PostgreSQL accepts text: valid UTF-8 (a tool name in a URL may
// be anything; its row must still be written, the pipeline then refuses the call).
std::string utf8(const std::string& s) {
  const auto dumped = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(dumped).get<std::string>();
}

std::string dollar(std::size_t n) { return "$" + std::to_string(n); }

std::optional<std::string> maybe(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

}  // namespace

Result<std::unique_ptr<PostgresInvocationStore>> PostgresInvocationStore::open(
    const storage::pg::Database::Location& location, std::string replica) {
  auto db = storage::pg::Database::open(location, "the state database");
  if (!db) return db.error();
  if (auto made = (*db)->exec("create the invocation tables", kSchema); !made) return made.error();
  if (replica.empty()) replica = audit::new_invocation_id();
  return std::unique_ptr<PostgresInvocationStore>(new PostgresInvocationStore(std::move(*db), std::move(replica)));
}

Status PostgresInvocationStore::begin(const std::string& id, const std::string& tool, const Owner& owner) {
  auto done = db_->exec("record invocation " + id,
                        "INSERT INTO invocations (id, tool, status, started_ms, principal, subject_issuer,"
                        " subject_sub, replica) VALUES ($1, $2, 'running', $3, $4, $5, $6, $7)",
                        {id, utf8(tool), std::to_string(now_ms()), utf8(owner.principal), utf8(owner.issuer),
                         utf8(owner.sub), replica_});
  if (!done) return done.error();
  return {};
}

Status PostgresInvocationStore::finish(const std::string& id, const std::string& status,
                                       const nlohmann::json& response) {
  std::lock_guard lock(finish_mu_);
  Status written = write_finish(id, status, response);
  if (written) pending_.erase(id);
  else if (written.error().code == "storage_unavailable") pending_[id] = {status, response};
  return written;
}

Status PostgresInvocationStore::flush_pending() {
  std::lock_guard lock(finish_mu_);
  for (auto it = pending_.begin(); it != pending_.end(); it = pending_.erase(it))
    if (Status s = write_finish(it->first, it->second.first, it->second.second); !s) return s;
  return {};
}

// A row resumed as "running" (an approved call) is this replica's from now on.
Status PostgresInvocationStore::write_finish(const std::string& id, const std::string& status,
                                             const nlohmann::json& response) {
  const auto c = detail::response_columns(response);
  auto done = db_->exec(
      "update invocation " + id,
      "UPDATE invocations SET status = $2, response = $3, finished_ms = $4,"
      " principal = COALESCE($5, principal), subject_issuer = COALESCE($6, subject_issuer),"
      " subject_sub = COALESCE($7, subject_sub), verdict = $8, error_kind = $9,"
      " replica = CASE WHEN $2 = 'running' THEN $10 ELSE replica END WHERE id = $1",
      {id, status, response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
       std::to_string(now_ms()), c.principal, c.subject_issuer, c.subject_sub, maybe(c.verdict),
       maybe(c.error_kind), replica_});
  if (!done) return done.error();
  return {};
}

std::optional<nlohmann::json> PostgresInvocationStore::get(const std::string& id) {
  auto rows = db_->exec("load invocation " + id, "SELECT status, response, tool FROM invocations WHERE id = $1",
                        {utf8(id)});
  if (!rows || rows->rows() == 0) return std::nullopt;
  if (rows->is_null(0, 1))
    return nlohmann::json{{"id", id}, {"tool", rows->value(0, 2)}, {"status", rows->value(0, 0)}};
  return nlohmann::json::parse(rows->value(0, 1), nullptr, false);
}

std::optional<InvocationStore::Owner> PostgresInvocationStore::owner(const std::string& id) {
  auto rows = db_->exec("load the owner of invocation " + id,
                        "SELECT principal, subject_issuer, subject_sub FROM invocations WHERE id = $1", {utf8(id)});
  if (!rows || rows->rows() == 0) return std::nullopt;
  return Owner{rows->value(0, 0), rows->value(0, 1), rows->value(0, 2)};
}

std::optional<std::int64_t> PostgresInvocationStore::started_ms(const std::string& id) {
  auto rows = db_->exec("load when invocation " + id + " began",
                        "SELECT started_ms FROM invocations WHERE id = $1", {utf8(id)});
  if (!rows || rows->rows() == 0 || rows->is_null(0, 0)) return std::nullopt;
  return std::stoll(rows->value(0, 0));
}

Result<nlohmann::json> PostgresInvocationStore::list(const Query& q) {
  std::vector<std::string> where_params;
  const std::string where = detail::where_clause(q, where_params, dollar);
  Params params;
  for (auto& p : where_params) params.emplace_back(utf8(p));
  params.emplace_back(std::to_string(q.limit));
  const std::string sql =
      "SELECT id, tool, status, principal, subject_issuer, subject_sub, verdict, error_kind, started_ms,"
      " finished_ms FROM invocations" + where + " ORDER BY started_ms DESC, id COLLATE \"C\" DESC LIMIT " +
      dollar(params.size());
  auto rows = db_->exec("list invocations", sql, params);
  if (!rows) return rows.error();
  nlohmann::json out = nlohmann::json::array();
  for (int i = 0; i < rows->rows(); ++i) {
    detail::ListedRow row{rows->value(i, 0), rows->value(i, 1), rows->value(i, 2), rows->value(i, 3),
                          rows->value(i, 4), rows->value(i, 5), rows->value(i, 6), rows->value(i, 7),
                          std::stoll(rows->value(i, 8)), std::nullopt};
    if (!rows->is_null(i, 9)) row.finished_ms = std::stoll(rows->value(i, 9));
    out.push_back(detail::summary(row));
  }
  return out;
}

std::vector<InvocationStore::Running> PostgresInvocationStore::running() {
  std::vector<Running> out;
  auto rows = db_->exec("list running invocations", "SELECT id, tool FROM invocations WHERE status = 'running'");
  if (!rows) return out;
  for (int i = 0; i < rows->rows(); ++i) out.push_back({rows->value(i, 0), rows->value(i, 1)});
  return out;
}

Result<std::optional<PostgresInvocationStore::Orphan>> PostgresInvocationStore::abort_orphan(
    const std::function<Status(const Orphan&)>& record, const std::function<nlohmann::json(const Orphan&)>& response) {
  std::optional<Orphan> claimed;
  Status done = db_->transaction("abort an orphaned invocation", [&](storage::pg::Database::Tx& tx) -> Status {
    claimed.reset();
    // SKIP LOCKED: a row another replica is aborting now is its, not ours.
    auto rows = tx.exec("find an orphaned invocation",
                        "SELECT id, tool, replica, principal, subject_issuer, subject_sub FROM invocations i"
                        " WHERE status = 'running'"
                        " AND replica IS NOT NULL AND NOT EXISTS (SELECT 1 FROM replicas r WHERE r.id = i.replica)"
                        " ORDER BY started_ms LIMIT 1 FOR UPDATE OF i SKIP LOCKED");
    if (!rows) return rows.error();
    if (rows->rows() == 0) return {};
    Orphan orphan{rows->value(0, 0), rows->value(0, 1), rows->value(0, 2),
                  {rows->value(0, 3), rows->value(0, 4), rows->value(0, 5)}};
    if (auto s = record(orphan); !s) return s;
    const nlohmann::json answer = response(orphan);
    auto updated = tx.exec("record invocation " + orphan.id + " as aborted",
                           "UPDATE invocations SET status = 'error', response = $2, finished_ms = $3,"
                           " verdict = NULL, error_kind = $4 WHERE id = $1",
                           {orphan.id, answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                            std::to_string(now_ms()), maybe(detail::response_columns(answer).error_kind)});
    if (!updated) return updated.error();
    claimed = std::move(orphan);
    return {};
  });
  if (!done) return done.error();
  return claimed;
}

}  // namespace airlock::server
