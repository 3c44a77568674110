#include "creds/providers/token_provider.hpp"

#include <algorithm>

#include "common/split.hpp"
#include "creds/scopes.hpp"

namespace airlock::creds {
namespace {

using nlohmann::json;

std::int64_t seconds(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

Result<const policy::TokenCredential*> token_spec(const policy::CredentialSpec& spec, const std::string& issuer) {
  const auto* token = std::get_if<policy::TokenCredential>(&spec.source);
  if (!token) return Error::make("invalid_argument", spec.env + ": not a token credential");
  if (token->audience.empty()) return Error::make("invalid_argument", spec.env + ": a token credential needs an audience");
  // A token for Airlock's audience would let a tool call Airlock's API as the agent.
  if (token->audience == kAirlockAudience || token->audience == issuer)
    return Error::make("invalid_argument", spec.env + ": the audience '" + token->audience +
                                               "' is Airlock's own: a tool's token must not authenticate to Airlock");
  return token;
}

}  // namespace

Result<json> TokenProvider::target(const policy::CredentialSpec& spec, const Lease& lease) const {
  if (auto token = token_spec(spec, issuer_); !token) return token.error();
  return json{{"jti", lease.id}};
}

Result<json> TokenProvider::claims(const policy::CredentialSpec& spec, const Lease& lease,
                                   const LeaseContext& context) const {
  auto token = token_spec(spec, issuer_);
  if (!token) return token.error();
  if (lease.id.empty()) return Error::make("invalid_argument", "the lease has no id (the token's jti)");
  auto scopes = narrowed_scopes((*token)->scopes, context);
  if (!scopes) return scopes.error();
  const std::int64_t now = seconds(context.now);
  const auto ttl = std::min<std::chrono::seconds>((*token)->ttl, context.max_ttl);
  json claims = {{"iss", issuer_},
                 {"aud", (*token)->audience},
                 {"iat", now},
                 {"nbf", now},
                 {"exp", now + ttl.count()},
                 {"jti", lease.id},
                 {"airlock_invocation", context.invocation_id},
                 {"airlock_tool", context.tool}};
  if (context.user_sub.empty()) {
    claims["sub"] = context.agent;  // the agent's own credential: it acts for no one
  } else {
    claims["sub"] = context.user_sub;
    claims["act"] = {{"sub", context.agent}};
    claims["airlock_user_issuer"] = context.user_issuer;
  }
  if (!scopes->empty()) claims["scope"] = scope_text(*scopes);
  return claims;
}

Result<Issued> TokenProvider::issue(const policy::CredentialSpec& spec, const Lease& lease,
                                    const LeaseContext& context) {
  auto claims = this->claims(spec, lease, context);
  if (!claims) return claims.error();
  auto jwt = signer_.issue(*claims);
  if (!jwt) return Error::make("credential_unavailable", "signing the token: " + jwt.error().message);
  Issued out;
  out.value = std::move(*jwt);
  if (auto scope = claims->find("scope"); scope != claims->end())
    out.scopes = split_nonempty(scope->get<std::string>(), ' ');
  out.expires_at = Clock::time_point(std::chrono::seconds((*claims)["exp"].get<std::int64_t>()));
  return out;
}

Status TokenProvider::revoke(const Lease& lease, const std::string* /*value*/) {
  // The jti is the lease's id; the target says so, written before the token existed.
  const auto jti = lease.target.find("jti");
  const std::string id = jti != lease.target.end() && jti->is_string() ? jti->get<std::string>() : lease.id;
  // A lease without its end (not recorded) is kept as long as any token credential can live.
  const auto until = lease.expires_at != Clock::time_point{} ? lease.expires_at : Clock::now() + policy::kMaxCredentialTtl;
  return revoked_.revoke(id, until);
}

}  // namespace airlock::creds
