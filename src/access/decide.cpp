#include "access/decide.hpp"

#include <algorithm>

namespace airlock::access {
namespace {

using policy::Action;
using policy::Effect;
using policy::Principal;
using policy::Role;
using policy::RoleRule;
using policy::ToolConfig;

Decision allow(std::string rule, std::string reason) {
  return {true, "allowed", std::move(rule), std::move(reason)};
}

Decision deny(std::string kind, std::string rule, std::string reason) {
  return {false, std::move(kind), std::move(rule), std::move(reason)};
}

std::string joined(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

bool any_glob(const std::vector<std::string>& globs, std::string_view name) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return policy::glob_match(g, name); });
}

// "invoke tool 'csv-export'", "create_session template 'python-dev'", or "read_audit" for
// an action done to neither.
std::string doing(Action a, std::string_view tool) {
  std::string out(policy::action_name(a));
  if (policy::is_tool_action(a)) out += " tool '" + std::string(tool) + "'";
  if (policy::is_template_action(a)) out += " template '" + std::string(tool) + "'";
  return out;
}

// The principal's tools grant invoke. Every principal may read its own invocations and the
// audit log (as the daemon allows today); nothing in a principal grants the other actions.
Decision agent_decision(const Principal& p, Action a, std::string_view tool) {
  const std::string who = "principal '" + p.name + "'";
  if (a == Action::invoke) {
    const std::string rule = "principal " + p.name + " tools";
    if (any_glob(p.tools, tool)) return allow(rule, who + " may call tool '" + std::string(tool) + "'");
    // The words of the authorize stage's 403 before this function existed: keep them.
    return deny("forbidden", rule,
                who + " may not call tool '" + std::string(tool) +
                    "' (its tools: " + (p.tools.empty() ? "none" : joined(p.tools)) + ")");
  }
  if (a == Action::create_session) {
    const std::string rule = "principal " + p.name + " sessionTemplates";
    if (any_glob(p.session_templates, tool))
      return allow(rule, who + " may create sessions of template '" + std::string(tool) + "'");
    return deny("forbidden", rule,
                who + " may not create sessions of template '" + std::string(tool) + "' (its sessionTemplates: " +
                    (p.session_templates.empty() ? "none" : joined(p.session_templates)) + ")");
  }
  if (a == Action::read_invocations || a == Action::read_audit)
    return allow("principal " + p.name + " (every principal may " +
                     std::string(policy::action_name(a)) + ")",
                 who + " may " + doing(a, tool));
  return deny("forbidden", "no rule allows",
              who + " may not " + doing(a, tool) + ": only a role bound to a user allows it");
}

bool claim_matches(const policy::UserMatch& m, const Subject& s) {
  if (m.claim == "sub") return s.sub == m.value;
  const auto found = s.claims.find(m.claim);
  if (found == s.claims.end()) return false;
  if (found->is_string()) return found->get<std::string>() == m.value;
  if (!found->is_array()) return false;
  return std::any_of(found->begin(), found->end(), [&](const nlohmann::json& item) {
    return item.is_string() && item.get<std::string>() == m.value;
  });
}

bool bound(const policy::RoleBinding& b, const Subject& s) {
  return std::any_of(b.users.begin(), b.users.end(), [&](const policy::UserMatch& m) {
    return m.issuer == s.issuer && claim_matches(m, s);
  });
}

std::vector<const Role*> bound_roles(const policy::Config& c, const Subject& s) {
  std::vector<const Role*> out;
  for (const auto& role : c.roles)
    for (const auto& b : c.bindings)
      if (b.role == role.name && bound(b, s)) {
        out.push_back(&role);
        break;
      }
  return out;
}

// "role analyst rule 2 (deny invoke csv-export)": rules counted from 1, as a person reads them.
std::string rule_label(const Role& role, std::size_t index) {
  const RoleRule& rule = role.rules[index];
  std::vector<std::string> actions;
  for (Action a : rule.actions) actions.emplace_back(policy::action_name(a));
  std::vector<std::string> scope = rule.tools;
  scope.insert(scope.end(), rule.session_templates.begin(), rule.session_templates.end());
  std::string label = "role " + role.name + " rule " + std::to_string(index + 1) + " (" +
                      (rule.effect == Effect::allow ? "allow " : "deny ") + joined(actions, ",") +
                      " " + joined(scope);
  if (rule.max_risk) label += "; maxRisk " + std::string(policy::risk_name(*rule.max_risk));
  return label + ")";
}

bool covers(const RoleRule& rule, Action a, std::string_view tool) {
  if (std::find(rule.actions.begin(), rule.actions.end(), a) == rule.actions.end()) return false;
  if (policy::is_tool_action(a)) return any_glob(rule.tools, tool);
  if (policy::is_template_action(a)) return any_glob(rule.session_templates, tool);
  return true;
}

struct RuleRef {
  const Role* role = nullptr;
  std::size_t index = 0;
  const RoleRule& rule() const { return role->rules[index]; }
};

// The first rule of `roles` with this effect that covers the action (roles in config order,
// rules in role order), skipping those `skip` rejects.
template <typename Skip>
std::optional<RuleRef> first_rule(const std::vector<const Role*>& roles, Effect effect, Action a,
                                  std::string_view tool, Skip skip) {
  for (const Role* role : roles)
    for (std::size_t i = 0; i < role->rules.size(); ++i) {
      const RoleRule& rule = role->rules[i];
      if (rule.effect == effect && covers(rule, a, tool) && !skip(rule)) return RuleRef{role, i};
    }
  return std::nullopt;
}

// `risk`: of the tool or template the action is done to (none: the action is done to neither).
Decision user_decision(const policy::Config& c, const Subject& s, Action a,
                       std::optional<policy::Risk> risk, std::string_view tool_name) {
  const auto roles = bound_roles(c, s);
  const std::string who = "user '" + s.sub + "' (issuer " + s.issuer + ")";
  const std::string what = doing(a, tool_name);
  auto none = [](const RoleRule&) { return false; };
  if (auto d = first_rule(roles, Effect::deny, a, tool_name, none)) {  // deny overrides allow
    const std::string label = rule_label(*d->role, d->index);
    return deny("forbidden", label, who + " may not " + what + ": denied by " + label);
  }
  auto over_max_risk = [&](const RoleRule& rule) {
    return risk && rule.max_risk && *risk > *rule.max_risk;
  };
  if (auto a_rule = first_rule(roles, Effect::allow, a, tool_name, over_max_risk)) {
    const std::string label = rule_label(*a_rule->role, a_rule->index);
    return allow(label, who + " may " + what + " by " + label);
  }
  if (auto capped = first_rule(roles, Effect::allow, a, tool_name, none)) {
    const std::string label = rule_label(*capped->role, capped->index);
    return deny("forbidden", label,
                who + " may not " + what + ": it is " + std::string(policy::risk_name(*risk)) +
                    " risk, over the maxRisk " +
                    std::string(policy::risk_name(*capped->rule().max_risk)) + " of " + label);
  }
  std::vector<std::string> names;
  for (const Role* r : roles) names.push_back(r->name);
  return deny("forbidden", "no rule allows",
              who + " may not " + what + ": " +
                  (names.empty() ? "no role is bound to them"
                                 : "no rule of their roles (" + joined(names) + ") allows it"));
}

// Agent and user both allowed: the decision names both rules.
Decision both_allowed(const Decision& agent, const Decision& user) {
  return allow(agent.rule + " and " + user.rule, agent.reason + ", and " + user.reason);
}

}  // namespace

int Decision::http_status() const {
  if (allowed) return 200;
  return kind == "unknown_tool" || kind == "unknown_template" ? 404 : 403;
}

Decision decide(const policy::Config& config, const Actor* agent, const Subject* user,
                Action action, std::string_view tool) {
  const ToolConfig* t = nullptr;
  std::optional<policy::Risk> risk;
  if (policy::is_tool_action(action)) {
    if (!(t = config.find_tool(tool)))
      return deny("unknown_tool", "no such tool", "there is no tool named '" + std::string(tool) + "'");
    risk = t->risk;
  }
  if (policy::is_template_action(action)) {
    const policy::SessionTemplate* st = config.find_session_template(tool);
    if (!st)
      return deny("unknown_template", "no such session template",
                  "there is no session template named '" + std::string(tool) + "'");
    risk = st->risk;
  }
  if (!agent && !user)
    return deny("forbidden", "no rule allows", "neither an agent nor a user: nobody to allow");
  std::optional<Decision> by_agent;
  if (agent) {
    const Principal* p = config.find_principal(agent->principal);
    if (!p)
      return deny("forbidden", "no rule allows",
                  "there is no principal named '" + agent->principal + "'");
    by_agent = agent_decision(*p, action, tool);
    if (!by_agent->allowed) return *by_agent;
  }
  if (!user) {
    if (t && t->requires_user)
      return deny("subject_required", "tool " + t->name + " requiresUser",
                  "tool '" + t->name + "' may only be called on behalf of a user, and this call "
                  "has none (send the user's token in Airlock-Subject-Token, or exchange it at POST /v1/token)");
    return *by_agent;
  }
  Decision by_user = user_decision(config, *user, action, risk, tool);
  if (!by_user.allowed || !by_agent) return by_user;
  return both_allowed(*by_agent, by_user);
}

std::vector<std::string> roles_of(const policy::Config& config, const Subject& user) {
  std::vector<std::string> out;
  for (const Role* r : bound_roles(config, user)) out.push_back(r->name);
  return out;
}

nlohmann::json to_json(const Decision& d) {
  return {{"allowed", d.allowed}, {"kind", d.kind}, {"rule", d.rule}, {"reason", d.reason}};
}

}  // namespace airlock::access
