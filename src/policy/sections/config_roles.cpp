// The roles and bindings sections: what a user may do (roles of allow and deny rules) and
// which users have which role (bindings, by a claim of their token).
#include "policy/config_reader.hpp"

namespace airlock::policy {

std::string_view action_name(Action a) {
  switch (a) {
    case Action::invoke:
      return "invoke";
    case Action::approve:
      return "approve";
    case Action::read_invocations:
      return "read_invocations";
    case Action::read_all_invocations:
      return "read_all_invocations";
    case Action::read_audit:
      return "read_audit";
    case Action::admin:
      return "admin";
    case Action::create_session:
      return "create_session";
    case Action::manage_sessions:
      return "manage_sessions";
  }
  return "admin";
}

std::optional<Action> parse_action(std::string_view name) {
  for (Action a : kAllActions)
    if (action_name(a) == name) return a;
  return std::nullopt;
}

std::string action_names() {
  std::string out;
  for (Action a : kAllActions) out += (out.empty() ? "" : ", ") + std::string(action_name(a));
  return out;
}

namespace detail {
namespace {

std::vector<Action> read_actions(Reader& r, const YAML::Node& n, const std::string& what) {
  if (!n.IsSequence() || n.size() == 0) fail(n, what + ": expected a list of actions");
  std::vector<Action> out;
  r.items(n, what, [&](const YAML::Node& item) {
    const std::string name = r.string(item, what);
    auto action = parse_action(name);
    if (!action) fail(item, what + ": unknown action '" + name + "' (expected one of: " +
                                action_names() + ")");
    out.push_back(*action);
  });
  return out;
}

Effect read_effect(Reader& r, const YAML::Node& n, const std::string& what) {
  const std::string s = r.string(n, what);
  if (s == "allow") return Effect::allow;
  if (s == "deny") return Effect::deny;
  fail(n, what + ": expected allow or deny, got '" + s + "'");
}

RoleRule read_rule(Reader& r, const YAML::Node& n, const std::string& what) {
  r.only_keys(n, what, {"effect", "actions", "tools", "sessionTemplates", "maxRisk"});
  RoleRule rule;
  for (const char* key : {"effect", "actions"})
    if (!n[key]) r.error(n, what + ": missing " + key);
  // Every rule names what it is about: tools, session templates, or both.
  if (!n["tools"] && !n["sessionTemplates"]) r.error(n, what + ": missing tools (or sessionTemplates)");
  r.field(n, "effect", [&](const YAML::Node& v) { rule.effect = read_effect(r, v, what + ".effect"); });
  r.field(n, "actions",
          [&](const YAML::Node& v) { rule.actions = read_actions(r, v, what + ".actions"); });
  r.field(n, "tools", [&](const YAML::Node& v) {
    rule.tools = r.strings(v, what + ".tools");
    if (rule.tools.empty()) fail(v, what + ".tools: expected at least one name or glob");
  });
  r.field(n, "sessionTemplates", [&](const YAML::Node& v) {
    rule.session_templates = r.strings(v, what + ".sessionTemplates");
    if (rule.session_templates.empty()) fail(v, what + ".sessionTemplates: expected at least one name or glob");
  });
  r.field(n, "maxRisk", [&](const YAML::Node& v) {
    rule.max_risk = r.risk(v, what + ".maxRisk");
    // A deny rule denies whatever the risk; a bound on it would read as if it did not.
    if (n["effect"] && n["effect"].IsScalar() && n["effect"].Scalar() == "deny")
      fail(v, what + ".maxRisk: only an allow rule has one");
  });
  return rule;
}

Role read_role(Reader& r, const YAML::Node& n, const std::string& what) {
  r.only_keys(n, what, {"name", "rules"});
  Role role;
  if (!n["name"]) r.error(n, what + ": missing name");
  if (!n["rules"]) r.error(n, what + ": missing rules");
  r.field(n, "name", [&](const YAML::Node& v) {
    role.name = r.string(v, what + ".name");
    if (role.name.empty()) fail(v, what + ".name: empty");
  });
  const std::string rules_what = role.name.empty() ? what : "role " + role.name;
  r.field(n, "rules", [&](const YAML::Node& v) {
    std::size_t i = 0;
    r.items(v, rules_what + ".rules", [&](const YAML::Node& item) {
      role.rules.push_back(read_rule(r, item, rules_what + ".rules[" + std::to_string(i++) + "]"));
    });
  });
  return role;
}

UserMatch read_user(Reader& r, const YAML::Node& n, const std::string& what,
                    const IdentityConfig& identity) {
  r.only_keys(n, what, {"issuer", "claim", "value"});
  UserMatch u;
  for (const char* key : {"issuer", "claim", "value"})
    if (!n[key]) r.error(n, what + ": missing " + key);
  r.field(n, "issuer", [&](const YAML::Node& v) {
    u.issuer = r.string(v, what + ".issuer");
    check_issuer_name(v, what + ".issuer", u.issuer, identity);
  });
  r.field(n, "claim", [&](const YAML::Node& v) {
    u.claim = r.string(v, what + ".claim");
    if (u.claim.empty()) fail(v, what + ".claim: empty");
  });
  r.field(n, "value", [&](const YAML::Node& v) { u.value = r.string(v, what + ".value"); });
  return u;
}

RoleBinding read_binding(Reader& r, const YAML::Node& n, const std::string& what,
                         const IdentityConfig& identity, const std::vector<Role>& roles) {
  r.only_keys(n, what, {"role", "users"});
  RoleBinding b;
  if (!n["role"]) r.error(n, what + ": missing role");
  if (!n["users"]) r.error(n, what + ": missing users");
  r.field(n, "role", [&](const YAML::Node& v) {
    b.role = r.string(v, what + ".role");
    for (const auto& role : roles)
      if (role.name == b.role) return;
    fail(v, what + ".role: no role named '" + b.role + "' in roles");
  });
  r.field(n, "users", [&](const YAML::Node& v) {
    if (!v.IsSequence() || v.size() == 0) fail(v, what + ".users: expected a list of users");
    std::size_t i = 0;
    r.items(v, what + ".users", [&](const YAML::Node& item) {
      b.users.push_back(read_user(r, item, what + ".users[" + std::to_string(i++) + "]", identity));
    });
  });
  return b;
}

}  // namespace

// Roles are pushed even when a rule is wrong, so that a binding naming one is not also an error.
void read_roles(Reader& r, const YAML::Node& n, std::vector<Role>& out) {
  std::set<std::string> names;
  std::size_t i = 0;
  r.items(n, "roles", [&](const YAML::Node& item) {
    auto role = read_role(r, item, "roles[" + std::to_string(i++) + "]");
    if (!role.name.empty() && !names.insert(role.name).second)
      fail(item, "roles: '" + role.name + "' is defined twice");
    out.push_back(std::move(role));
  });
}

void read_bindings(Reader& r, const YAML::Node& n, const IdentityConfig& identity,
                   const std::vector<Role>& roles, std::vector<RoleBinding>& out) {
  std::size_t i = 0;
  r.items(n, "bindings", [&](const YAML::Node& item) {
    out.push_back(read_binding(r, item, "bindings[" + std::to_string(i++) + "]", identity, roles));
  });
}

}  // namespace detail
}  // namespace airlock::policy
