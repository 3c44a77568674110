// The configuration of identity and RBAC (issue #15): the token issuers Airlock trusts
// (`identity`), the roles that say what a user may do (`roles`), and which users have which
// role (`bindings`). The decision itself is access::decide (src/access/); docs/config.md
// documents every field.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/risk.hpp"

namespace airlock::policy {

// The longest lifetime of the tokens Airlock itself issues.
inline constexpr std::chrono::minutes kMaxTokenLifetime{15};

// A token issuer (an OpenID provider, a Kubernetes cluster): tokens whose `iss` is `issuer`
// and whose `aud` names one of `audiences` are verified with its keys.
struct IssuerConfig {
  std::string name;                    // how bindings and principals refer to it
  std::string issuer;                  // the tokens' `iss`, exactly
  std::vector<std::string> audiences;  // at least one
  std::string jwks_file;               // an absolute path (resolved at load), or empty
  std::string jwks_url;                // http:// or https://, or empty; exactly one is set
};

// identity.console: the web console's "Sign in with <issuer>" (OpenID Connect, the
// authorization code flow with PKCE; docs/console.md). The ID token it gets is verified as any
// user token of `issuer`, so `client_id` must be one of that issuer's audiences.
struct ConsoleSignInConfig {
  std::string issuer;              // an IssuerConfig name
  std::string client_id;           // as registered at the provider
  std::string redirect_uri;        // http(s)://<the console's origin>/console/oidc/callback, registered too
  std::string client_secret_file;  // a confidential client's secret (sent as client_secret_post); "": none
  std::string discovery_url;       // "": <the issuer's iss>/.well-known/openid-configuration
};

struct IdentityConfig {
  std::vector<IssuerConfig> issuers;
  std::optional<ConsoleSignInConfig> console;
  // Whether a user's token that carries `act` (it was itself obtained by delegation) is
  // accepted as a subject.
  bool allow_delegated_subjects = false;
  std::chrono::milliseconds token_lifetime = kMaxTokenLifetime;

  const IssuerConfig* find_issuer(std::string_view name) const;
};

// What a rule allows or denies doing. invoke and approve are done to a tool (a rule's tools
// scope them); create_session to a session template (its sessionTemplates scope it); the
// others to neither. manage_sessions lists and ends every owner's sessions.
enum class Action {
  invoke, approve, read_invocations, read_all_invocations, read_audit, admin, create_session, manage_sessions
};
inline constexpr Action kAllActions[] = {Action::invoke,           Action::approve,
                                         Action::read_invocations, Action::read_all_invocations,
                                         Action::read_audit,       Action::admin,
                                         Action::create_session,   Action::manage_sessions};
std::string_view action_name(Action a);
std::optional<Action> parse_action(std::string_view name);
// "invoke, approve, ..., admin": for messages that list what is allowed.
std::string action_names();
constexpr bool is_tool_action(Action a) { return a == Action::invoke || a == Action::approve; }
constexpr bool is_template_action(Action a) { return a == Action::create_session; }

enum class Effect { allow, deny };

struct RoleRule {
  Effect effect = Effect::allow;
  std::vector<Action> actions;       // at least one
  std::vector<std::string> tools;    // names or globs; scope invoke and approve only
  std::vector<std::string> session_templates;  // names or globs; scope create_session only
  std::optional<Risk> max_risk;      // allow rules only: tools over it are not allowed by it
};

struct Role {
  std::string name;
  std::vector<RoleRule> rules;
};

// A user matches when the token is from `issuer` (an IssuerConfig name) and its claim
// `claim` equals `value` or, when the claim is a list of strings, contains it.
struct UserMatch {
  std::string issuer;
  std::string claim;  // sub, email, groups, or any string or string-array claim
  std::string value;
};

struct RoleBinding {
  std::string role;              // a Role's name
  std::vector<UserMatch> users;  // any one of them matching binds the role
};

// An agent that authenticates with a JWT instead of (or as well as) an API key.
struct PrincipalJwt {
  std::string issuer;   // an IssuerConfig name
  std::string subject;  // the token's `sub`, exactly
};

}  // namespace airlock::policy
