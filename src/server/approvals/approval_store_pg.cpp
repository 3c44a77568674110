// The approvals in PostgreSQL (storage.postgres), shared by every replica. A decision is one
// transaction that locks the approval's row (SELECT ... FOR UPDATE) before it reads the
// decisions made so far; an expiry and a resume claim are each one conditional UPDATE, which
// locks the row it changes and re-checks its condition once a concurrent change commits. So
// two replicas deciding, expiring and resuming one approval at once end it exactly one way,
// and an approved one is claimed by exactly one of them.
#include <map>

#include "creds/sealing_key.hpp"
#include "server/approvals/approval_store.hpp"
#include "server/approvals/approvals.hpp"
#include "storage/pg_schema.hpp"
#include "storage/state_location.hpp"

namespace airlock::server {
namespace {

namespace pg = storage::pg;

constexpr const char* kPgSchema = R"sql(
CREATE TABLE IF NOT EXISTS approvals (
  id text PRIMARY KEY, invocation_id text NOT NULL UNIQUE, tool text NOT NULL,
  config_version text NOT NULL, arguments_sha256 text NOT NULL, approvers_required integer NOT NULL,
  requester_principal text NOT NULL, requester_issuer text NOT NULL, requester_sub text NOT NULL,
  requested_ms bigint NOT NULL, expires_ms bigint NOT NULL, state text NOT NULL,
  decided_ms bigint NOT NULL DEFAULT 0, resumed boolean NOT NULL DEFAULT false,
  invocation text NOT NULL, arguments_preview text NOT NULL, arguments_bytes bigint NOT NULL,
  seq bigserial);
ALTER TABLE approvals ADD COLUMN IF NOT EXISTS decision_basis text NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN IF NOT EXISTS user_token text;
CREATE INDEX IF NOT EXISTS approvals_state ON approvals (state, expires_ms);
CREATE TABLE IF NOT EXISTS approval_decisions (
  approval_id text NOT NULL, approver_issuer text NOT NULL, approver_sub text NOT NULL,
  relayed_by text NOT NULL, verdict text NOT NULL, reason text NOT NULL, at_ms bigint NOT NULL,
  seq bigserial, PRIMARY KEY (approval_id, approver_issuer, approver_sub));
)sql";

// Column 16 is the sealed invocation document ('' where a list does not need it), 17 the
// decision basis's digest, 18 the sealed user token (NULL when none is kept).
constexpr const char* kPgColumns =
    "SELECT id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
    " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state,"
    " decided_ms, resumed, arguments_preview, arguments_bytes, invocation, decision_basis, user_token FROM approvals ";
constexpr const char* kListColumns =
    "SELECT id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
    " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state,"
    " decided_ms, resumed, arguments_preview, arguments_bytes, '', decision_basis, NULL FROM approvals ";
constexpr const char* kReturning =
    " RETURNING id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
    " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state,"
    " decided_ms, resumed, arguments_preview, arguments_bytes, invocation, decision_basis, user_token";
constexpr const char* kDecisionColumns =
    "SELECT approver_issuer, approver_sub, relayed_by, verdict, reason, at_ms, approval_id"
    " FROM approval_decisions ";

std::int64_t int_of(const pg::Reply& r, int row, int col) { return std::stoll(r.value(row, col)); }

ApprovalRecord record_of(const pg::Reply& s, int row, const creds::SealingKey& key, bool with_invocation) {
  ApprovalRecord r;
  r.id = s.value(row, 0);
  r.invocation_id = s.value(row, 1);
  r.tool = s.value(row, 2);
  r.config_version = s.value(row, 3);
  r.arguments_sha256 = s.value(row, 4);
  r.approvers_required = static_cast<std::uint32_t>(int_of(s, row, 5));
  r.requester_principal = s.value(row, 6);
  r.requester_issuer = s.value(row, 7);
  r.requester_sub = s.value(row, 8);
  r.requested_ms = int_of(s, row, 9);
  r.expires_ms = int_of(s, row, 10);
  r.state = s.value(row, 11);
  r.decided_ms = int_of(s, row, 12);
  r.resumed = s.value(row, 13) == "t";
  r.arguments_bytes = int_of(s, row, 15);
  r.decision_basis_sha256 = s.value(row, 17);
  detail::open_columns(key, r, s.value(row, 16), s.value(row, 14), s.is_null(row, 18) ? "" : s.value(row, 18),
                       with_invocation);
  return r;
}

ApprovalDecision decision_of(const pg::Reply& d, int row) {
  return {d.value(row, 0), d.value(row, 1), d.value(row, 2), d.value(row, 3), d.value(row, 4), int_of(d, row, 5)};
}

class PgApprovalStore final : public ApprovalStore {
 public:
  PgApprovalStore(std::unique_ptr<pg::Database> db, Key key) : db_(std::move(db)), key_(std::move(key)) {}

  Status create(const ApprovalRecord& r) override {
    auto sealed = detail::seal_columns(*key_, r);
    if (!sealed) return sealed.error();
    auto done = db_->exec(
        "storing approval " + r.id,
        "INSERT INTO approvals (id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
        " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state, invocation,"
        " arguments_preview, arguments_bytes, decision_basis, user_token)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, $14, $15, $16)",
        {r.id, r.invocation_id, r.tool, r.config_version, r.arguments_sha256, std::to_string(r.approvers_required),
         r.requester_principal, r.requester_issuer, r.requester_sub, std::to_string(r.requested_ms),
         std::to_string(r.expires_ms), sealed->invocation, sealed->arguments_preview,
         std::to_string(sealed->arguments_bytes), r.decision_basis_sha256,
         sealed->user_token.empty() ? std::nullopt : std::optional<std::string>(sealed->user_token)});
    if (!done) return done.error();
    return {};
  }

  std::optional<ApprovalRecord> get(const std::string& id) override { return load("WHERE id = $1", id); }
  std::optional<ApprovalRecord> by_invocation(const std::string& invocation_id) override {
    return load("WHERE invocation_id = $1", invocation_id);
  }

  std::vector<ApprovalRecord> pending() override {
    auto rows = db_->exec("listing pending approvals",
                          std::string(kListColumns) + "WHERE state = 'pending' ORDER BY requested_ms, seq");
    auto decisions = db_->exec("listing pending approvals' decisions",
                               "SELECT d.approver_issuer, d.approver_sub, d.relayed_by, d.verdict, d.reason, d.at_ms,"
                               " d.approval_id FROM approval_decisions d JOIN approvals a ON a.id = d.approval_id"
                               " WHERE a.state = 'pending' ORDER BY d.at_ms, d.seq");
    std::vector<ApprovalRecord> out;
    if (!rows || !decisions) return out;
    std::map<std::string, std::vector<ApprovalDecision>> by_id;
    for (int i = 0; i < decisions->rows(); ++i) by_id[decisions->value(i, 6)].push_back(decision_of(*decisions, i));
    for (int i = 0; i < rows->rows(); ++i) {
      out.push_back(record_of(*rows, i, *key_, false));
      if (auto it = by_id.find(out.back().id); it != by_id.end()) out.back().decisions = std::move(it->second);
    }
    return out;
  }

  Result<ApprovalRecord> decide(const std::string& id, const ApprovalDecision& decision, std::int64_t now_ms) override {
    ApprovalRecord current;
    Status done = db_->transaction("deciding approval " + id, [&](pg::Database::Tx& tx) -> Status {
      auto row = tx.exec("locking approval " + id, std::string(kPgColumns) + "WHERE id = $1 FOR UPDATE", {id});
      if (!row) return row.error();
      if (row->rows() == 0) return Error::make("not_found", "no approval " + id);
      current = record_of(*row, 0, *key_, false);
      auto decisions = decisions_in(tx, id);
      if (!decisions) return decisions.error();
      current.decisions = std::move(*decisions);
      if (auto refused = refusal(current, decision, now_ms); !refused) return refused;
      return record_decision(tx, current, decision, now_ms);
    });
    if (!done) return done.error();
    return current;
  }

  Result<ApprovalRecord> withdraw(const std::string& id, std::int64_t now_ms) override {
    auto rows = db_->exec("withdrawing approval " + id,
                          std::string("UPDATE approvals SET state = 'withdrawn', decided_ms = $2, user_token = NULL"
                                      " WHERE id = $1 AND state = 'pending'") + kReturning,
                          {id, std::to_string(now_ms)});
    if (!rows) return rows.error();
    auto records = whole_records(rows);
    if (!records.empty()) return std::move(records.front());
    auto current = get(id);
    if (!current) return Error::make("not_found", "no approval " + id);
    return Error::make("not_pending", "approval " + id + " is already " + current->state);
  }

  std::vector<ApprovalRecord> expire_due(std::int64_t now_ms) override {
    const std::string now = std::to_string(now_ms);
    auto rows = db_->exec("expiring approvals",
                          std::string("UPDATE approvals SET state = 'expired', decided_ms = $1, user_token = NULL"
                                      " WHERE state = 'pending' AND expires_ms <= $1") + kReturning,
                          {now});
    return whole_records(rows);
  }

  std::vector<ApprovalRecord> approved_not_resumed() override {
    auto rows = db_->exec("listing approved approvals",
                          std::string(kPgColumns) + "WHERE state = 'approved' AND NOT resumed ORDER BY seq");
    return whole_records(rows);
  }

  bool claim_resume(const std::string& id) override {
    auto claimed = db_->exec("claiming approval " + id,
                             "UPDATE approvals SET resumed = true WHERE id = $1 AND state = 'approved'"
                             " AND NOT resumed RETURNING id",
                             {id});
    return claimed && claimed->rows() == 1;
  }

  Status forget_user_token(const std::string& id) override {
    auto done = db_->exec("deleting the user token of approval " + id,
                          "UPDATE approvals SET user_token = NULL WHERE id = $1 AND user_token IS NOT NULL", {id});
    if (!done) return done.error();
    return {};
  }

  std::size_t forget_spent_user_tokens() override {
    auto done = db_->exec("deleting spent user tokens",
                          "UPDATE approvals SET user_token = NULL WHERE user_token IS NOT NULL"
                          " AND (state IN ('denied', 'expired') OR resumed) RETURNING id");
    return done ? static_cast<std::size_t>(done->rows()) : 0;
  }

  // Rows an older replica kept in plain (their invocation a JSON document): sealed, one
  // statement each, each only if still in plain (another replica may seal it at once).
  Status seal_plain_rows() {
    auto rows = db_->exec("finding approvals kept in plain",
                          "SELECT id, invocation FROM approvals WHERE left(invocation, 1) = '{'");
    if (!rows) return rows.error();
    for (int i = 0; i < rows->rows(); ++i) {
      ApprovalRecord r;
      r.id = rows->value(i, 0);
      r.invocation = nlohmann::json::parse(rows->value(i, 1), nullptr, false);
      auto sealed = detail::seal_columns(*key_, r);
      if (!sealed) return sealed.error();
      auto done = db_->exec("sealing approval " + r.id,
                            "UPDATE approvals SET invocation = $1, arguments_preview = $2"
                            " WHERE id = $3 AND left(invocation, 1) = '{'",
                            {sealed->invocation, sealed->arguments_preview, r.id});
      if (!done) return done.error();
    }
    return {};
  }

 private:
  // Each row as a whole record, with the invocation's columns and its decisions; none when the
  // statement failed.
  std::vector<ApprovalRecord> whole_records(const Result<pg::Reply>& rows) {
    std::vector<ApprovalRecord> out;
    if (!rows) return out;
    for (int i = 0; i < rows->rows(); ++i) {
      out.push_back(record_of(*rows, i, *key_, true));
      out.back().decisions = decisions_of(out.back().id);
    }
    return out;
  }

  std::optional<ApprovalRecord> load(const std::string& where, const std::string& key) {
    auto row = db_->exec("loading an approval", std::string(kPgColumns) + where, {key});
    if (!row || row->rows() == 0) return std::nullopt;
    ApprovalRecord r = record_of(*row, 0, *key_, true);
    r.decisions = decisions_of(r.id);
    return r;
  }

  std::vector<ApprovalDecision> decisions_of(const std::string& id) {
    auto rows = db_->exec("loading approval decisions",
                          std::string(kDecisionColumns) + "WHERE approval_id = $1 ORDER BY at_ms, seq", {id});
    std::vector<ApprovalDecision> out;
    if (rows)
      for (int i = 0; i < rows->rows(); ++i) out.push_back(decision_of(*rows, i));
    return out;
  }

  static Result<std::vector<ApprovalDecision>> decisions_in(pg::Database::Tx& tx, const std::string& id) {
    auto rows = tx.exec("loading approval decisions",
                        std::string(kDecisionColumns) + "WHERE approval_id = $1 ORDER BY at_ms, seq", {id});
    if (!rows) return rows.error();
    std::vector<ApprovalDecision> out;
    for (int i = 0; i < rows->rows(); ++i) out.push_back(decision_of(*rows, i));
    return out;
  }

  // Why this decision is not taken (as the SQLite store says it), or ok.
  static Status refusal(const ApprovalRecord& current, const ApprovalDecision& decision, std::int64_t now_ms) {
    const std::string& id = current.id;
    if (current.state != "pending") return Error::make("not_pending", "approval " + id + " is already " + current.state);
    if (current.expires_ms <= now_ms) return Error::make("expired", "approval " + id + " has expired");
    for (const auto& d : current.decisions)
      if (d.approver_issuer == decision.approver_issuer && d.approver_sub == decision.approver_sub)
        return Error::make("already_decided", decision.approver_sub + " has already decided approval " + id + " (" +
                                                  d.verdict + "): each approver counts once");
    return {};
  }

  // The decision's row and, when it ends the approval, its new state; `current` as it is then.
  static Status record_decision(pg::Database::Tx& tx, ApprovalRecord& current, const ApprovalDecision& decision,
                                std::int64_t now_ms) {
    const std::string now = std::to_string(now_ms);
    auto inserted = tx.exec("recording a decision on approval " + current.id,
                            "INSERT INTO approval_decisions (approval_id, approver_issuer, approver_sub, relayed_by,"
                            " verdict, reason, at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                            {current.id, decision.approver_issuer, decision.approver_sub, decision.relayed_by,
                             decision.verdict, decision.reason, now});
    if (!inserted) return inserted.error();
    current.decisions.push_back(decision);
    current.decisions.back().at_ms = now_ms;
    const std::string next = decision.verdict == "deny"                                   ? "denied"
                             : current.approvals() >= current.approvers_required ? "approved"
                                                                                  : "pending";
    if (next == "pending") return {};
    // A denied call never runs: the user's token kept for it goes with the decision.
    auto updated = tx.exec("deciding approval " + current.id,
                           "UPDATE approvals SET state = $1, decided_ms = $2,"
                           " user_token = CASE WHEN $1 = 'denied' THEN NULL ELSE user_token END WHERE id = $3",
                           {next, now, current.id});
    if (!updated) return updated.error();
    current.state = next;
    current.decided_ms = now_ms;
    return {};
  }

  std::unique_ptr<pg::Database> db_;
  Key key_;
};

}  // namespace

Result<std::unique_ptr<ApprovalStore>> open_postgres_approval_store(const storage::StateLocation& location,
                                                                    ApprovalStore::Key key) {
  if (!key) return Error::make("storage", "the state database (approvals): no key to seal pending calls with");
  auto db = pg::Database::open(location.postgres, "the state database (approvals)");
  if (!db) return db.error();
  if (auto made = pg::create_schema(**db, "creating the approvals' tables", kPgSchema); !made) return made.error();
  auto store = std::make_unique<PgApprovalStore>(std::move(*db), std::move(key));
  if (auto sealed = store->seal_plain_rows(); !sealed) return sealed.error();
  return std::unique_ptr<ApprovalStore>(std::move(store));
}

}  // namespace airlock::server
