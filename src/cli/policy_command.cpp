// airlock policy check --config FILE [--agent NAME]
//                      [--user-claims JSON [--user-issuer NAME] | --user-token JWT]
//                      [--tool NAME] [--action invoke] [--json]
// What the access policy decides for a call, and by which rule, without a daemon (like
// `kubectl auth can-i`). Exit 0 allowed, 1 denied, 2 usage or configuration error.
#include <iostream>
#include <optional>

#include "access/decide.hpp"
#include "cli/commands.hpp"
#include "common/json_limits.hpp"
#include "pipeline/authenticator.hpp"

namespace airlock::cli {
namespace {

struct CheckOptions {
  std::string config_file;
  std::string agent;
  std::string user_claims;  // a JSON object, as a verified token's claims
  std::string user_issuer;  // the name of one of identity.issuers
  std::string user_token;   // a user's JWT, verified against its issuer's keys
  std::string tool;
  std::string action = "invoke";
  bool json = false;
};

policy::Action action_of(const CheckOptions& o) {
  auto action = policy::parse_action(o.action);
  if (!action)
    throw UsageError{"--action: unknown action '" + o.action + "' (expected one of: " +
                     policy::action_names() + ")"};
  if ((policy::is_tool_action(*action) || policy::is_template_action(*action)) && o.tool.empty())
    throw UsageError{"--tool is required for " + o.action + " (for create_session: the session template)"};
  return *action;
}

// The issuer named, or the only one configured.
std::string issuer_of(const policy::Config& config, const CheckOptions& o) {
  if (!o.user_issuer.empty()) {
    if (!config.identity.find_issuer(o.user_issuer))
      throw UsageError{"--user-issuer: no issuer named '" + o.user_issuer + "' in " +
                       config.path};
    return o.user_issuer;
  }
  if (config.identity.issuers.size() != 1)
    throw UsageError{"--user-issuer is required: " + config.path + " has " +
                     std::to_string(config.identity.issuers.size()) + " issuers, not one"};
  return config.identity.issuers.front().name;
}

access::Subject subject_of(const policy::Config& config, const CheckOptions& o) {
  auto claims = parse_json_bounded(o.user_claims, kDefaultMaxJsonDepth);
  if (!claims) throw UsageError{"--user-claims: " + claims.error().message};
  if (!claims->is_object()) throw UsageError{"--user-claims: expected a JSON object"};
  const auto sub = claims->find("sub");
  if (sub == claims->end() || !sub->is_string() || sub->get<std::string>().empty())
    throw UsageError{"--user-claims: needs \"sub\", a non-empty string"};
  return access::Subject{issuer_of(config, o), sub->get<std::string>(), std::move(*claims)};
}

// A real token, verified as the daemon verifies a user's token (its issuer's JWKS, exp, aud,
// ...). Airlock's own tokens are not accepted here: there is no signer without a daemon.
access::Subject subject_of_token(std::shared_ptr<const policy::Config> config, const CheckOptions& o) {
  auto authenticator = pipeline::Authenticator::create(std::move(config), nullptr);
  if (!authenticator) throw UsageError{authenticator.error().message};
  auto user = (*authenticator)->verify_user_token(o.user_token);
  if (!user)
    throw UsageError{"--user-token is not valid: " + user.error().code + ": " + user.error().message};
  return std::move(user->subject);
}

void print(const access::Decision& d, const CheckOptions& o, const policy::Config& config,
           const access::Subject* user) {
  if (o.json) {
    nlohmann::json out = access::to_json(d);
    out["action"] = o.action;
    out["tool"] = o.tool;
    out["agent"] = o.agent.empty() ? nlohmann::json() : nlohmann::json(o.agent);
    out["user"] = user ? nlohmann::json{{"issuer", user->issuer},
                                        {"sub", user->sub},
                                        {"roles", access::roles_of(config, *user)}}
                       : nlohmann::json();
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << (d.allowed ? "allowed" : "denied (" + d.kind + ")") << "\n"
            << "rule:   " << d.rule << "\n"
            << "reason: " << d.reason << "\n";
  if (user) {
    std::string roles;
    for (const auto& r : access::roles_of(config, *user)) roles += (roles.empty() ? "" : ", ") + r;
    std::cout << "roles:  " << (roles.empty() ? "none" : roles) << "\n";
  }
}

int check_command(const CheckOptions& o) {
  try {
    const policy::Action action = action_of(o);
    if (!o.user_claims.empty() && !o.user_token.empty())
      throw UsageError{"give --user-claims or --user-token, not both"};
    if (o.agent.empty() && o.user_claims.empty() && o.user_token.empty())
      throw UsageError{"give --agent, a user (--user-claims or --user-token), or both"};
    if (!o.user_issuer.empty() && o.user_claims.empty())
      throw UsageError{"--user-issuer goes with --user-claims (a token names its issuer)"};
    auto loaded = policy::load_config(o.config_file);
    if (!loaded) throw UsageError{loaded.error().message};
    const auto config = std::make_shared<const policy::Config>(std::move(*loaded));
    if (!o.agent.empty() && !config->find_principal(o.agent))
      throw UsageError{"--agent: no principal named '" + o.agent + "' in " + o.config_file};
    std::optional<access::Subject> user;
    if (!o.user_claims.empty()) user = subject_of(*config, o);
    if (!o.user_token.empty()) user = subject_of_token(config, o);
    const access::Actor agent{o.agent};
    const auto decision = access::decide(*config, o.agent.empty() ? nullptr : &agent,
                                         user ? &*user : nullptr, action, o.tool);
    print(decision, o, *config, user ? &*user : nullptr);
    return decision.allowed ? 0 : 1;
  } catch (const UsageError& e) {
    std::cerr << "airlock policy check: " << e.message << "\n";
    return 2;
  }
}

}  // namespace

void add_policy_command(CLI::App& app, ExitStatus& status) {
  auto* policy = app.add_subcommand(kPolicyCommand.name, kPolicyCommand.summary);
  policy->require_subcommand(1);
  auto opts = std::make_shared<CheckOptions>();
  auto* check = policy->add_subcommand(
      "check", "Print whether the configuration allows a call, and the rule that decides");
  check->add_option("--config", opts->config_file, "The daemon's configuration file")->required();
  check->add_option("--agent", opts->agent, "The principal making the call");
  check->add_option("--user-claims", opts->user_claims,
                    "The claims of the user's token, as JSON: {\"sub\": ..., \"groups\": [...]}");
  check->add_option("--user-token", opts->user_token,
                    "The user's token (a JWT), verified against identity.issuers like the daemon does");
  check->add_option("--user-issuer", opts->user_issuer,
                    "The user's issuer (a name in identity.issuers; default: the only one)");
  check->add_option("--tool", opts->tool,
                    "The tool (required for invoke and approve), or the session template (create_session)");
  check->add_option("--action", opts->action, "invoke (default), approve, read_invocations, "
                                              "read_all_invocations, read_audit, admin, "
                                              "create_session or manage_sessions");
  check->add_flag("--json", opts->json, "Print the decision as JSON");
  check->callback([opts, &status] { status.code = check_command(*opts); });
}

}  // namespace airlock::cli
