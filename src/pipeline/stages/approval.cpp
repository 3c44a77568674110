#include "pipeline/stages/approval.hpp"

#include "audit/jcs.hpp"
#include "audit/hash.hpp"
#include "audit/invocation_record.hpp"
#include "common/utc_time.hpp"
#include "identity/verifier.hpp"
#include "pipeline/decision_basis.hpp"

namespace airlock::pipeline {

Result<std::string> canonical_sha256(const nlohmann::json& value) {
  auto canonical = audit::jcs(value);
  if (!canonical) return canonical.error();
  return audit::to_hex(audit::sha256(std::string_view(*canonical)));
}

namespace {

bool exchanges(const std::vector<policy::CredentialSpec>& credentials) {
  for (const auto& c : credentials)
    if (std::holds_alternative<policy::OAuthExchangeCredential>(c.source)) return true;
  return false;
}

// Whether the call's credentials are exchanged from the user's token (oauth-exchange, the
// tool's own or its MCP server's): only then is the token kept while the call waits.
bool exchanges_user_token(const policy::Config& config, const policy::ToolConfig& tool) {
  if (exchanges(tool.credentials)) return true;
  const auto* server = tool.mcp ? config.find_mcp_server(tool.mcp->server) : nullptr;
  return server && exchanges(server->credentials);
}

// The user token's `exp` when the token is kept, says one, and comes before `deadline`.
// Compared in seconds: a far `exp` (up to int64's) never becomes a time_point that overflows.
std::optional<std::chrono::system_clock::time_point> kept_token_expiry_before(
    const Invocation& inv, std::chrono::system_clock::time_point deadline) {
  if (inv.user_token.empty() || !inv.subject) return std::nullopt;
  const auto exp = identity::numeric_date_claim(inv.subject->claims, "exp");  // RFC 7519: may be fractional
  const auto deadline_s = std::chrono::duration_cast<std::chrono::seconds>(deadline.time_since_epoch()).count();
  if (!exp || *exp >= deadline_s) return std::nullopt;
  return std::chrono::system_clock::time_point(std::chrono::seconds(*exp));
}

// A kept token bounds the wait: past its `exp` the credential cannot be exchanged, so the
// approval expires with it (and the token is deleted then).
Result<ApprovalRequest> make_request(const Invocation& inv, const policy::ToolConfig& tool) {
  auto digest = canonical_sha256(inv.arguments);
  if (!digest) return digest.error();
  ApprovalRequest r;
  r.approval_id = "apr-" + audit::new_invocation_id();
  r.arguments_sha256 = std::move(*digest);
  r.approvers = tool.approval.approvers;
  r.requested_at = std::chrono::system_clock::now();
  r.expires_at = r.requested_at + tool.approval.timeout;
  if (auto exp = kept_token_expiry_before(inv, r.expires_at)) {
    r.expires_at = *exp;
    r.expires_with_user_token = true;
  }
  return r;
}

// What the 202 says (to_response: "approval") and what the resumed invocation keeps.
nlohmann::json suspension_data(const ApprovalRequest& r) {
  return {{"approval",
           {{"id", r.approval_id},
            {"expires_at", rfc3339_ms(r.expires_at)},
            {"url", "/v1/approvals/" + r.approval_id},
            {"approvers", r.approvers}}},
          {"arguments_sha256", r.arguments_sha256},
          {"expires_with_user_token", r.expires_with_user_token}};
}

}  // namespace

StageResult ApprovalStage::run(Invocation& inv, StageContext& ctx) {
  const policy::ToolConfig* tool = ctx.tool(inv);
  if (!tool) return deny(ErrorKind::unknown_tool, "there is no tool named '" + inv.tool_name + "'");
  if (tool->risk != policy::Risk::critical) return StageResult::next();
  if (!no_backend_.empty())
    return deny(ErrorKind::tier_unavailable, "tool '" + inv.tool_name + "' is critical risk: " + no_backend_);
  if (!hold_)
    return deny(ErrorKind::tier_unavailable,
                "tool '" + inv.tool_name + "' is critical risk and needs a human approval; this "
                "daemon has no approval store");
  // The user's token is kept (sealed, docs/approvals.md) only for a tool that exchanges it.
  if (!exchanges_user_token(ctx.config(), *tool)) inv.user_token.clear();
  auto request = make_request(inv, *tool);
  if (!request) return fail(ErrorKind::internal, "the approval request: " + request.error().message);
  const std::string reason = "waiting for " + std::to_string(request->approvers) +
                             " approval(s) until " + rfc3339_ms(request->expires_at);
  auto basis = decision_basis(ctx.config(), inv);
  if (!basis) return fail(ErrorKind::internal, "the approval request: " + basis.error().message);
  inv.decision_basis = std::move(*basis);
  nlohmann::json data = suspension_data(*request);
  Invocation suspended = inv;  // as it will be restored: resumes at the next stage
  suspended.suspended = Suspension{std::string(name()), reason, data};
  if (auto held = hold_(suspended, *request); !held)
    return fail(ErrorKind::internal, "the pending approval could not be stored: " + held.error().message);
  return StageResult::suspend(reason, std::move(data));
}

}  // namespace airlock::pipeline
