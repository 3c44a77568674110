// The approval service (docs/approvals.md): keeps the pending approvals of critical calls,
// takes the approvers' decisions (RBAC `approve`, separation of duties, N distinct
// approvers, a deny ends it), expires what nobody decided in time, and resumes an approved
// invocation on the executor from the stage after the gate, with the arguments it was
// approved for. Every step is an audit record linked by the invocation id.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "pipeline/authenticator.hpp"
#include "pipeline/stages/approval.hpp"
#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"
#include "server/approvals/approval_store.hpp"

namespace airlock::server {

inline constexpr const char* kApprovalSchema = "airlock.approval/v1";

// What a decision request answers: the HTTP status and body.
struct ApprovalAnswer {
  int status = 200;
  nlohmann::json body;
};

class ApprovalService {
 public:
  explicit ApprovalService(ApprovalStore& store) : store_(store) {}
  // The daemon's services (set once, before it serves).
  void set_services(ApiServices services) { s_ = std::move(services); }

  // The pipeline's hold (pipeline::ApprovalHold): stored and audited before the 202.
  Status hold(const pipeline::Invocation& suspended, const pipeline::ApprovalRequest& request);

  // GET /v1/approvals: the pending ones `caller` may decide.
  nlohmann::json list(const pipeline::Caller& caller, const policy::Config& config);
  // GET /v1/approvals/{id}: to an approver of its tool or its requester; 404 otherwise.
  ApprovalAnswer show(const std::string& id, const pipeline::Caller& caller, const policy::Config& config);
  // POST /v1/approvals/{id}/approve|deny with {"reason", "arguments_sha256"?}.
  ApprovalAnswer decide(const std::string& id, const pipeline::Caller& caller, const policy::Config& config,
                        const std::string& verdict, const nlohmann::json& body);

  // Its requester withdraws the approval invocation `invocation_id` waits for (MCP's
  // tasks/cancel; whoever calls this has checked that the caller owns the invocation): the
  // approval ends "withdrawn", audited, and the invocation ends cancelled without running.
  // Errors: "not_found" (it waits for no approval), "not_pending" (decided, expired, withdrawn).
  Status withdraw(const std::string& invocation_id, const std::string& by);

  // GET /v1/invocations/{id}: the approval of an invocation that needed one (who decided, when,
  // why; the agent's reason), or none. The caller has already been allowed to read the invocation.
  std::optional<nlohmann::json> of_invocation(const std::string& invocation_id);

  // The sweeper's tick: expires what is due, hands approved ones to the executor.
  void tick();
  // Expires what is due now (also at start: what expired while the daemon was down).
  void expire_due();

 private:
  void schedule_approved();
  bool schedule(const ApprovalRecord& record);
  void run_approved(const std::string& id);
  // Ends an invocation that will not run (denied, expired, refused at resume).
  void end_unrun(const ApprovalRecord& record, pipeline::InvocationError error);
  Status announce_requested(const ApprovalRecord& record);
  Status audit_event(const ApprovalRecord& record, const std::string& event, nlohmann::json extra);

  ApprovalStore& store_;
  ApiServices s_;
  std::mutex scheduled_mu_;
  std::set<std::string> scheduled_;  // approved, submitted to the executor
};

// The bytes of the arguments' JSON a list entry carries (`arguments_preview`).
inline constexpr std::size_t kArgumentsPreviewBytes = 256;

// The JSON of an approval as the API shows it (a console shows the same). Without the
// arguments: their first kArgumentsPreviewBytes and their size instead.
nlohmann::json approval_json(const ApprovalRecord& record, bool with_arguments);

}  // namespace airlock::server
