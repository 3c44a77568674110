// The credentials sections: `credentialServers` (where Airlock makes credentials) and each
// tool's `credentials` (what it is given per call, as an environment variable).
#include <algorithm>
#include <cctype>
#include <set>

#include "common/http_url.hpp"
#include "egress/policy.hpp"
#include "policy/config_reader.hpp"
#include "policy/names.hpp"

namespace airlock::policy {

std::string_view CredentialSpec::provider() const {
  switch (source.index()) {
    case 0: return "token";
    case 1: return "postgres";
    case 2: return "oauth-exchange";
    default: return "secret";
  }
}

namespace detail {
namespace {

constexpr const char* kPrivileges[] = {"select", "insert",  "update",     "delete",
                                       "truncate", "references", "trigger"};

std::chrono::seconds ttl(Reader& r, const YAML::Node& v, const std::string& what) {
  auto d = std::chrono::duration_cast<std::chrono::seconds>(r.duration(v, what));
  if (d.count() < 1) fail(v, what + ": at least 1s");
  if (d > kMaxCredentialTtl)
    fail(v, what + ": at most " + std::to_string(kMaxCredentialTtl.count()) + "s: credentials are short-lived");
  return d;
}

std::string secret_name(Reader& r, const YAML::Node& v, const std::string& what) {
  std::string name = r.string(v, what);
  if (!valid_tool_name(name)) fail(v, what + ": a secret's name: " + kToolNameRule);
  return name;
}

// https://, or http:// to a loopback address (a token service on the same host).
std::string endpoint(Reader& r, const YAML::Node& v, const std::string& what) {
  std::string url = r.string(v, what);
  auto parsed = parse_http_url(url);
  if (parsed && (parsed->tls || parsed->is_loopback())) return url;
  fail(v, what + ": expected an https:// URL (http:// only to a loopback address), got '" + url + "'" +
              (parsed ? std::string() : ": " + parsed.error().message));
}

TokenCredential read_token(Reader& r, const YAML::Node& n, const std::string& what) {
  r.only_keys(n, what, {"audience", "scopes", "ttl"});
  TokenCredential t;
  if (!n["audience"]) r.error(n, what + ": missing audience (the service that accepts the token)");
  r.field(n, "audience", [&](const YAML::Node& v) {
    t.audience = r.string(v, what + ".audience");
    if (t.audience.empty()) fail(v, what + ".audience: empty");
    if (t.audience == "airlock")
      fail(v, what + ".audience: 'airlock' is Airlock's own API: a tool's credential must not reach it");
  });
  r.field(n, "scopes", [&](const YAML::Node& v) { t.scopes = r.strings(v, what + ".scopes"); });
  r.field(n, "ttl", [&](const YAML::Node& v) { t.ttl = ttl(r, v, what + ".ttl"); });
  return t;
}

void read_grant(Reader& r, const YAML::Node& n, const std::string& what,
                std::map<std::string, std::vector<std::string>>& out) {
  r.expect_map(n, what);
  for (const auto& kv : n)
    r.guard([&] {
      std::string privilege = kv.first.as<std::string>();
      if (std::find(std::begin(kPrivileges), std::end(kPrivileges), privilege) == std::end(kPrivileges))
        fail(kv.first, what + ": '" + privilege +
                           "' is not a table privilege (select, insert, update, delete, truncate, references, trigger)");
      auto tables = r.strings(kv.second, what + "." + privilege);
      if (tables.empty()) fail(kv.second, what + "." + privilege + ": expected at least one table");
      out[privilege] = std::move(tables);
    });
  if (out.empty() && r.error_count() == 0) fail(n, what + ": grants nothing");
}

PostgresCredential read_postgres(Reader& r, const YAML::Node& n, const std::string& what,
                                 const std::vector<CredentialServer>& servers) {
  r.only_keys(n, what, {"server", "grant", "ttl", "connectionLimit"});
  PostgresCredential p;
  for (const char* key : {"server", "grant"})
    if (!n[key]) r.error(n, what + ": missing " + key);
  r.field(n, "server", [&](const YAML::Node& v) {
    p.server = r.string(v, what + ".server");
    const bool known = std::any_of(servers.begin(), servers.end(),
                                   [&](const CredentialServer& s) { return s.name == p.server; });
    if (!known) fail(v, what + ".server: no credentialServers entry is named '" + p.server + "'");
  });
  r.field(n, "grant", [&](const YAML::Node& v) { read_grant(r, v, what + ".grant", p.grant); });
  r.field(n, "ttl", [&](const YAML::Node& v) { p.ttl = ttl(r, v, what + ".ttl"); });
  r.field(n, "connectionLimit", [&](const YAML::Node& v) {
    p.connection_limit = static_cast<std::uint32_t>(r.unsigned_int(v, what + ".connectionLimit", 100));
    if (p.connection_limit == 0) fail(v, what + ".connectionLimit: at least 1");
  });
  return p;
}

OAuthExchangeCredential read_oauth(Reader& r, const YAML::Node& n, const std::string& what) {
  r.only_keys(n, what, {"tokenEndpoint", "revocationEndpoint", "audience", "scopes", "clientId",
                        "clientSecret", "caFile"});
  OAuthExchangeCredential o;
  for (const char* key : {"tokenEndpoint", "audience"})
    if (!n[key]) r.error(n, what + ": missing " + key);
  r.field(n, "tokenEndpoint", [&](const YAML::Node& v) { o.token_endpoint = endpoint(r, v, what + ".tokenEndpoint"); });
  r.field(n, "revocationEndpoint",
          [&](const YAML::Node& v) { o.revocation_endpoint = endpoint(r, v, what + ".revocationEndpoint"); });
  r.field(n, "audience", [&](const YAML::Node& v) { o.audience = r.string(v, what + ".audience"); });
  r.field(n, "scopes", [&](const YAML::Node& v) { o.scopes = r.strings(v, what + ".scopes"); });
  r.field(n, "clientId", [&](const YAML::Node& v) { o.client_id = r.string(v, what + ".clientId"); });
  r.field(n, "clientSecret",
          [&](const YAML::Node& v) { o.client_secret = secret_name(r, v, what + ".clientSecret"); });
  r.field(n, "caFile", [&](const YAML::Node& v) { o.ca_file = r.path(v, what + ".caFile"); });
  if (!o.client_id.empty() && o.client_secret.empty())
    r.error(n, what + ": clientId needs clientSecret (the name of a secret)");
  return o;
}

// "Bearer ${SLACK_TOKEN}": the credential's own variable, once at least.
HeaderInjection read_inject(Reader& r, const YAML::Node& n, const std::string& what, const std::string& env) {
  r.only_keys(n, what, {"host", "port", "header", "value"});
  HeaderInjection h;
  for (const char* key : {"host", "header", "value"})
    if (!n[key]) r.error(n, what + ": missing " + key);
  r.field(n, "host", [&](const YAML::Node& v) {
    h.host = r.string(v, what + ".host");
    auto rule = egress::parse_allow_rule(h.host);
    if (!rule || h.host.find_first_of("*/:") != std::string::npos || egress::parse_ip_strict(h.host))
      fail(v, what + ".host: expected one host name (its certificate is checked by name), got '" + h.host + "'");
  });
  r.field(n, "port", [&](const YAML::Node& v) {
    h.port = static_cast<std::uint16_t>(r.unsigned_int(v, what + ".port", 65535));
    if (h.port == 0) fail(v, what + ".port: 1 to 65535");
  });
  r.field(n, "header", [&](const YAML::Node& v) {
    h.header = r.string(v, what + ".header");
    const bool token = !h.header.empty() && std::all_of(h.header.begin(), h.header.end(), [](unsigned char c) {
      return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    });
    if (!token) fail(v, what + ".header: not an HTTP header name");
  });
  r.field(n, "value", [&](const YAML::Node& v) {
    h.value_template = r.string(v, what + ".value");
    if (h.value_template.find("${" + env + "}") == std::string::npos)
      fail(v, what + ".value: must contain ${" + env + "}, where the credential goes");
    if (h.value_template.find_first_of("\r\n") != std::string::npos)
      fail(v, what + ".value: a header value is one line");
  });
  return h;
}

CredentialSpec read_credential(Reader& r, const YAML::Node& n, const std::string& what,
                               const std::vector<CredentialServer>& servers) {
  r.only_keys(n, what, {"env", "token", "postgres", "oauth-exchange", "secret", "inject"});
  CredentialSpec c;
  if (!n["env"]) r.error(n, what + ": missing env (the variable the tool reads)");
  r.field(n, "env", [&](const YAML::Node& v) {
    c.env = r.string(v, what + ".env");
    if (!is_variable_name(c.env)) fail(v, what + ".env: '" + c.env + "' is not a valid variable name");
  });
  int sources = 0;
  for (const char* key : {"token", "postgres", "oauth-exchange", "secret"}) sources += n[key] ? 1 : 0;
  if (sources != 1)
    fail(n, what + ": expected exactly one of token, postgres, oauth-exchange and secret");
  r.field(n, "token", [&](const YAML::Node& v) { c.source = read_token(r, v, what + ".token"); });
  r.field(n, "postgres", [&](const YAML::Node& v) { c.source = read_postgres(r, v, what + ".postgres", servers); });
  r.field(n, "oauth-exchange",
          [&](const YAML::Node& v) { c.source = read_oauth(r, v, what + ".oauth-exchange"); });
  r.field(n, "secret",
          [&](const YAML::Node& v) { c.source = SecretCredential{secret_name(r, v, what + ".secret")}; });
  r.field(n, "inject", [&](const YAML::Node& v) { c.inject = read_inject(r, v, what + ".inject", c.env); });
  if (c.inject && std::holds_alternative<PostgresCredential>(c.source))
    r.error(n["inject"], what + ".inject: a postgres URL is not an HTTP header");
  return c;
}

}  // namespace

bool is_variable_name(const std::string& key) {
  return !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
         key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
             std::string::npos;
}

void read_credential_servers(Reader& r, const YAML::Node& n, std::vector<CredentialServer>& out) {
  std::set<std::string> names;
  std::size_t index = 0;
  r.items(n, "credentialServers", [&](const YAML::Node& item) {
    const std::string what = "credentialServers[" + std::to_string(index++) + "]";
    r.only_keys(item, what, {"name", "postgres"});
    CredentialServer s;
    if (!item["name"]) fail(item, what + ": missing name");
    s.name = r.string(item["name"], what + ".name");
    if (!valid_tool_name(s.name)) fail(item["name"], what + ".name: " + kToolNameRule);
    if (!names.insert(s.name).second) fail(item, "credentialServers: '" + s.name + "' is defined twice");
    if (!item["postgres"]) fail(item, what + ": missing postgres (the only kind of server)");
    const YAML::Node pg = item["postgres"];
    const std::string pw = what + ".postgres";
    r.only_keys(pg, pw, {"host", "port", "database", "adminSecret"});
    for (const char* key : {"database", "adminSecret"})
      if (!pg[key]) r.error(pg, pw + ": missing " + key);
    r.field(pg, "host", [&](const YAML::Node& v) { s.postgres.host = r.string(v, pw + ".host"); });
    r.field(pg, "port", [&](const YAML::Node& v) {
      s.postgres.port = static_cast<std::uint16_t>(r.unsigned_int(v, pw + ".port", 65535));
    });
    r.field(pg, "database", [&](const YAML::Node& v) { s.postgres.database = r.string(v, pw + ".database"); });
    r.field(pg, "adminSecret",
            [&](const YAML::Node& v) { s.postgres.admin_secret = secret_name(r, v, pw + ".adminSecret"); });
    out.push_back(std::move(s));
  });
}

void read_credentials(Reader& r, const YAML::Node& n, const std::string& what,
                      const std::vector<CredentialServer>& servers,
                      const std::map<std::string, std::string>& env, egress::EgressRules& network,
                      std::vector<CredentialSpec>& out) {
  std::set<std::string> vars;
  std::size_t index = 0;
  r.items(n, what, [&](const YAML::Node& item) {
    auto c = read_credential(r, item, what + "[" + std::to_string(index++) + "]", servers);
    if (!c.env.empty() && !vars.insert(c.env).second)
      fail(item, what + ": two credentials are given as " + c.env);
    if (env.count(c.env)) fail(item, what + ": " + c.env + " is also set in env");
    // An injected header goes only to its host: the egress rules allow that host and port.
    if (c.inject) network.allow.push_back({c.inject->host, c.inject->port});
    out.push_back(std::move(c));
  });
}

}  // namespace detail
}  // namespace airlock::policy
