#include "pipeline/stages/access.hpp"

#include <algorithm>

namespace airlock::pipeline {

namespace {

ErrorKind refusal_kind(const access::Decision& d) {
  if (d.kind == "unknown_tool") return ErrorKind::unknown_tool;
  if (d.kind == "subject_required") return ErrorKind::subject_required;
  return ErrorKind::forbidden;
}

}  // namespace

InvokeDecision may_invoke(const policy::Config& config, const Actor* actor, const Subject* subject,
                          const std::string& tool, const std::vector<std::string>& scope) {
  InvokeDecision out{access::decide(config, actor, subject, policy::Action::invoke, tool), std::nullopt};
  if (out.decision.allowed && !scope.empty() && std::find(scope.begin(), scope.end(), tool) == scope.end()) {
    std::string listed;
    for (const auto& t : scope) listed += (listed.empty() ? "" : " ") + t;
    out.decision = {false, "forbidden", "token scope",
                    "the token's scope (" + listed + ") does not include tool '" + tool + "'"};
    out.refusal = deny(ErrorKind::forbidden, out.decision.reason);
    return out;
  }
  if (out.decision.allowed) return out;
  std::string message = out.decision.reason;
  // With a user the rules are the roles': the message names the one that decided. (An agent
  // alone keeps the words it always had, which name its tools.)
  if (subject && message.find(out.decision.rule) == std::string::npos)
    message += " (decided by: " + out.decision.rule + ")";
  out.refusal = deny(refusal_kind(out.decision), std::move(message));
  return out;
}

StageResult AuthenticateStage::run(Invocation& inv, StageContext&) {
  auto who = authenticator_->authenticate(inv.headers, inv.client_certificate ? &*inv.client_certificate : nullptr);
  if (auto* refused = std::get_if<InvocationError>(&who)) return std::move(*refused);
  auto& caller = std::get<Caller>(who);
  inv.actor = std::move(caller.actor);
  inv.subject = std::move(caller.subject);
  inv.subject_jti_sha256 = std::move(caller.subject_jti_sha256);
  inv.token_scope = std::move(caller.scope);
  inv.user_token = std::move(caller.user_token);
  return StageResult::next();
}

StageResult AuthorizeStage::run(Invocation& inv, StageContext& ctx) {
  if (!inv.actor && !inv.subject)
    return deny(ErrorKind::unauthenticated, "the invocation has no authenticated caller");
  auto decided = may_invoke(ctx.config(), inv.actor ? &*inv.actor : nullptr,
                            inv.subject ? &*inv.subject : nullptr, inv.tool_name, inv.token_scope);
  inv.access_rule = decided.decision.rule;
  if (decided.refusal) return std::move(*decided.refusal);
  return StageResult::next();
}

StageResult TierStage::run(Invocation& inv, StageContext& ctx) {
  const policy::ToolConfig* tool = ctx.tool(inv);
  if (!tool) return deny(ErrorKind::unknown_tool, "there is no tool named '" + inv.tool_name + "'");
  // A critical tool runs on its tier's backend once approved (the approval stage, next).
  inv.limits = ctx.config().limits_for(*tool);
  return StageResult::next();
}

}  // namespace airlock::pipeline
