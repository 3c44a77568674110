#include "server/console/console_oidc.hpp"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include <fstream>
#include <sstream>

#include "common/digest.hpp"
#include "common/http_url.hpp"
#include "common/json_limits.hpp"
#include "identity/base64url.hpp"
#include "server/console/console_session.hpp"

namespace airlock::server::console {
namespace {

using nlohmann::json;

// An endpoint of the discovery document: an http(s) URL without user information.
Result<std::string> endpoint(const json& doc, const char* name) {
  auto it = doc.find(name);
  if (it == doc.end() || !it->is_string())
    return Error::make("oidc_discovery", std::string("the provider's discovery document has no ") + name);
  const std::string url = *it;
  if (auto parsed = parse_http_url(url); !parsed)
    return Error::make("oidc_discovery", std::string("the provider's ") + name + " is not an http(s) URL: " +
                                             parsed.error().message);
  return url;
}

bool lists_s256(const json& doc) {
  auto it = doc.find("code_challenge_methods_supported");
  if (it == doc.end()) return true;  // not listed: PKCE is sent anyway, and checked where supported
  if (!it->is_array()) return false;
  for (const auto& m : *it)
    if (m == "S256") return true;
  return false;
}

Result<std::string> random_base64url(std::size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(raw.size())) != 1)
    return Error::make("internal", "the random number generator failed");
  return identity::base64url_encode(raw);
}

Result<std::string> client_secret(const policy::ConsoleSignInConfig& config) {
  std::ifstream in(config.client_secret_file);
  if (!in) return Error::make("oidc_exchange", "identity.console.clientSecretFile " + config.client_secret_file +
                                                   " cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) return Error::make("oidc_exchange", "identity.console.clientSecretFile is empty");
  return secret;
}

// The token endpoint's answer: its id_token, or why there is none (the provider's own
// error and description, never the request).
Result<std::string> id_token_of(const identity::FetchResponse& answer) {
  auto body = parse_json_bounded(answer.body, 8);
  const json doc = body && body->is_object() ? *body : json::object();
  if (answer.status != 200) {
    std::string why = doc.value("error", "HTTP " + std::to_string(answer.status));
    if (doc.contains("error_description") && doc["error_description"].is_string())
      why += ": " + doc["error_description"].get<std::string>();
    return Error::make("oidc_exchange", "the token endpoint refused the code: " + why);
  }
  if (!doc.contains("id_token") || !doc["id_token"].is_string())
    return Error::make("oidc_exchange", "the token endpoint's answer has no id_token (is \"openid\" allowed for the client?)");
  return doc["id_token"].get<std::string>();
}

}  // namespace

std::string oidc_cookie(const std::string& binding, bool secure) {
  return std::string(kOidcCookieName) + "=" + binding + "; Path=/console/oidc; Max-Age=" +
         std::to_string(std::chrono::seconds(kOidcLoginLifetime).count()) + "; HttpOnly; SameSite=Lax" +
         (secure ? "; Secure" : "");
}

std::string cleared_oidc_cookie(bool secure) {
  return std::string(kOidcCookieName) + "=; Path=/console/oidc; Max-Age=0; HttpOnly; SameSite=Lax" +
         (secure ? "; Secure" : "");
}

Result<ProviderEndpoints> provider_endpoints(const std::string& discovery_document, const std::string& expected_iss) {
  auto parsed = parse_json_bounded(discovery_document, 8);
  if (!parsed || !parsed->is_object())
    return Error::make("oidc_discovery", "the provider's discovery document is not a JSON object");
  const json& doc = *parsed;
  if (!doc.contains("issuer") || doc["issuer"] != expected_iss)
    return Error::make("oidc_discovery", "the discovery document's issuer is " +
                                             (doc.contains("issuer") ? doc["issuer"].dump() : std::string("missing")) +
                                             ", not the configured issuer \"" + expected_iss + "\"");
  if (!lists_s256(doc))
    return Error::make("oidc_discovery", "the provider does not support PKCE with S256 (code_challenge_methods_supported)");
  auto authorization = endpoint(doc, "authorization_endpoint");
  if (!authorization) return authorization.error();
  auto token = endpoint(doc, "token_endpoint");
  if (!token) return token.error();
  return ProviderEndpoints{*authorization, *token};
}

std::string s256_challenge(const std::string& verifier) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(verifier.data()), verifier.size(), digest);
  return identity::base64url_encode(std::string(reinterpret_cast<const char*>(digest), sizeof digest));
}

Result<Pkce> make_pkce() {
  auto verifier = random_base64url(32);
  if (!verifier) return verifier.error();
  return Pkce{*verifier, s256_challenge(*verifier)};
}

std::optional<std::string> id_token_problem(const json& claims, const std::string& nonce, const std::string& client_id) {
  const auto n = claims.find("nonce");
  if (n == claims.end() || !n->is_string()) return "the ID token has no nonce (it was not issued for this sign-in)";
  if (!constant_time_equal(n->get<std::string>(), nonce))
    return "the ID token's nonce is not this sign-in's (a replayed or substituted token)";
  const auto aud = claims.find("aud");
  std::vector<std::string> audiences;
  if (aud != claims.end() && aud->is_string()) audiences.push_back(*aud);
  if (aud != claims.end() && aud->is_array())
    for (const auto& a : *aud)
      if (a.is_string()) audiences.push_back(a);
  if (std::find(audiences.begin(), audiences.end(), client_id) == audiences.end())
    return "the ID token's aud does not name the console's client " + client_id;
  if (audiences.size() > 1 && claims.value("azp", "") != client_id)
    return "the ID token names several audiences and its azp is not the console's client " + client_id;
  return std::nullopt;
}

OidcLogins::OidcLogins(Fetch fetch, std::shared_ptr<PendingLogins> pending)
    : fetch_(std::move(fetch)),
      pending_(pending ? std::move(pending) : std::make_shared<MemoryPendingLogins>()) {}

Result<OidcLogins::Started> OidcLogins::start(const policy::ConsoleSignInConfig& config, const std::string& iss) {
  identity::FetchRequest discovery;
  discovery.url = config.discovery_url;
  discovery.what = "the provider's discovery document";
  auto answer = fetch_(discovery);
  if (!answer) return answer.error();
  if (answer->status != 200)
    return Error::make("oidc_discovery", "the provider's discovery document " + config.discovery_url + " answered HTTP " +
                                             std::to_string(answer->status));
  auto endpoints = provider_endpoints(answer->body, iss);
  if (!endpoints) return endpoints.error();
  auto state = random_hex(32), nonce = random_hex(32), binding = random_hex(32);
  auto pkce = make_pkce();
  if (!state || !nonce || !binding || !pkce) return Error::make("internal", "the random number generator failed");
  const std::string query = identity::form_urlencode({{"response_type", "code"},
                                                      {"client_id", config.client_id},
                                                      {"redirect_uri", config.redirect_uri},
                                                      {"scope", "openid"},
                                                      {"state", *state},
                                                      {"nonce", *nonce},
                                                      {"code_challenge", pkce->challenge},
                                                      {"code_challenge_method", "S256"}});
  const char joiner = endpoints->authorization.find('?') == std::string::npos ? '?' : '&';
  auto kept = pending_->put(*state, Pending{*nonce, pkce->verifier, endpoints->token, *binding, config.client_id,
                                            config.redirect_uri});
  if (!kept) return kept.error();
  return Started{endpoints->authorization + joiner + query, *binding};
}

Result<OidcLogins::Pending> OidcLogins::take(const std::string& state, const std::string& binding) {
  if (state.empty()) return Error::make("oidc_state", "the callback has no state");
  return pending_->take(state, binding);
}

Result<std::string> OidcLogins::exchange(const policy::ConsoleSignInConfig& config, const Pending& login,
                                         const std::string& code) {
  if (code.empty()) return Error::make("oidc_exchange", "the callback has no code");
  std::vector<std::pair<std::string, std::string>> form = {{"grant_type", "authorization_code"},
                                                           {"code", code},
                                                           {"redirect_uri", login.redirect_uri},
                                                           {"client_id", login.client_id},
                                                           {"code_verifier", login.verifier}};
  if (!config.client_secret_file.empty()) {
    auto secret = client_secret(config);
    if (!secret) return secret.error();
    form.emplace_back("client_secret", *secret);
  }
  identity::FetchRequest request;
  request.method = "POST";
  request.url = login.token_endpoint;
  request.headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/json"}};
  request.body = identity::form_urlencode(form);
  request.what = "the token endpoint";
  auto answer = fetch_(request);
  if (!answer) return Error::make("oidc_exchange", answer.error().message);
  return id_token_of(*answer);
}

}  // namespace airlock::server::console
