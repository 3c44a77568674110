// The access decision: may this agent, on behalf of this user (either may be absent), do this
// action to this tool? One function for the daemon's API and the pipeline's authorize stage
// (and `airlock policy check`), so that they cannot disagree. docs/identity.md ("RBAC") gives the
// semantics with examples:
//
//   - default deny; a deny rule of any of the user's roles overrides every allow;
//   - an agent acting for a user: both the agent (its principal's tools) and the user (the
//     rules of the roles bound to them) must be allowed;
//   - an agent alone: its principal's tools decide, unless the tool requires a user;
//   - a user alone (a person calling directly): their roles decide;
//   - an allow rule with maxRisk allows no tool of a higher risk.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config.hpp"

namespace airlock::access {

// An agent: the principal it authenticated as, by name (looked up in the Config on each
// decision, so a Decision never points into a Config that a reload replaced).
struct Actor {
  std::string principal;
};

// A user: a verified token's issuer (the name of one of identity.issuers), its `sub`, and all
// its claims (bindings match on sub, email, groups or any other string or string-list claim).
struct Subject {
  std::string issuer;
  std::string sub;
  nlohmann::json claims = nlohmann::json::object();
};

struct Decision {
  bool allowed = false;
  // "allowed", or why not: "forbidden", "unknown_tool", "unknown_template",
  // "subject_required" (the error kinds of the API's answers).
  std::string kind;
  // What decided, stable and readable: "principal research-agent tools",
  // "role analyst rule 2 (deny invoke csv-export)", "no rule allows", ...
  std::string rule;
  std::string reason;  // a full sentence, the message of a 403 or 404

  int http_status() const;  // 200, 403, or 404 for an unknown tool or template
};

// `agent` and `user` may be null (not both: that is denied). `tool` names the tool for
// invoke and approve, the session template for create_session; the other actions ignore it.
Decision decide(const policy::Config& config, const Actor* agent, const Subject* user,
                policy::Action action, std::string_view tool);

// The names of the roles bound to the user, in the order of `roles` in the config.
std::vector<std::string> roles_of(const policy::Config& config, const Subject& user);

// {"allowed", "kind", "rule", "reason"}
nlohmann::json to_json(const Decision& d);

}  // namespace airlock::access
