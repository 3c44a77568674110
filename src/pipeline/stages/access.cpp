#include "pipeline/stages/access.hpp"

namespace airlock::pipeline {

std::optional<InvocationError> AuthenticateStage::run(Invocation& inv) {
  if (!inv.bearer_key || inv.bearer_key->empty())
    return InvocationError{"unauthenticated", "no API key: send Authorization: Bearer <key>", "denied", 401, ""};
  const policy::Principal* found = config_.find_principal_by_key(*inv.bearer_key);
  if (!found) return InvocationError{"unauthenticated", "the API key is not valid", "denied", 401, ""};
  inv.principal = found;
  return std::nullopt;
}

std::optional<InvocationError> AuthorizeStage::run(Invocation& inv) {
  inv.tool = config_.find_tool(inv.tool_name);
  if (!inv.tool)
    return InvocationError{"unknown_tool", "there is no tool named '" + inv.tool_name + "'", "denied", 404, ""};
  for (const auto& pattern : inv.principal->tools)
    if (policy::glob_match(pattern, inv.tool_name)) return std::nullopt;
  std::string allowed;
  for (const auto& pattern : inv.principal->tools) allowed += (allowed.empty() ? "" : ", ") + pattern;
  return InvocationError{"forbidden",
                         "principal '" + inv.principal->name + "' may not call tool '" + inv.tool_name +
                             "' (its tools: " + (allowed.empty() ? "none" : allowed) + ")",
                         "denied", 403, ""};
}

std::optional<InvocationError> TierStage::run(Invocation& inv) {
  switch (inv.tool->risk) {
    case policy::Risk::high:
      return InvocationError{"tier_unavailable",
                             "tool '" + inv.tool_name +
                                 "' is high risk: not available: needs the kubernetes backend",
                             "denied", 403, ""};
    case policy::Risk::critical:
      return InvocationError{"tier_unavailable",
                             "tool '" + inv.tool_name +
                                 "' is critical risk: not available: needs the kubernetes backend and "
                                 "a human approval",
                             "denied", 403, ""};
    default:
      inv.limits = config_.limits_for(*inv.tool);
      return std::nullopt;
  }
}

}  // namespace airlock::pipeline
