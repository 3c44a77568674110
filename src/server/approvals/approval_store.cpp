#include "server/approvals/approval_store.hpp"

#include <sqlite3.h>

#include <map>
#include <mutex>

#include "creds/sealing_key.hpp"
#include "storage/sqlite_state.hpp"
#include "storage/state_location.hpp"

namespace airlock::server {
namespace {

using Statement = storage::SqliteStatement;

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS approvals ("
    " id TEXT PRIMARY KEY, invocation_id TEXT NOT NULL UNIQUE, tool TEXT NOT NULL,"
    " config_version TEXT NOT NULL, arguments_sha256 TEXT NOT NULL, approvers_required INTEGER NOT NULL,"
    " requester_principal TEXT NOT NULL, requester_issuer TEXT NOT NULL, requester_sub TEXT NOT NULL,"
    " requested_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL, state TEXT NOT NULL,"
    " decided_ms INTEGER NOT NULL DEFAULT 0, resumed INTEGER NOT NULL DEFAULT 0, invocation TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS approvals_state ON approvals (state, expires_ms);"
    "CREATE TABLE IF NOT EXISTS approval_decisions ("
    " approval_id TEXT NOT NULL, approver_issuer TEXT NOT NULL, approver_sub TEXT NOT NULL,"
    " relayed_by TEXT NOT NULL, verdict TEXT NOT NULL, reason TEXT NOT NULL, at_ms INTEGER NOT NULL,"
    " PRIMARY KEY (approval_id, approver_issuer, approver_sub))";

#define AIRLOCK_ARGUMENTS(doc) "CAST(json_extract(" doc ", '$.arguments') AS BLOB)"

// Databases made before these columns: added, and the previews of rows kept in plain filled
// from their invocations (seal_plain_rows then seals both).
Status add_later_columns(sqlite3* db) {
  for (const char* column : {"arguments_preview TEXT", "arguments_bytes INTEGER",
                             "decision_basis TEXT NOT NULL DEFAULT ''", "user_token TEXT"}) {
    const std::string sql = std::string("ALTER TABLE approvals ADD COLUMN ") + column;
    char* message = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string m = message ? message : "unknown error";
      sqlite3_free(message);
      if (m.find("duplicate column name") == std::string::npos)
        return Error::make("storage", "state database (approvals): adding a column: " + m);
    }
  }
  const char* fill = "UPDATE approvals SET arguments_preview = CAST(substr(" AIRLOCK_ARGUMENTS("invocation")
                     ", 1, 256) AS TEXT), arguments_bytes = length(" AIRLOCK_ARGUMENTS("invocation")
                     ") WHERE arguments_bytes IS NULL AND substr(invocation, 1, 1) = '{'";
  if (sqlite3_exec(db, fill, nullptr, nullptr, nullptr) != SQLITE_OK)
    return Error::make("storage", std::string("state database (approvals): ") + sqlite3_errmsg(db));
  return {};
}
#undef AIRLOCK_ARGUMENTS

constexpr const char* kColumns =
    "SELECT id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
    " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state,"
    " decided_ms, resumed, arguments_preview, arguments_bytes, invocation, decision_basis, user_token FROM approvals ";

ApprovalRecord row_of(const Statement& s, const creds::SealingKey& key, bool with_invocation) {
  ApprovalRecord r;
  r.id = s.text(0);
  r.invocation_id = s.text(1);
  r.tool = s.text(2);
  r.config_version = s.text(3);
  r.arguments_sha256 = s.text(4);
  r.approvers_required = static_cast<std::uint32_t>(s.integer(5));
  r.requester_principal = s.text(6);
  r.requester_issuer = s.text(7);
  r.requester_sub = s.text(8);
  r.requested_ms = s.integer(9);
  r.expires_ms = s.integer(10);
  r.state = s.text(11);
  r.decided_ms = s.integer(12);
  r.resumed = s.integer(13) != 0;
  r.arguments_bytes = s.integer(15);
  r.decision_basis_sha256 = s.text(17);
  detail::open_columns(key, r, s.text(16), s.text(14), s.is_null(18) ? "" : s.text(18), with_invocation);
  return r;
}

// BEGIN IMMEDIATE ... COMMIT, rolled back unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { ok_ = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK; }
  ~Transaction() {
    if (ok_ && !done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  bool ok() const { return ok_; }
  bool commit() { return done_ = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK; }

 private:
  sqlite3* db_;
  bool ok_ = false, done_ = false;
};

// The SQLite store: one connection, one mutex, BEGIN IMMEDIATE transactions.
class SqliteApprovalStore final : public ApprovalStore {
 public:
  SqliteApprovalStore(sqlite3* db, Key key) : db_(db), key_(std::move(key)) {}
  ~SqliteApprovalStore() override { sqlite3_close(db_); }
  Status create(const ApprovalRecord& record) override;
  std::optional<ApprovalRecord> get(const std::string& id) override;
  std::optional<ApprovalRecord> by_invocation(const std::string& invocation_id) override;
  std::vector<ApprovalRecord> pending() override;
  Result<ApprovalRecord> decide(const std::string& id, const ApprovalDecision& decision,
                                std::int64_t now_ms) override;
  Result<ApprovalRecord> withdraw(const std::string& id, std::int64_t now_ms) override;
  std::vector<ApprovalRecord> expire_due(std::int64_t now_ms) override;
  std::vector<ApprovalRecord> approved_not_resumed() override;
  bool claim_resume(const std::string& id) override;
  Status forget_user_token(const std::string& id) override;
  std::size_t forget_spent_user_tokens() override;
  Status seal_plain_rows();

 private:
  std::optional<ApprovalRecord> load(const char* where, const std::string& key, bool with_invocation);
  std::vector<ApprovalDecision> decisions_of(const std::string& id);
  std::mutex mu_;
  sqlite3* db_;
  Key key_;
};

}  // namespace

std::size_t ApprovalRecord::approvals() const {
  std::size_t n = 0;
  for (const auto& d : decisions) n += d.verdict == "approve";
  return n;
}

Result<std::unique_ptr<ApprovalStore>> ApprovalStore::open(const std::string& path, Key key) {
  if (!key) return Error::make("storage", "state database (approvals): no key to seal pending calls with");
  auto db = storage::open_sqlite_state(path, kSchema, "state database (approvals)");
  if (!db) return db.error();
  sqlite3* raw = db->release();
  auto store = std::make_unique<SqliteApprovalStore>(raw, std::move(key));  // owns it from here
  // A deleted token's or argument's bytes are overwritten, not left in a free page.
  if (sqlite3_exec(raw, "PRAGMA secure_delete = ON", nullptr, nullptr, nullptr) != SQLITE_OK)
    return storage::sqlite_error(raw, "", "state database (approvals): secure_delete");
  if (auto s = add_later_columns(raw); !s) return s.error();
  if (auto s = store->seal_plain_rows(); !s) return s.error();
  return std::unique_ptr<ApprovalStore>(std::move(store));
}

Result<std::unique_ptr<ApprovalStore>> ApprovalStore::open(const storage::StateLocation& location, Key key) {
  if (location.is_postgres()) return open_postgres_approval_store(location, std::move(key));
  return open(location.sqlite_path, std::move(key));
}

// Rows an older daemon kept in plain (their invocation a JSON document): sealed, in one
// transaction, before the store serves.
Status SqliteApprovalStore::seal_plain_rows() {
  std::lock_guard lock(mu_);
  Transaction tx(db_);
  if (!tx.ok()) return storage::sqlite_error(db_, "", "sealing older approvals");
  std::vector<ApprovalRecord> plain;
  {
    Statement s(db_, "SELECT id, invocation FROM approvals WHERE substr(invocation, 1, 1) = '{'");
    while (s.step_row()) {
      ApprovalRecord r;
      r.id = s.text(0);
      r.invocation = nlohmann::json::parse(s.text(1), nullptr, false);
      plain.push_back(std::move(r));
    }
  }
  for (const auto& r : plain) {
    auto sealed = detail::seal_columns(*key_, r);
    if (!sealed) return sealed.error();
    Statement up(db_, "UPDATE approvals SET invocation = ?, arguments_preview = ? WHERE id = ?");
    up.bind(1, sealed->invocation);
    up.bind(2, sealed->arguments_preview);
    up.bind(3, r.id);
    if (!up.step_done()) return storage::sqlite_error(db_, "", "sealing approval " + r.id);
  }
  if (!tx.commit()) return storage::sqlite_error(db_, "", "sealing older approvals");
  return {};
}

Status SqliteApprovalStore::create(const ApprovalRecord& r) {
  auto sealed = detail::seal_columns(*key_, r);
  if (!sealed) return sealed.error();
  std::lock_guard lock(mu_);
  Statement s(db_,
              "INSERT INTO approvals (id, invocation_id, tool, config_version, arguments_sha256,"
              " approvers_required, requester_principal, requester_issuer, requester_sub, requested_ms,"
              " expires_ms, state, invocation, decision_basis, arguments_preview, arguments_bytes, user_token)"
              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'pending', ?12, ?13, ?14, ?15, NULLIF(?16, ''))");
  s.bind(1, r.id);
  s.bind(2, r.invocation_id);
  s.bind(3, r.tool);
  s.bind(4, r.config_version);
  s.bind(5, r.arguments_sha256);
  s.bind(6, static_cast<std::int64_t>(r.approvers_required));
  s.bind(7, r.requester_principal);
  s.bind(8, r.requester_issuer);
  s.bind(9, r.requester_sub);
  s.bind(10, r.requested_ms);
  s.bind(11, r.expires_ms);
  s.bind(12, sealed->invocation);
  s.bind(13, r.decision_basis_sha256);
  s.bind(14, sealed->arguments_preview);
  s.bind(15, sealed->arguments_bytes);
  s.bind(16, sealed->user_token);
  if (!s.step_done()) return storage::sqlite_error(db_, "", "storing approval " + r.id);
  return {};
}

std::vector<ApprovalDecision> SqliteApprovalStore::decisions_of(const std::string& id) {
  Statement s(db_,
              "SELECT approver_issuer, approver_sub, relayed_by, verdict, reason, at_ms"
              " FROM approval_decisions WHERE approval_id = ? ORDER BY at_ms, rowid");
  s.bind(1, id);
  std::vector<ApprovalDecision> out;
  while (s.step_row()) out.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.integer(5)});
  return out;
}

std::optional<ApprovalRecord> SqliteApprovalStore::load(const char* where, const std::string& key, bool with_invocation) {
  Statement s(db_, (std::string(kColumns) + where).c_str());
  s.bind(1, key);
  if (!s.step_row()) return std::nullopt;
  ApprovalRecord r = row_of(s, *key_, with_invocation);
  r.decisions = decisions_of(r.id);
  return r;
}

std::optional<ApprovalRecord> SqliteApprovalStore::get(const std::string& id) {
  std::lock_guard lock(mu_);
  return load("WHERE id = ?", id, true);
}

std::optional<ApprovalRecord> SqliteApprovalStore::by_invocation(const std::string& invocation_id) {
  std::lock_guard lock(mu_);
  return load("WHERE invocation_id = ?", invocation_id, true);
}

std::vector<ApprovalRecord> SqliteApprovalStore::pending() {
  std::lock_guard lock(mu_);
  std::vector<ApprovalRecord> out;
  {
    // The arguments' preview and size are stored with the approval: no document is parsed here.
    Statement s(db_, (std::string(kColumns) + "WHERE state = 'pending' ORDER BY requested_ms, rowid").c_str());
    while (s.step_row()) out.push_back(row_of(s, *key_, false));
  }
  // The decisions of all of them at once: one query, not one per approval.
  Statement d(db_,
              "SELECT d.approval_id, d.approver_issuer, d.approver_sub, d.relayed_by, d.verdict, d.reason, d.at_ms"
              " FROM approval_decisions d JOIN approvals a ON a.id = d.approval_id WHERE a.state = 'pending'");
  std::map<std::string, std::vector<ApprovalDecision>> by_id;
  while (d.step_row())
    by_id[d.text(0)].push_back({d.text(1), d.text(2), d.text(3), d.text(4), d.text(5), d.integer(6)});
  for (auto& r : out)
    if (auto it = by_id.find(r.id); it != by_id.end()) r.decisions = std::move(it->second);
  return out;
}

Result<ApprovalRecord> SqliteApprovalStore::decide(const std::string& id, const ApprovalDecision& decision,
                                             std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  Transaction tx(db_);
  if (!tx.ok()) return storage::sqlite_error(db_, "", "deciding approval " + id);
  auto current = load("WHERE id = ?", id, false);
  if (!current) return Error::make("not_found", "no approval " + id);
  if (current->state != "pending")
    return Error::make("not_pending", "approval " + id + " is already " + current->state);
  if (current->expires_ms <= now_ms) return Error::make("expired", "approval " + id + " has expired");
  for (const auto& d : current->decisions)
    if (d.approver_issuer == decision.approver_issuer && d.approver_sub == decision.approver_sub)
      return Error::make("already_decided", decision.approver_sub + " has already decided approval " + id +
                                                " (" + d.verdict + "): each approver counts once");
  Statement ins(db_,
                "INSERT INTO approval_decisions (approval_id, approver_issuer, approver_sub, relayed_by,"
                " verdict, reason, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)");
  ins.bind(1, id);
  ins.bind(2, decision.approver_issuer);
  ins.bind(3, decision.approver_sub);
  ins.bind(4, decision.relayed_by);
  ins.bind(5, decision.verdict);
  ins.bind(6, decision.reason);
  ins.bind(7, now_ms);
  if (!ins.step_done()) return storage::sqlite_error(db_, "", "recording a decision on approval " + id);
  current->decisions.push_back(decision);
  current->decisions.back().at_ms = now_ms;
  std::string next = decision.verdict == "deny" ? "denied"
                     : current->approvals() >= current->approvers_required ? "approved"
                                                                            : "pending";
  if (next != "pending") {
    // A denied call never runs: the user's token kept for it goes with the decision.
    Statement up(db_,
                 "UPDATE approvals SET state = ?1, decided_ms = ?2,"
                 " user_token = CASE WHEN ?1 = 'denied' THEN NULL ELSE user_token END WHERE id = ?3");
    up.bind(1, next);
    up.bind(2, now_ms);
    up.bind(3, id);
    if (!up.step_done()) return storage::sqlite_error(db_, "", "deciding approval " + id);
    current->state = next;
    current->decided_ms = now_ms;
  }
  if (!tx.commit()) return storage::sqlite_error(db_, "", "committing the decision on approval " + id);
  return *current;
}

Result<ApprovalRecord> SqliteApprovalStore::withdraw(const std::string& id, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  Statement up(db_, "UPDATE approvals SET state = 'withdrawn', decided_ms = ?, user_token = NULL"
                   " WHERE id = ? AND state = 'pending'");
  up.bind(1, now_ms);
  up.bind(2, id);
  if (!up.step_done()) return storage::sqlite_error(db_, "", "withdrawing approval " + id);
  const bool withdrawn = sqlite3_changes(db_) == 1;
  auto current = load("WHERE id = ?", id, true);
  if (!current) return Error::make("not_found", "no approval " + id);
  if (!withdrawn) return Error::make("not_pending", "approval " + id + " is already " + current->state);
  current->decisions = decisions_of(id);
  return *current;
}

std::vector<ApprovalRecord> SqliteApprovalStore::expire_due(std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  Transaction tx(db_);
  std::vector<ApprovalRecord> out;
  if (!tx.ok()) return out;
  {
    Statement s(db_, (std::string(kColumns) + "WHERE state = 'pending' AND expires_ms <= ?").c_str());
    s.bind(1, now_ms);
    while (s.step_row()) out.push_back(row_of(s, *key_, true));
  }
  Statement up(db_, "UPDATE approvals SET state = 'expired', decided_ms = ?, user_token = NULL"
                   " WHERE state = 'pending' AND expires_ms <= ?");
  up.bind(1, now_ms);
  up.bind(2, now_ms);
  if (!up.step_done() || !tx.commit()) return {};
  for (auto& r : out) {
    r.state = "expired";
    r.decided_ms = now_ms;
    r.decisions = decisions_of(r.id);
  }
  return out;
}

std::vector<ApprovalRecord> SqliteApprovalStore::approved_not_resumed() {
  std::lock_guard lock(mu_);
  Statement s(db_, (std::string(kColumns) + "WHERE state = 'approved' AND resumed = 0").c_str());
  std::vector<ApprovalRecord> out;
  while (s.step_row()) out.push_back(row_of(s, *key_, true));
  for (auto& r : out) r.decisions = decisions_of(r.id);
  return out;
}

bool SqliteApprovalStore::claim_resume(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement s(db_, "UPDATE approvals SET resumed = 1 WHERE id = ? AND state = 'approved' AND resumed = 0");
  s.bind(1, id);
  return s.step_done() && sqlite3_changes(db_) == 1;
}

Status SqliteApprovalStore::forget_user_token(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement s(db_, "UPDATE approvals SET user_token = NULL WHERE id = ? AND user_token IS NOT NULL");
  s.bind(1, id);
  if (!s.step_done()) return storage::sqlite_error(db_, "", "deleting the user token of approval " + id);
  return {};
}

std::size_t SqliteApprovalStore::forget_spent_user_tokens() {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "UPDATE approvals SET user_token = NULL WHERE user_token IS NOT NULL"
              " AND (state IN ('denied', 'expired') OR resumed = 1)");
  if (!s.step_done()) return 0;
  return static_cast<std::size_t>(sqlite3_changes(db_));
}

}  // namespace airlock::server
