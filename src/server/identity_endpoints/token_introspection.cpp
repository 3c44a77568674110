#include "server/identity_endpoints/token_introspection.hpp"

#include "server/identity_endpoints/token_exchange.hpp"

namespace airlock::server {
namespace {

using nlohmann::json;

HttpResponse no_store(HttpResponse resp) {
  resp.headers.emplace_back("Cache-Control", "no-store");
  return resp;
}

HttpResponse inactive() { return no_store(json_response(200, {{"active", false}})); }

std::string text(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The configured issuer of a token's user: an exchanged token's airlock_user.issuer, a
// `token` credential's airlock_user_issuer; "" for a token that is an agent's own.
std::string user_issuer(const identity::VerifiedToken& t) {
  if (auto user = t.claims.find("airlock_user"); user != t.claims.end() && user->is_object())
    return text(*user, "issuer");
  return text(t.claims, "airlock_user_issuer");
}

// The agent a token was issued to: act.sub, or sub when it acts for no user.
std::string agent_of(const identity::VerifiedToken& t) {
  if (t.act) return text(*t.act, "sub");
  return user_issuer(t).empty() ? t.sub : std::string();
}

bool owns(const pipeline::Caller& caller, const identity::VerifiedToken& t) {
  if (caller.actor && caller.actor->principal == agent_of(t)) return true;
  const std::string issuer = user_issuer(t);
  return caller.subject && !issuer.empty() && caller.subject->issuer == issuer && caller.subject->sub == t.sub;
}

// The caller and the form's `token`, or the answer that refuses the request.
std::variant<std::string, HttpResponse> token_of(const HttpRequest& request,
                                                 const pipeline::Authenticator& authenticator,
                                                 std::optional<pipeline::Caller>& caller) {
  auto who = authenticator.authenticate(request.headers, request.client_certificate ? &*request.client_certificate : nullptr);
  if (const auto* refused = std::get_if<pipeline::InvocationError>(&who)) {
    auto resp = refusal_response(*refused);
    resp.headers.emplace_back("WWW-Authenticate", "Bearer");
    return resp;
  }
  caller = std::get<pipeline::Caller>(std::move(who));
  if (!is_form(request)) return oauth_error(400, "invalid_request", "the body must be application/x-www-form-urlencoded");
  auto form = parse_form(request.body);
  if (!form) return oauth_error(400, "invalid_request", form.error().message);
  auto token = form->find("token");
  if (token == form->end()) return oauth_error(400, "invalid_request", "token is missing");
  return token->second;
}

}  // namespace

Result<std::unique_ptr<TokenIntrospection>> TokenIntrospection::create(const identity::TokenSigner& signer,
                                                                       creds::RevokedTokens& revoked) {
  identity::Verifier verifier;
  identity::IssuerConfig own;
  own.name = pipeline::kAirlockTokenIssuer;
  own.issuer = pipeline::kAirlockTokenIssuer;
  own.audiences = {pipeline::kAirlockTokenAudience};  // not checked here: any_audience
  own.jwks_document = signer.jwks().dump();
  if (auto added = verifier.add_issuer(own); !added) return added.error();
  return std::unique_ptr<TokenIntrospection>(new TokenIntrospection(std::move(verifier), revoked));
}

std::optional<identity::VerifiedToken> TokenIntrospection::active(const std::string& token) const {
  identity::VerifyOptions options;
  options.allow_act = true;
  options.any_audience = true;
  auto verified = verifier_.verify(token, options);
  // Without a jti a token cannot be revoked, so it is not vouched for (Airlock's all have one).
  if (!verified || verified->jti.empty() || revoked_.is_revoked(verified->jti)) return std::nullopt;
  return std::move(*verified);
}

HttpResponse TokenIntrospection::introspect(const HttpRequest& request,
                                            const pipeline::Authenticator& authenticator) const {
  std::optional<pipeline::Caller> caller;
  auto token = token_of(request, authenticator, caller);
  if (auto* refused = std::get_if<HttpResponse>(&token)) return std::move(*refused);
  auto t = active(std::get<std::string>(token));
  if (!t) return inactive();
  json answer = {{"active", true}};
  for (const char* name : {"iss", "sub", "aud", "scope", "exp", "iat", "nbf", "jti", "act"})
    if (auto it = t->claims.find(name); it != t->claims.end()) answer[name] = *it;
  if (const std::string agent = agent_of(*t); !agent.empty()) answer["client_id"] = agent;
  answer["token_type"] = "Bearer";
  return no_store(json_response(200, answer));
}

HttpResponse TokenIntrospection::revoke(const HttpRequest& request, const pipeline::Authenticator& authenticator) const {
  std::optional<pipeline::Caller> caller;
  auto token = token_of(request, authenticator, caller);
  if (auto* refused = std::get_if<HttpResponse>(&token)) return std::move(*refused);
  auto t = active(std::get<std::string>(token));
  if (!t) return no_store(json_response(200, json::object()));  // invalid, expired or already revoked
  if (!owns(*caller, *t))
    return oauth_error(400, "unauthorized_client", "the token was not issued to this caller (nor for its user)");
  const auto expires = std::chrono::system_clock::time_point(std::chrono::seconds(t->exp));
  if (auto stored = revoked_.revoke(t->jti, expires); !stored)
    return oauth_error(503, "temporarily_unavailable", "the revocation could not be stored; retry");
  return no_store(json_response(200, json::object()));
}

}  // namespace airlock::server
