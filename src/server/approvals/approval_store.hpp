// Pending approvals of critical calls, in state.db beside the invocations, or in PostgreSQL
// (docs/approvals.md). What a pending call keeps that is the user's (the invocation with its
// arguments, their preview, and the user's token when the tool exchanges it) is sealed with
// the secret store's key (creds/sealing_key.hpp) before it is written: the database holds no
// argument and no token in plain.
// A row is written before the caller is answered 202 and holds the invocation as it will
// resume; its decisions are rows of their own, one per approver. Every change of state is one
// transaction under one lock, so an approval racing its expiry ends exactly one way.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace airlock::creds {
class SealingKey;
}

namespace airlock::storage {
struct StateLocation;
}

namespace airlock::server {

struct ApprovalDecision {
  std::string approver_issuer, approver_sub;  // the person who decided
  std::string relayed_by;                     // the agent that relayed their token ("": none)
  std::string verdict;                        // "approve" or "deny"
  std::string reason;
  std::int64_t at_ms = 0;
};

struct ApprovalRecord {
  std::string id, invocation_id, tool, config_version, arguments_sha256;
  // The SHA-256 of what the call was decided on (pipeline/decision_basis.hpp; "" in rows kept
  // before it was): shown and recorded, while the invocation keeps the parts it is checked by.
  std::string decision_basis_sha256;
  std::uint32_t approvers_required = 1;
  std::string requester_principal;                 // "" when a user called directly
  std::string requester_issuer, requester_sub;     // "" when no user
  std::int64_t requested_ms = 0, expires_ms = 0, decided_ms = 0;
  std::string state;        // pending | approved | denied | expired
  bool resumed = false;     // an approved one has been handed to the executor
  nlohmann::json invocation;  // pipeline::persist() of the suspended invocation
  // The user's token as received, kept (sealed) while the approval is pending or approved and
  // not yet run, only for a tool that exchanges it (oauth-exchange); "" otherwise. Never
  // logged, shown or recorded.
  std::string user_token;
  // Why the sealed columns did not open ("" when they did): the error's code, "sealed_corrupt"
  // (altered, or another row's) or "sealed_other_key" (another replica's key), and its message.
  std::string sealed_error, sealed_error_message;
  std::vector<ApprovalDecision> decisions;
  // Stored with the approval (so a list parses no invocation): the first 256 bytes of the
  // arguments' JSON, as SQLite writes it (kArgumentsPreviewBytes), and its whole size.
  std::string arguments_preview;
  std::int64_t arguments_bytes = 0;
  std::size_t approvals() const;
};

// One interface, two stores: SQLite (<dataDir>/state.db, one daemon) and PostgreSQL
// (storage.postgres, shared by every replica). decide, expire_due and claim_resume are each one
// transaction that locks the rows it changes, so a decision, an expiry and a resume race to
// exactly one winner also across replicas.
class ApprovalStore {
 public:
  using Key = std::shared_ptr<const creds::SealingKey>;
  // The store `location` names (tables created when missing), sealing with `key` (required).
  static Result<std::unique_ptr<ApprovalStore>> open(const storage::StateLocation& location, Key key);
  // The SQLite store in the file at `path`.
  static Result<std::unique_ptr<ApprovalStore>> open(const std::string& path, Key key);
  virtual ~ApprovalStore() = default;

  virtual Status create(const ApprovalRecord& record) = 0;
  virtual std::optional<ApprovalRecord> get(const std::string& id) = 0;
  virtual std::optional<ApprovalRecord> by_invocation(const std::string& invocation_id) = 0;
  // Pending ones (without their invocation document), oldest first.
  virtual std::vector<ApprovalRecord> pending() = 0;

  // Records one decision, in one transaction: refused (Error code "not_pending", "expired",
  // "already_decided") unless the approval is pending, unexpired at `now_ms` and this person
  // has not decided yet. A deny ends it; the last approval needed approves it. The record as
  // it is after the decision.
  virtual Result<ApprovalRecord> decide(const std::string& id, const ApprovalDecision& decision,
                                        std::int64_t now_ms) = 0;
  // Pending approval `id` withdrawn by its requester (MCP's tasks/cancel): state "withdrawn",
  // its kept user token deleted, in one statement, so that a decision racing it loses (or
  // wins: then this refuses, "not_pending"). The record as it is after.
  virtual Result<ApprovalRecord> withdraw(const std::string& id, std::int64_t now_ms) = 0;
  // Pending ones whose time is up at `now_ms`, now expired.
  virtual std::vector<ApprovalRecord> expire_due(std::int64_t now_ms) = 0;
  // Approved ones not handed to the executor yet (a restart between the two).
  virtual std::vector<ApprovalRecord> approved_not_resumed() = 0;
  // True for the one caller that claims it (an approved one runs once).
  virtual bool claim_resume(const std::string& id) = 0;
  // Deletes the kept user token of `id` (read by the one run that claimed it).
  virtual Status forget_user_token(const std::string& id) = 0;
  // Deletes every kept user token whose approval has ended (denied, expired, resumed): what a
  // stop between a claim and its forget_user_token left. The number deleted.
  virtual std::size_t forget_spent_user_tokens() = 0;
};

// The PostgreSQL store (server/approvals/approval_store_pg.cpp).
Result<std::unique_ptr<ApprovalStore>> open_postgres_approval_store(const storage::StateLocation& location,
                                                                    ApprovalStore::Key key);

namespace detail {

// What both stores write of a record's sealed columns, and how they read them back.
struct SealedColumns {
  std::string invocation, arguments_preview, user_token;  // user_token "" when none is kept
  std::int64_t arguments_bytes = 0;
};
Result<SealedColumns> seal_columns(const creds::SealingKey& key, const ApprovalRecord& record);
// Opens the columns read into `record` (invocation and user token only when `with_invocation`);
// a failure is recorded in record.sealed_error, never thrown.
void open_columns(const creds::SealingKey& key, ApprovalRecord& record, const std::string& invocation,
                  const std::string& preview, const std::string& user_token, bool with_invocation);

}  // namespace detail

}  // namespace airlock::server
