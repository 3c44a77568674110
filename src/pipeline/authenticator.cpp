#include "pipeline/authenticator.hpp"

#include <algorithm>

#include "common/digest.hpp"
#include "common/split.hpp"

namespace airlock::pipeline {
namespace {

bool looks_like_jwt(const std::string& token) {
  return std::count(token.begin(), token.end(), '.') == 2;
}

InvocationError unauthenticated(std::string message) {
  return deny(ErrorKind::unauthenticated, std::move(message));
}

InvocationError token_refused(const char* which, const Error& e) {
  return unauthenticated(std::string(which) + " is not valid: " + e.code + ": " + e.message);
}

identity::IssuerConfig issuer_for_verifier(const policy::IssuerConfig& issuer) {
  identity::IssuerConfig out;
  out.name = issuer.name;
  out.issuer = issuer.issuer;
  out.audiences = issuer.audiences;
  out.jwks_file = issuer.jwks_file;
  out.jwks_url = issuer.jwks_url;
  return out;
}

std::string jti_digest(const std::string& jti) { return jti.empty() ? std::string() : sha256_hex(jti); }

// The principal whose jwt names this token's issuer and subject, or null.
const policy::Principal* agent_of(const policy::Config& config, const identity::VerifiedToken& t) {
  for (const auto& p : config.principals)
    if (p.jwt && p.jwt->issuer == t.issuer_name && p.jwt->subject == t.sub) return &p;
  return nullptr;
}

// An Airlock token's user: {"airlock_user": {"issuer": NAME, "claims": {...}}} and its sub.
std::optional<Subject> user_of_airlock_token(const identity::VerifiedToken& t) {
  const auto it = t.claims.find("airlock_user");
  if (it == t.claims.end() || !it->is_object() || t.sub.empty()) return std::nullopt;
  const auto issuer = it->find("issuer");
  const auto claims = it->find("claims");
  if (issuer == it->end() || !issuer->is_string() || claims == it->end() || !claims->is_object())
    return std::nullopt;
  return Subject{issuer->get<std::string>(), t.sub, *claims};
}

// "a b": the tools an Airlock token was scoped to at the exchange.
std::vector<std::string> scope_of(const identity::VerifiedToken& t) {
  const auto it = t.claims.find("scope");
  if (it == t.claims.end() || !it->is_string()) return {};
  return split_nonempty(it->get<std::string>(), ' ');
}

std::string act_subject(const identity::VerifiedToken& t) {
  if (!t.act || !t.act->is_object()) return {};
  const auto sub = t.act->find("sub");
  return sub != t.act->end() && sub->is_string() ? sub->get<std::string>() : std::string();
}

}  // namespace

std::optional<std::string> bearer_token(const Headers& headers) {
  auto it = headers.find("authorization");
  if (it == headers.end()) return std::nullopt;
  const std::string& v = it->second;
  if (v.size() < 7 || !(v.compare(0, 7, "Bearer ") == 0 || v.compare(0, 7, "bearer ") == 0))
    return std::nullopt;
  return v.substr(7);
}

Result<std::shared_ptr<const Authenticator>> Authenticator::create(
    std::shared_ptr<const policy::Config> config, const identity::TokenSigner* signer,
    identity::VerifierOptions options, RevokedCheck revoked) {
  std::shared_ptr<Authenticator> a(new Authenticator(config, std::move(options)));
  a->revoked_ = std::move(revoked);
  for (const auto& issuer : config->identity.issuers)
    if (auto added = a->verifier_.add_issuer(issuer_for_verifier(issuer)); !added)
      return Error::make("config", "identity.issuers " + issuer.name + ": " + added.error().message);
  if (signer) {
    identity::IssuerConfig own;
    own.name = kAirlockTokenIssuer;
    own.issuer = kAirlockTokenIssuer;
    own.audiences = {kAirlockTokenAudience};
    own.jwks_document = signer->jwks().dump();
    if (auto added = a->verifier_.add_issuer(own); !added)
      return Error::make("config", "Airlock's own token issuer: " + added.error().message);
    a->accepts_airlock_tokens_ = true;
  }
  return std::shared_ptr<const Authenticator>(std::move(a));
}

std::variant<Caller, InvocationError> Authenticator::authenticate(
    const Headers& headers, const policy::ClientCertificate* certificate) const {
  auto bearer = bearer_token(headers);
  std::variant<Caller, InvocationError> who = unauthenticated("");
  if (bearer && !bearer->empty()) {
    who = from_bearer(*bearer);
  } else if (certificate) {
    const policy::Principal* agent = config_->find_principal_by_certificate(*certificate);
    if (!agent)
      return unauthenticated("the client certificate (" + certificate->subject +
                             ") is no principal's, and no bearer credential was sent");
    who = Caller{Actor{agent->name}, std::nullopt, {}, "certificate", {}, {}};
  } else {
    return unauthenticated("no credential: send Authorization: Bearer <API key or token>");
  }
  auto* caller = std::get_if<Caller>(&who);
  if (!caller) return who;
  if (auto subject = headers.find(kSubjectTokenHeader); subject != headers.end())
    if (auto refused = add_subject(*caller, subject->second)) return std::move(*refused);
  return who;
}

std::variant<Caller, InvocationError> Authenticator::from_bearer(const std::string& token) const {
  if (!looks_like_jwt(token)) {
    auto agent = authenticate_agent(token);
    if (auto* refused = std::get_if<InvocationError>(&agent)) return std::move(*refused);
    return Caller{std::get<Actor>(std::move(agent)), std::nullopt, {}, "api_key", {}, {}};
  }
  // `act` is read here, not refused: Airlock's tokens carry it; from_token decides.
  auto verified = verifier_.verify(token, {/*allow_act=*/true});
  if (!verified && verified.error().code == "malformed" && config_->find_principal_by_key(token))
    return Caller{Actor{config_->find_principal_by_key(token)->name}, std::nullopt, {}, "api_key", {}, {}};
  if (!verified) return token_refused("the bearer token", verified.error());
  auto caller = from_token(*verified);
  if (auto* c = std::get_if<Caller>(&caller); c && c->credential == "user_token") c->user_token = token;
  return caller;
}

std::variant<Caller, InvocationError> Authenticator::from_token(const identity::VerifiedToken& t) const {
  if (accepts_airlock_tokens_ && t.iss == kAirlockTokenIssuer) {
    const std::string agent = act_subject(t);
    auto user = user_of_airlock_token(t);
    if (agent.empty() || !user) return unauthenticated("the bearer token is an Airlock token without act.sub or its user");
    if (is_revoked(t)) return unauthenticated("the bearer token is not valid: it was revoked");
    if (!config_->find_principal(agent))
      return unauthenticated("the bearer token was issued to agent '" + agent + "', which is not configured");
    return Caller{Actor{agent}, std::move(user), jti_digest(t.jti), "airlock_token", scope_of(t), {}};
  }
  if (const auto* agent = agent_of(*config_, t)) {
    if (t.act) return unauthenticated("the bearer token of agent '" + agent->name + "' carries act: agents do not act through another");
    return Caller{Actor{agent->name}, std::nullopt, {}, "jwt", {}, {}};
  }
  // A person calling directly with their own token.
  if (t.act && !config_->identity.allow_delegated_subjects)
    return unauthenticated("the bearer token is not valid: delegation_not_allowed: it carries act "
                           "(identity.allowDelegatedSubjects is false)");
  if (t.sub.empty()) return unauthenticated("the bearer token names no user: it has no sub");
  return Caller{std::nullopt, Subject{t.issuer_name, t.sub, t.claims}, jti_digest(t.jti), "user_token", {}, {}};
}

std::optional<InvocationError> Authenticator::add_subject(Caller& caller, const std::string& token) const {
  if (!caller.actor || caller.subject)
    return unauthenticated(std::string("Airlock-Subject-Token names the user an agent acts for; ") +
                           (caller.subject ? "this call already has its user (from its bearer token)"
                                           : "this call has no agent"));
  if (!looks_like_jwt(token)) return unauthenticated("Airlock-Subject-Token is not valid: malformed: not a JWT");
  auto verified = verifier_.verify(token, {/*allow_act=*/true});
  if (!verified) return token_refused("Airlock-Subject-Token", verified.error());
  const auto& t = *verified;
  if (accepts_airlock_tokens_ && t.iss == kAirlockTokenIssuer) {
    // An Airlock token names its agent: only that agent may present it (confused deputy).
    if (act_subject(t) != caller.actor->principal)
      return unauthenticated("Airlock-Subject-Token was issued to agent '" + act_subject(t) + "', not to '" +
                             caller.actor->principal + "'");
    auto user = user_of_airlock_token(t);
    if (!user) return unauthenticated("Airlock-Subject-Token is an Airlock token without its user");
    if (is_revoked(t)) return unauthenticated("Airlock-Subject-Token is not valid: it was revoked");
    caller.subject = std::move(user);
    caller.scope = scope_of(t);
  } else {
    if (t.act && !config_->identity.allow_delegated_subjects)
      return unauthenticated("Airlock-Subject-Token is not valid: delegation_not_allowed: it carries act "
                             "(identity.allowDelegatedSubjects is false)");
    if (t.sub.empty()) return unauthenticated("Airlock-Subject-Token names no user: it has no sub");
    caller.subject = Subject{t.issuer_name, t.sub, t.claims};
    caller.user_token = token;
  }
  caller.subject_jti_sha256 = jti_digest(t.jti);
  return std::nullopt;
}

std::variant<Actor, InvocationError> Authenticator::authenticate_agent(const std::string& credential) const {
  if (looks_like_jwt(credential)) {
    auto verified = verifier_.verify(credential);
    if (!verified) return token_refused("the agent's token", verified.error());
    if (verified->iss == kAirlockTokenIssuer)
      return unauthenticated("the agent's credential is an Airlock token: use the agent's own key or token");
    const auto* agent = agent_of(*config_, *verified);
    if (!agent)
      return unauthenticated("no principal has jwt {issuer: " + verified->issuer_name + ", subject: " +
                             verified->sub + "}");
    return Actor{agent->name};
  }
  const policy::Principal* found = config_->find_principal_by_key(credential);
  if (!found) return unauthenticated("the API key is not valid");
  return Actor{found->name};
}

Result<VerifiedUser> Authenticator::verify_user_token(const std::string& token) const {
  auto verified = verifier_.verify(token, {config_->identity.allow_delegated_subjects});
  if (!verified) return verified.error();
  if (verified->iss == kAirlockTokenIssuer)
    return Error::make("invalid_grant", "an Airlock token is not a user's token");
  if (agent_of(*config_, *verified))
    return Error::make("invalid_grant", "the token is an agent's (principals[].jwt), not a user's");
  if (verified->sub.empty()) return Error::make("invalid_grant", "the token names no user: it has no sub");
  return VerifiedUser{Subject{verified->issuer_name, verified->sub, verified->claims},
                      jti_digest(verified->jti), verified->exp};
}

}  // namespace airlock::pipeline
