#include "server/identity_endpoints/token_exchange.hpp"

#include <openssl/rand.h>

#include <chrono>
#include <set>

#include "common/hex.hpp"
#include "common/split.hpp"
#include "identity/verifier.hpp"

namespace airlock::server {
namespace {

using nlohmann::json;

constexpr const char* kAccessTokenType = "urn:ietf:params:oauth:token-type:access_token";
constexpr const char* kIdTokenType = "urn:ietf:params:oauth:token-type:id_token";
constexpr std::size_t kMaxScopeTools = 64;

Result<std::string> form_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      if (i + 2 >= text.size()) return Error::make("invalid_request", "a truncated %-escape");
      const int hi = hex_digit_value(text[i + 1]), lo = hex_digit_value(text[i + 2]);
      if (hi < 0 || lo < 0) return Error::make("invalid_request", "a malformed %-escape");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string random_jti() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return {};
  return hex_encode(bytes, sizeof bytes);
}

// The user's claims the bindings of their issuer look at (and sub): what RBAC needs later.
json claims_for_bindings(const policy::Config& config, const pipeline::Subject& user) {
  json kept = json::object();
  for (const auto& binding : config.bindings)
    for (const auto& match : binding.users)
      if (match.issuer == user.issuer && match.claim != "sub" && user.claims.contains(match.claim))
        kept[match.claim] = user.claims.at(match.claim);
  return kept;
}

// "csv-read weather": the tools the token may be used for (no scope: every tool).
Result<std::vector<std::string>> scope_tools(const std::string& scope) {
  std::vector<std::string> tools;
  std::set<std::string> seen;
  for (auto& tool : split_nonempty(scope, ' '))
    if (seen.insert(tool).second) tools.push_back(std::move(tool));
  if (tools.size() > kMaxScopeTools)
    return Error::make("invalid_scope", "the scope names more than " + std::to_string(kMaxScopeTools) + " tools");
  return tools;
}

// The agent: actor_token (with its type), else the Authorization header, else the client
// certificate.
std::variant<pipeline::Actor, HttpResponse> exchange_actor(const HttpRequest& request,
                                                           const std::map<std::string, std::string>& form,
                                                           const pipeline::Authenticator& authenticator) {
  std::string credential;
  if (auto it = form.find("actor_token"); it != form.end()) {
    auto type = form.find("actor_token_type");
    if (type == form.end()) return oauth_error(400, "invalid_request", "actor_token needs actor_token_type");
    if (type->second != kJwtTokenType && type->second != kAccessTokenType)
      return oauth_error(400, "invalid_request", "actor_token_type must be " + std::string(kJwtTokenType) +
                                                     " or " + kAccessTokenType);
    credential = it->second;
  } else if (auto bearer = pipeline::bearer_token(request.headers)) {
    credential = *bearer;
  } else if (request.client_certificate) {
    const auto* agent = authenticator.config().find_principal_by_certificate(*request.client_certificate);
    if (!agent) return oauth_error(401, "invalid_client", "the client certificate is no principal's");
    return pipeline::Actor{agent->name};
  } else {
    return oauth_error(401, "invalid_client", "the agent's credential is missing: actor_token or Authorization: Bearer");
  }
  auto agent = authenticator.authenticate_agent(credential);
  if (auto* refused = std::get_if<pipeline::InvocationError>(&agent))
    return oauth_error(401, "invalid_client", refused->message);
  return std::get<pipeline::Actor>(agent);
}

std::optional<HttpResponse> check_request_shape(const std::map<std::string, std::string>& form) {
  auto grant = form.find("grant_type");
  if (grant == form.end()) return oauth_error(400, "invalid_request", "grant_type is missing");
  if (grant->second != kTokenExchangeGrant)
    return oauth_error(400, "unsupported_grant_type", "only " + std::string(kTokenExchangeGrant) + " is supported");
  if (!form.count("subject_token")) return oauth_error(400, "invalid_request", "subject_token is missing");
  auto type = form.find("subject_token_type");
  if (type == form.end()) return oauth_error(400, "invalid_request", "subject_token_type is missing");
  if (type->second != kJwtTokenType && type->second != kAccessTokenType && type->second != kIdTokenType)
    return oauth_error(400, "invalid_request", "subject_token_type must name a JWT (" + std::string(kJwtTokenType) + ")");
  if (auto audience = form.find("audience"); audience != form.end() && audience->second != pipeline::kAirlockTokenAudience)
    return oauth_error(400, "invalid_target", "the only audience is '" + std::string(pipeline::kAirlockTokenAudience) + "'");
  if (auto resource = form.find("resource"); resource != form.end())
    return oauth_error(400, "invalid_target", "resource is not supported: use audience");
  if (form.count("requested_token_type") && form.at("requested_token_type") != kJwtTokenType &&
      form.at("requested_token_type") != kAccessTokenType)
    return oauth_error(400, "invalid_request", "Airlock issues JWT access tokens only");
  return std::nullopt;
}

}  // namespace

HttpResponse oauth_error(int status, const std::string& error, const std::string& description) {
  auto resp = json_response(status, {{"error", error}, {"error_description", description}});
  resp.headers.emplace_back("Cache-Control", "no-store");
  if (status == 401) resp.headers.emplace_back("WWW-Authenticate", "Bearer");
  return resp;
}

bool is_form(const HttpRequest& request) {
  auto type = request.headers.find("content-type");
  return type != request.headers.end() && type->second.rfind("application/x-www-form-urlencoded", 0) == 0;
}

Result<std::map<std::string, std::string>> parse_form(const std::string& body) {
  std::map<std::string, std::string> form;
  std::size_t start = 0;
  while (start < body.size()) {
    std::size_t end = body.find('&', start);
    if (end == std::string::npos) end = body.size();
    std::string_view pair(body.data() + start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    auto name = form_decode(pair.substr(0, eq));
    auto value = form_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!name) return name.error();
    if (!value) return value.error();
    if (!form.emplace(*name, *value).second)
      return Error::make("invalid_request", "the parameter '" + *name + "' is given twice");
  }
  return form;
}

HttpResponse exchange_token(const HttpRequest& request, const pipeline::Authenticator& authenticator,
                            const identity::TokenSigner& signer) {
  if (!is_form(request))
    return oauth_error(400, "invalid_request", "the body must be application/x-www-form-urlencoded");
  auto form = parse_form(request.body);
  if (!form) return oauth_error(400, "invalid_request", form.error().message);
  if (auto refused = check_request_shape(*form)) return std::move(*refused);
  auto actor = exchange_actor(request, *form, authenticator);
  if (auto* refused = std::get_if<HttpResponse>(&actor)) return std::move(*refused);
  const auto& agent = std::get<pipeline::Actor>(actor);

  auto user = authenticator.verify_user_token(form->at("subject_token"));
  if (!user) return oauth_error(400, "invalid_grant", "subject_token: " + user.error().code + ": " + user.error().message);
  auto scope = scope_tools(form->count("scope") ? form->at("scope") : "");
  if (!scope) return oauth_error(400, "invalid_scope", scope.error().message);
  const auto& config = authenticator.config();
  for (const auto& tool : *scope)
    if (!config.find_tool(tool)) return oauth_error(400, "invalid_scope", "there is no tool named '" + tool + "'");

  const auto now = std::chrono::system_clock::now();
  const std::int64_t iat = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::int64_t exp = iat + std::chrono::duration_cast<std::chrono::seconds>(config.identity.token_lifetime).count();
  // Never outlives the user's token, whatever the form of its exp (an integer, a fraction,
  // 2^64-1). One already past (verified within the clock skew) gets no token at all.
  if (auto user_exp = identity::numeric_date_claim(user->subject.claims, "exp")) exp = std::min(exp, *user_exp);
  if (exp <= iat)
    return oauth_error(400, "invalid_grant",
                       "subject_token: expired: the user's token expires now or has expired (accepted only within "
                       "the clock skew); an Airlock token would outlive it");
  json claims = {{"iss", pipeline::kAirlockTokenIssuer}, {"aud", pipeline::kAirlockTokenAudience},
                 {"sub", user->subject.sub},              {"act", {{"sub", agent.principal}}},
                 {"iat", iat},                            {"nbf", iat},
                 {"exp", exp},                            {"jti", random_jti()},
                 {"airlock_user", {{"issuer", user->subject.issuer},
                                   {"claims", claims_for_bindings(config, user->subject)}}}};
  if (claims["jti"] == "") return oauth_error(500, "server_error", "no random bytes for the token's jti");
  std::string scope_text;
  for (const auto& tool : *scope) scope_text += (scope_text.empty() ? "" : " ") + tool;
  if (!scope_text.empty()) claims["scope"] = scope_text;
  auto token = signer.issue(claims);
  if (!token) return oauth_error(500, "server_error", token.error().message);
  json answer = {{"access_token", *token}, {"issued_token_type", kJwtTokenType},
                 {"token_type", "Bearer"}, {"expires_in", exp - iat}};
  if (!scope_text.empty()) answer["scope"] = scope_text;
  auto resp = json_response(200, answer);
  resp.headers.emplace_back("Cache-Control", "no-store");
  return resp;
}

HttpResponse jwks_response(const identity::TokenSigner& signer) {
  auto resp = json_response(200, signer.jwks());
  resp.headers.emplace_back("Cache-Control", "max-age=300");
  return resp;
}

}  // namespace airlock::server
