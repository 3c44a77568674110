#include "pipeline/stages/access.hpp"

namespace airlock::pipeline {

std::optional<std::string> bearer_token(const Headers& headers) {
  auto it = headers.find("authorization");
  if (it == headers.end()) return std::nullopt;
  const std::string& v = it->second;
  if (v.size() < 7 || !(v.compare(0, 7, "Bearer ") == 0 || v.compare(0, 7, "bearer ") == 0))
    return std::nullopt;
  return v.substr(7);
}

std::variant<Actor, InvocationError> authenticate(const policy::Config& config, const Headers& headers) {
  auto key = bearer_token(headers);
  if (!key || key->empty())
    return deny(ErrorKind::unauthenticated, "no API key: send Authorization: Bearer <key>");
  const policy::Principal* found = config.find_principal_by_key(*key);
  if (!found) return deny(ErrorKind::unauthenticated, "the API key is not valid");
  return Actor{found->name};
}

namespace {

ErrorKind refusal_kind(const access::Decision& d) {
  if (d.kind == "unknown_tool") return ErrorKind::unknown_tool;
  if (d.kind == "subject_required") return ErrorKind::subject_required;
  return ErrorKind::forbidden;
}

}  // namespace

InvokeDecision may_invoke(const policy::Config& config, const Actor& actor, const Subject* subject,
                          const std::string& tool) {
  InvokeDecision out{access::decide(config, &actor, subject, policy::Action::invoke, tool), std::nullopt};
  if (!out.decision.allowed) out.refusal = deny(refusal_kind(out.decision), out.decision.reason);
  return out;
}

StageResult AuthenticateStage::run(Invocation& inv, StageContext& ctx) {
  auto who = authenticate(ctx.config(), inv.headers);
  if (auto* refused = std::get_if<InvocationError>(&who)) return std::move(*refused);
  inv.actor = std::get<Actor>(std::move(who));
  return StageResult::next();
}

StageResult AuthorizeStage::run(Invocation& inv, StageContext& ctx) {
  if (!inv.actor) return deny(ErrorKind::unauthenticated, "the invocation has no authenticated caller");
  auto decided = may_invoke(ctx.config(), *inv.actor, inv.subject ? &*inv.subject : nullptr, inv.tool_name);
  inv.access_rule = decided.decision.rule;
  if (decided.refusal) return std::move(*decided.refusal);
  return StageResult::next();
}

StageResult TierStage::run(Invocation& inv, StageContext& ctx) {
  const policy::ToolConfig* tool = ctx.tool(inv);
  if (!tool) return deny(ErrorKind::unknown_tool, "there is no tool named '" + inv.tool_name + "'");
  switch (tool->risk) {
    case policy::Risk::high:
      return deny(ErrorKind::tier_unavailable,
                  "tool '" + inv.tool_name + "' is high risk: not available: needs the kubernetes backend");
    case policy::Risk::critical:
      return deny(ErrorKind::tier_unavailable,
                  "tool '" + inv.tool_name +
                      "' is critical risk: not available: needs the kubernetes backend and a human approval");
    default:
      inv.limits = ctx.config().limits_for(*tool);
      return StageResult::next();
  }
}

}  // namespace airlock::pipeline
