// The identity section: the token issuers Airlock trusts, and the settings of its own tokens.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/http_url.hpp"
#include "policy/config_reader.hpp"

namespace airlock::policy {

const IssuerConfig* IdentityConfig::find_issuer(std::string_view name) const {
  for (const auto& i : issuers)
    if (i.name == name) return &i;
  return nullptr;
}

namespace detail {
namespace {

namespace fs = std::filesystem;

std::string jwks_file(Reader& r, const YAML::Node& v, const std::string& what) {
  std::string path = r.path(v, what);
  if (!fs::is_regular_file(path)) fail(v, what + ": " + path + " is not a file");
  if (!std::ifstream(path)) fail(v, what + ": " + path + " cannot be read");
  return path;
}

std::string jwks_url(Reader& r, const YAML::Node& v, const std::string& what) {
  std::string url = r.string(v, what);
  if (!url.starts_with("https://") && !url.starts_with("http://"))
    fail(v, what + ": expected an http:// or https:// URL, got '" + url + "'");
  if (auto parsed = parse_http_url(url); !parsed) fail(v, what + ": " + parsed.error().message);
  return url;
}

// Each field is read on its own, so that the issuer's name is known (for the checks of
// bindings and principals) even when another of its fields is wrong.
IssuerConfig read_issuer(Reader& r, const YAML::Node& n, const std::string& what) {
  r.only_keys(n, what, {"name", "issuer", "audiences", "jwksFile", "jwksUrl"});
  IssuerConfig i;
  for (const char* key : {"name", "issuer", "audiences"})
    if (!n[key]) r.error(n, what + ": missing " + key);
  if (!n["jwksFile"] == !n["jwksUrl"])
    r.error(n, what + ": expected exactly one of jwksFile (a file of keys) and jwksUrl");
  r.field(n, "name", [&](const YAML::Node& v) {
    i.name = r.string(v, what + ".name");
    if (i.name.empty()) fail(v, what + ".name: empty");
  });
  r.field(n, "issuer", [&](const YAML::Node& v) {
    i.issuer = r.string(v, what + ".issuer");
    if (i.issuer.empty()) fail(v, what + ".issuer: empty");
  });
  r.field(n, "audiences", [&](const YAML::Node& v) {
    i.audiences = r.strings(v, what + ".audiences");
    if (i.audiences.empty()) fail(v, what + ".audiences: expected at least one");
  });
  r.field(n, "jwksFile",
          [&](const YAML::Node& v) { i.jwks_file = jwks_file(r, v, what + ".jwksFile"); });
  r.field(n, "jwksUrl",
          [&](const YAML::Node& v) { i.jwks_url = jwks_url(r, v, what + ".jwksUrl"); });
  return i;
}

// Two issuers with the same `iss` would make which keys verify a token ambiguous.
void read_issuers(Reader& r, const YAML::Node& n, std::vector<IssuerConfig>& out) {
  std::set<std::string> names, issuers;
  std::size_t index = 0;
  r.items(n, "identity.issuers", [&](const YAML::Node& item) {
    auto i = read_issuer(r, item, "identity.issuers[" + std::to_string(index++) + "]");
    const bool name_taken = !i.name.empty() && !names.insert(i.name).second;
    const bool iss_taken = !i.issuer.empty() && !issuers.insert(i.issuer).second;
    if (!name_taken) out.push_back(i);
    if (name_taken) fail(item, "identity.issuers: '" + i.name + "' is defined twice");
    if (iss_taken) fail(item, "identity.issuers: two issuers have the issuer '" + i.issuer + "'");
  });
}

// The redirect URI must end at the console's callback: a provider sends the code there.
std::string redirect_uri(Reader& r, const YAML::Node& v, const std::string& what) {
  std::string url = r.string(v, what);
  auto parsed = parse_http_url(url);
  if (!parsed) fail(v, what + ": " + parsed.error().message);
  if (parsed->target != "/console/oidc/callback")
    fail(v, what + ": must be http(s)://<the console's host>/console/oidc/callback, got '" + url + "'");
  return url;
}

// identity.console, checked against the issuers read before it.
ConsoleSignInConfig read_console_sign_in(Reader& r, const YAML::Node& n, const std::vector<IssuerConfig>& issuers) {
  const std::string what = "identity.console";
  r.only_keys(n, what, {"issuer", "clientId", "redirectUri", "clientSecretFile", "discoveryUrl"});
  for (const char* key : {"issuer", "clientId", "redirectUri"})
    if (!n[key]) fail(n, what + ": missing " + key);
  ConsoleSignInConfig c;
  c.issuer = r.string(n["issuer"], what + ".issuer");
  c.client_id = r.string(n["clientId"], what + ".clientId");
  if (c.client_id.empty()) fail(n["clientId"], what + ".clientId: empty");
  c.redirect_uri = redirect_uri(r, n["redirectUri"], what + ".redirectUri");
  r.field(n, "clientSecretFile",
          [&](const YAML::Node& v) { c.client_secret_file = jwks_file(r, v, what + ".clientSecretFile"); });
  r.field(n, "discoveryUrl",
          [&](const YAML::Node& v) { c.discovery_url = jwks_url(r, v, what + ".discoveryUrl"); });
  const IssuerConfig* issuer = nullptr;
  for (const auto& i : issuers)
    if (i.name == c.issuer) issuer = &i;
  if (!issuer) fail(n["issuer"], what + ".issuer: no issuer named '" + c.issuer + "' in identity.issuers");
  if (std::find(issuer->audiences.begin(), issuer->audiences.end(), c.client_id) == issuer->audiences.end())
    fail(n["clientId"], what + ".clientId: '" + c.client_id + "' is not one of issuer " + c.issuer +
                            "'s audiences: an ID token's aud is the client id, and it is verified as any of that "
                            "issuer's user tokens (add it to audiences)");
  if (c.discovery_url.empty()) {
    std::string base = issuer->issuer;
    while (!base.empty() && base.back() == '/') base.pop_back();
    c.discovery_url = base + "/.well-known/openid-configuration";
    if (!parse_http_url(c.discovery_url))
      fail(n, what + ": issuer " + c.issuer + "'s iss is not an http(s) URL; give discoveryUrl");
  }
  return c;
}

}  // namespace

void read_identity(Reader& r, const YAML::Node& n, IdentityConfig& out) {
  r.only_keys(n, "identity", {"issuers", "allowDelegatedSubjects", "tokenLifetime", "console"});
  r.field(n, "issuers", [&](const YAML::Node& v) { read_issuers(r, v, out.issuers); });
  r.field(n, "console", [&](const YAML::Node& v) { out.console = read_console_sign_in(r, v, out.issuers); });
  r.field(n, "allowDelegatedSubjects", [&](const YAML::Node& v) {
    out.allow_delegated_subjects = r.boolean(v, "identity.allowDelegatedSubjects");
  });
  r.field(n, "tokenLifetime", [&](const YAML::Node& v) {
    out.token_lifetime = r.duration(v, "identity.tokenLifetime");
    if (out.token_lifetime > kMaxTokenLifetime)
      fail(v, "identity.tokenLifetime: at most 15m (Airlock's tokens are short-lived)");
  });
}

void check_issuer_name(const YAML::Node& at, const std::string& what, const std::string& name,
                       const IdentityConfig& identity) {
  if (identity.find_issuer(name)) return;
  std::string known;
  for (const auto& i : identity.issuers) known += (known.empty() ? "" : ", ") + i.name;
  fail(at, what + ": no issuer named '" + name + "' in identity.issuers (" +
               (known.empty() ? "none is configured" : "configured: " + known) + ")");
}

}  // namespace detail
}  // namespace airlock::policy
