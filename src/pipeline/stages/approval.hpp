// The approval gate (docs/approvals.md): a critical tool's call waits, suspended, until the
// people with the right to approve it said yes. This stage runs after the tier stage (every
// refusal before it has been given) and before credentials (nothing is leased for a call
// nobody approved). It stores the pending approval, with the invocation as it will resume,
// through `hold` before the caller is answered 202; the daemon's approval service resumes
// the invocation at the next stage once the last approver said yes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "pipeline/pipeline.hpp"

namespace airlock::pipeline {

// What the approvers are asked: this invocation, with these exact arguments.
struct ApprovalRequest {
  std::string approval_id;       // "apr-<uuid>"
  std::string arguments_sha256;  // hex, of the arguments' RFC 8785 canonical JSON (audit/jcs.hpp)
  std::uint32_t approvers = 1;   // distinct approvers needed (tools[].approval.approvers)
  std::chrono::system_clock::time_point requested_at, expires_at;
  // The user's token is kept for the tool's oauth-exchange credential and expires before the
  // approval's timeout: the approval expires with it.
  bool expires_with_user_token = false;
};

// Keeps the pending approval durably (the state database). `suspended` is the invocation as
// it will be restored: its cursor at the stage after this one.
using ApprovalHold = std::function<Status(const Invocation& suspended, const ApprovalRequest& request)>;

// The SHA-256 (hex) of a value's RFC 8785 canonical JSON (audit/jcs.hpp, every JSON value,
// decimals included): what an approver approves.
Result<std::string> canonical_sha256(const nlohmann::json& value);

class ApprovalStage : public Stage {
 public:
  // `no_backend`: why no backend runs critical tools here ("" when one does): such a call is
  // refused (tier_unavailable) before anyone is asked to approve it.
  ApprovalStage(ApprovalHold hold, std::string no_backend)
      : hold_(std::move(hold)), no_backend_(std::move(no_backend)) {}
  std::string_view name() const override { return "approval"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

 private:
  ApprovalHold hold_;
  std::string no_backend_;
};

}  // namespace airlock::pipeline
