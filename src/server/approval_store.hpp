// Pending approvals of critical calls, in state.db beside the invocations (docs/approvals.md).
// A row is written before the caller is answered 202 and holds the invocation as it will
// resume; its decisions are rows of their own, one per approver. Every change of state is one
// transaction under one lock, so an approval racing its expiry ends exactly one way.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

struct sqlite3;

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
  std::uint32_t approvers_required = 1;
  std::string requester_principal;                 // "" when a user called directly
  std::string requester_issuer, requester_sub;     // "" when no user
  std::int64_t requested_ms = 0, expires_ms = 0, decided_ms = 0;
  std::string state;        // pending | approved | denied | expired
  bool resumed = false;     // an approved one has been handed to the executor
  nlohmann::json invocation;  // pipeline::persist() of the suspended invocation
  std::vector<ApprovalDecision> decisions;
  // Stored with the approval (so a list parses no invocation): the first 256 bytes of the
  // arguments' JSON, as SQLite writes it (kArgumentsPreviewBytes), and its whole size.
  std::string arguments_preview;
  std::int64_t arguments_bytes = 0;
  std::size_t approvals() const;
};

class ApprovalStore {
 public:
  static Result<std::unique_ptr<ApprovalStore>> open(const std::string& path);
  ~ApprovalStore();

  Status create(const ApprovalRecord& record);
  std::optional<ApprovalRecord> get(const std::string& id);
  std::optional<ApprovalRecord> by_invocation(const std::string& invocation_id);
  // Pending ones (without their invocation document), oldest first.
  std::vector<ApprovalRecord> pending();

  // Records one decision, in one transaction: refused (Error code "not_pending", "expired",
  // "already_decided") unless the approval is pending, unexpired at `now_ms` and this person
  // has not decided yet. A deny ends it; the last approval needed approves it. The record as
  // it is after the decision.
  Result<ApprovalRecord> decide(const std::string& id, const ApprovalDecision& decision, std::int64_t now_ms);
  // Pending ones whose time is up at `now_ms`, now expired.
  std::vector<ApprovalRecord> expire_due(std::int64_t now_ms);
  // Approved ones not handed to the executor yet (a restart between the two).
  std::vector<ApprovalRecord> approved_not_resumed();
  // True for the one caller that claims it (an approved one runs once).
  bool claim_resume(const std::string& id);

 private:
  explicit ApprovalStore(sqlite3* db) : db_(db) {}
  Status exec(const std::string& sql);
  std::optional<ApprovalRecord> load(const char* where, const std::string& key, bool with_invocation);
  std::vector<ApprovalDecision> decisions_of(const std::string& id);
  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace airlock::server
