// The approvals in PostgreSQL (storage.postgres), shared by every replica. A decision is one
// transaction that locks the approval's row (SELECT ... FOR UPDATE) before it reads the
// decisions made so far; an expiry and a resume claim are each one conditional UPDATE, which
// locks the row it changes and re-checks its condition once a concurrent change commits. So
// two replicas deciding, expiring and resuming one approval at once end it exactly one way,
// and an approved one is claimed by exactly one of them.
#include <map>

#include "common/utf8_truncate.hpp"
#include "server/approval_store.hpp"
#include "server/approvals.hpp"
#include "storage/pg_schema.hpp"
#include "storage/state_location.hpp"

namespace airlock::server {
namespace {

namespace pg = storage::pg;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS approvals (
  id text PRIMARY KEY, invocation_id text NOT NULL UNIQUE, tool text NOT NULL,
  config_version text NOT NULL, arguments_sha256 text NOT NULL, approvers_required integer NOT NULL,
  requester_principal text NOT NULL, requester_issuer text NOT NULL, requester_sub text NOT NULL,
  requested_ms bigint NOT NULL, expires_ms bigint NOT NULL, state text NOT NULL,
  decided_ms bigint NOT NULL DEFAULT 0, resumed boolean NOT NULL DEFAULT false,
  invocation text NOT NULL, arguments_preview text NOT NULL, arguments_bytes bigint NOT NULL,
  seq bigserial);
CREATE INDEX IF NOT EXISTS approvals_state ON approvals (state, expires_ms);
CREATE TABLE IF NOT EXISTS approval_decisions (
  approval_id text NOT NULL, approver_issuer text NOT NULL, approver_sub text NOT NULL,
  relayed_by text NOT NULL, verdict text NOT NULL, reason text NOT NULL, at_ms bigint NOT NULL,
  seq bigserial, PRIMARY KEY (approval_id, approver_issuer, approver_sub));
)sql";

// Column 16 is the invocation document ('' where a list does not need it).
constexpr const char* kColumns =
    "SELECT id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
    " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state,"
    " decided_ms, resumed, arguments_preview, arguments_bytes, invocation FROM approvals ";
constexpr const char* kListColumns =
    "SELECT id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
    " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state,"
    " decided_ms, resumed, arguments_preview, arguments_bytes, '' FROM approvals ";
constexpr const char* kReturning =
    " RETURNING id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
    " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state,"
    " decided_ms, resumed, arguments_preview, arguments_bytes, invocation";
constexpr const char* kDecisionColumns =
    "SELECT approver_issuer, approver_sub, relayed_by, verdict, reason, at_ms, approval_id"
    " FROM approval_decisions ";

std::int64_t int_of(const pg::Reply& r, int row, int col) { return std::stoll(r.value(row, col)); }

ApprovalRecord record_of(const pg::Reply& s, int row, bool with_invocation) {
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
  r.arguments_preview = s.value(row, 14);
  r.arguments_bytes = int_of(s, row, 15);
  if (with_invocation) r.invocation = nlohmann::json::parse(s.value(row, 16), nullptr, false);
  return r;
}

ApprovalDecision decision_of(const pg::Reply& d, int row) {
  return {d.value(row, 0), d.value(row, 1), d.value(row, 2), d.value(row, 3), d.value(row, 4), int_of(d, row, 5)};
}

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

class PgApprovalStore final : public ApprovalStore {
 public:
  explicit PgApprovalStore(std::unique_ptr<pg::Database> db) : db_(std::move(db)) {}

  Status create(const ApprovalRecord& r) override {
    // The list's preview of the arguments, as the SQLite store keeps it (whole characters here:
    // PostgreSQL text is valid UTF-8).
    std::string arguments;
    if (r.invocation.is_object() && r.invocation.contains("arguments")) arguments = dump(r.invocation["arguments"]);
    auto done = db_->exec(
        "storing approval " + r.id,
        "INSERT INTO approvals (id, invocation_id, tool, config_version, arguments_sha256, approvers_required,"
        " requester_principal, requester_issuer, requester_sub, requested_ms, expires_ms, state, invocation,"
        " arguments_preview, arguments_bytes)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, $14)",
        {r.id, r.invocation_id, r.tool, r.config_version, r.arguments_sha256, std::to_string(r.approvers_required),
         r.requester_principal, r.requester_issuer, r.requester_sub, std::to_string(r.requested_ms),
         std::to_string(r.expires_ms), dump(r.invocation), truncate_utf8(arguments, kArgumentsPreviewBytes),
         std::to_string(arguments.size())});
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
      out.push_back(record_of(*rows, i, false));
      if (auto it = by_id.find(out.back().id); it != by_id.end()) out.back().decisions = std::move(it->second);
    }
    return out;
  }

  Result<ApprovalRecord> decide(const std::string& id, const ApprovalDecision& decision, std::int64_t now_ms) override {
    ApprovalRecord current;
    Status done = db_->transaction("deciding approval " + id, [&](pg::Database::Tx& tx) -> Status {
      auto row = tx.exec("locking approval " + id, std::string(kColumns) + "WHERE id = $1 FOR UPDATE", {id});
      if (!row) return row.error();
      if (row->rows() == 0) return Error::make("not_found", "no approval " + id);
      current = record_of(*row, 0, false);
      auto decisions = decisions_in(tx, id);
      if (!decisions) return decisions.error();
      current.decisions = std::move(*decisions);
      if (auto refused = refusal(current, decision, now_ms); !refused) return refused;
      return record_decision(tx, current, decision, now_ms);
    });
    if (!done) return done.error();
    return current;
  }

  std::vector<ApprovalRecord> expire_due(std::int64_t now_ms) override {
    const std::string now = std::to_string(now_ms);
    auto rows = db_->exec("expiring approvals",
                          std::string("UPDATE approvals SET state = 'expired', decided_ms = $1"
                                      " WHERE state = 'pending' AND expires_ms <= $1") + kReturning,
                          {now});
    std::vector<ApprovalRecord> out;
    if (!rows) return out;
    for (int i = 0; i < rows->rows(); ++i) {
      out.push_back(record_of(*rows, i, true));
      out.back().decisions = decisions_of(out.back().id);
    }
    return out;
  }

  std::vector<ApprovalRecord> approved_not_resumed() override {
    auto rows = db_->exec("listing approved approvals",
                          std::string(kColumns) + "WHERE state = 'approved' AND NOT resumed ORDER BY seq");
    std::vector<ApprovalRecord> out;
    if (!rows) return out;
    for (int i = 0; i < rows->rows(); ++i) {
      out.push_back(record_of(*rows, i, true));
      out.back().decisions = decisions_of(out.back().id);
    }
    return out;
  }

  bool claim_resume(const std::string& id) override {
    auto claimed = db_->exec("claiming approval " + id,
                             "UPDATE approvals SET resumed = true WHERE id = $1 AND state = 'approved'"
                             " AND NOT resumed RETURNING id",
                             {id});
    return claimed && claimed->rows() == 1;
  }

 private:
  std::optional<ApprovalRecord> load(const std::string& where, const std::string& key) {
    auto row = db_->exec("loading an approval", std::string(kColumns) + where, {key});
    if (!row || row->rows() == 0) return std::nullopt;
    ApprovalRecord r = record_of(*row, 0, true);
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
    auto updated = tx.exec("deciding approval " + current.id,
                           "UPDATE approvals SET state = $1, decided_ms = $2 WHERE id = $3", {next, now, current.id});
    if (!updated) return updated.error();
    current.state = next;
    current.decided_ms = now_ms;
    return {};
  }

  std::unique_ptr<pg::Database> db_;
};

}  // namespace

Result<std::unique_ptr<ApprovalStore>> open_postgres_approval_store(const storage::StateLocation& location) {
  auto db = pg::Database::open(location.postgres, "the state database (approvals)");
  if (!db) return db.error();
  if (auto made = pg::create_schema(**db, "creating the approvals' tables", kSchema); !made) return made.error();
  return std::unique_ptr<ApprovalStore>(std::make_unique<PgApprovalStore>(std::move(*db)));
}

}  // namespace airlock::server
