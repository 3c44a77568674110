#include "creds/providers/oauth_exchange_provider.hpp"

#include "common/percent_encoding.hpp"

#include <algorithm>

#include "common/split.hpp"
#include "creds/scopes.hpp"
#include "identity/base64url.hpp"

namespace airlock::creds {
namespace {

using nlohmann::json;
using Fields = std::vector<std::pair<std::string, std::string>>;

constexpr std::size_t kMaxAnswerBytes = 64 * 1024;

Error unavailable(const std::string& message) { return Error::make("credential_unavailable", message); }

// RFC 4648 section 4 base64 (HTTP Basic), from identity's base64url.
std::string base64(std::string_view bytes) {
  std::string out = identity::base64url_encode(bytes);
  std::replace(out.begin(), out.end(), '-', '+');
  std::replace(out.begin(), out.end(), '_', '/');
  out.append((4 - out.size() % 4) % 4, '=');
  return out;
}

// The OAuth error code of an error answer (RFC 6749 5.2), when it is one: only its `error`,
// which is a short code. The description may quote what was sent, so it is never repeated.
std::string oauth_error_code(const std::string& body) {
  auto answer = json::parse(body, nullptr, false);
  if (!answer.is_object() || !answer.contains("error") || !answer["error"].is_string()) return {};
  std::string code = answer["error"].get<std::string>();
  const bool plain = code.size() <= 64 && std::all_of(code.begin(), code.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || c == '_';
                     });
  return plain ? code : std::string();
}

// A refusal of the user (their token, their scopes) rather than a failure of the upstream.
bool user_refused(const std::string& code) {
  return code == "invalid_grant" || code == "invalid_scope" || code == "invalid_target" ||
         code == "access_denied" || code == "unauthorized_client";
}

Error refused(const std::string& endpoint_name, const identity::FetchResponse& answer) {
  const std::string code = oauth_error_code(answer.body);
  const std::string message = endpoint_name + " answered HTTP " + std::to_string(answer.status) +
                              (code.empty() ? "" : " (" + code + ")");
  return Error::make(user_refused(code) ? "credential_denied" : "credential_unavailable", message);
}

const policy::OAuthExchangeCredential* exchange_spec(const policy::CredentialSpec& spec) {
  return std::get_if<policy::OAuthExchangeCredential>(&spec.source);
}

std::string text(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Clock::time_point expiry(const json& answer, const LeaseContext& context) {
  std::chrono::seconds lifetime = context.max_ttl;
  if (auto in = answer.find("expires_in"); in != answer.end() && in->is_number_integer() && in->get<std::int64_t>() >= 0)
    lifetime = std::min(lifetime, std::chrono::seconds(in->get<std::int64_t>()));
  return context.now + lifetime;
}

}  // namespace

// How the client authenticates: headers, and fields of the form.
struct OAuthExchangeProvider::Client {
  Fields headers;
  Fields fields;
  identity::FetchOptions fetch;
};

identity::FetchOptions OAuthExchangeProvider::default_fetch() {
  identity::FetchOptions fetch;
  fetch.timeout = std::chrono::milliseconds(5000);
  fetch.max_bytes = kMaxAnswerBytes;
  return fetch;
}

Result<json> OAuthExchangeProvider::target(const policy::CredentialSpec& spec, const Lease&) const {
  const auto* oauth = exchange_spec(spec);
  if (!oauth) return Error::make("invalid_argument", spec.env + ": not an oauth-exchange credential");
  if (oauth->token_endpoint.empty()) return Error::make("invalid_argument", spec.env + ": no tokenEndpoint");
  return json{{"token_endpoint", oauth->token_endpoint}, {"revocation_endpoint", oauth->revocation_endpoint},
              {"client_id", oauth->client_id},           {"client_secret_name", oauth->client_secret},
              {"ca_file", oauth->ca_file}};
}

Result<OAuthExchangeProvider::Client> OAuthExchangeProvider::client(const json& target) const {
  Client out;
  out.fetch = fetch_;
  out.fetch.ca_file = text(target, "ca_file");
  const std::string id = text(target, "client_id"), secret_name = text(target, "client_secret_name");
  if (secret_name.empty()) {
    if (!id.empty()) out.fields.emplace_back("client_id", id);
    return out;
  }
  auto secret = secrets_(secret_name);
  // The lookup's message names the secret, never its value.
  if (!secret) return unavailable("the client secret '" + secret_name + "': " + secret.error().message);
  if (id.empty()) {
    out.headers.emplace_back("Authorization", "Bearer " + *secret);
  } else {
    // RFC 6749 2.3.1: each form-encoded before they are joined.
    out.headers.emplace_back("Authorization",
                             "Basic " + base64(percent_encode(id) + ":" + percent_encode(*secret)));
  }
  return out;
}

Result<Issued> OAuthExchangeProvider::issue(const policy::CredentialSpec& spec, const Lease& lease,
                                            const LeaseContext& context) {
  if (context.user_token.empty())
    return Error::make("credential_denied", spec.env + ": an oauth-exchange credential exchanges the user's token: "
                                                        "the tool needs a call on behalf of a user");
  auto target = this->target(spec, lease);
  if (!target) return target.error();
  const auto& oauth = *exchange_spec(spec);
  auto scopes = narrowed_scopes(oauth.scopes, context);
  if (!scopes) return scopes.error();
  auto client = this->client(*target);
  if (!client) return client.error();

  Fields form = {{"grant_type", kTokenExchangeGrantType},
                 {"subject_token", context.user_token},
                 {"subject_token_type", kJwtTokenType}};
  if (!oauth.audience.empty()) form.emplace_back("audience", oauth.audience);
  if (!scopes->empty()) form.emplace_back("scope", scope_text(*scopes));
  form.insert(form.end(), client->fields.begin(), client->fields.end());
  auto answer = identity::http_post_form(oauth.token_endpoint, form, client->headers, "the token endpoint", client->fetch);
  if (!answer) return unavailable(answer.error().message);
  if (answer->status != 200) return refused("the token endpoint", *answer);

  auto body = json::parse(answer->body, nullptr, false);
  const std::string token = body.is_object() ? text(body, "access_token") : std::string();
  if (token.empty()) return unavailable("the token endpoint's answer has no access_token");
  Issued out;
  out.value = token;
  const std::string granted = text(body, "scope");  // RFC 8693 2.2.1: absent when as asked
  out.scopes = body.contains("scope") ? split_nonempty(granted, ' ') : *scopes;
  out.expires_at = expiry(body, context);
  return out;
}

Status OAuthExchangeProvider::revoke(const Lease& lease, const std::string* value) {
  const std::string endpoint = text(lease.target, "revocation_endpoint");
  // Without an endpoint, or without the value (a crash), the token expires on its own.
  if (endpoint.empty() || !value) return {};
  auto client = this->client(lease.target);
  if (!client) return client.error();
  Fields form = {{"token", *value}, {"token_type_hint", "access_token"}};
  form.insert(form.end(), client->fields.begin(), client->fields.end());
  auto answer = identity::http_post_form(endpoint, form, client->headers, "the revocation endpoint", client->fetch);
  if (!answer) return unavailable(answer.error().message);
  if (answer->status != 200) return refused("the revocation endpoint", *answer);
  return {};
}

}  // namespace airlock::creds
