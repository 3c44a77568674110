// The configuration of credentials (issue #16): what each tool is given, per call, as an
// environment variable (`tools[].credentials`), and the servers Airlock makes credentials on
// (`credentialServers`). The providers that act on it are in src/creds/; docs/credentials.md
// documents every field.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace airlock::policy {

// The longest lifetime a configured credential may ask for, and the default one.
inline constexpr std::chrono::seconds kMaxCredentialTtl{3600};
inline constexpr std::chrono::seconds kDefaultCredentialTtl{60};

// `token`: a JWT Airlock mints per call (EdDSA, its token key), for a downstream service
// that verifies it with /.well-known/jwks.json.
struct TokenCredential {
  std::string audience;             // the `aud`; never Airlock's own ("airlock")
  std::vector<std::string> scopes;  // the `scope`, narrowed by the user's when theirs has one
  std::chrono::seconds ttl = kDefaultCredentialTtl;
  bool operator==(const TokenCredential&) const = default;
};

// `postgres`: a role made for the call on a credentialServers entry, granted only `grant`.
struct PostgresCredential {
  std::string server;  // a credentialServers name
  // Privilege (lower case: select, insert, update, delete, truncate, references, trigger) to
  // the tables it is granted on ("orders", "shop.orders").
  std::map<std::string, std::vector<std::string>> grant;
  std::chrono::seconds ttl = kDefaultCredentialTtl;
  std::uint32_t connection_limit = 4;
  bool operator==(const PostgresCredential&) const = default;
};

// `oauth-exchange`: the user's token exchanged (RFC 8693) at an upstream security token
// service for one with the tool's audience and scopes. Needs a call on behalf of a user.
struct OAuthExchangeCredential {
  std::string token_endpoint;       // https:// (or http:// to loopback)
  std::string revocation_endpoint;  // RFC 7009; "": the token is left to expire
  std::string audience;
  std::vector<std::string> scopes;
  std::string client_id;      // with client_secret: HTTP Basic (RFC 6749 2.3.1)
  std::string client_secret;  // a secret's name; without client_id sent as a bearer token
  std::string ca_file;        // PEM CAs for https; "": the system's
  bool operator==(const OAuthExchangeCredential&) const = default;
};

// `secret`: a static value from Airlock's encrypted store (`airlock secrets set NAME`).
struct SecretCredential {
  std::string name;
  bool operator==(const SecretCredential&) const = default;
};

// `inject`: the sandbox sees only a placeholder in `env`; the egress proxy terminates TLS
// for `host` and sets `header` to `value`, where ${ENV} stands for the credential.
struct HeaderInjection {
  std::string host;
  std::uint16_t port = 443;
  std::string header;          // "Authorization"
  std::string value_template;  // "Bearer ${SLACK_TOKEN}"
  bool operator==(const HeaderInjection&) const = default;
};

struct CredentialSpec {
  std::string env;  // the variable the tool reads
  std::variant<TokenCredential, PostgresCredential, OAuthExchangeCredential, SecretCredential> source;
  std::optional<HeaderInjection> inject;
  std::string where;  // "file:line"

  // "token", "postgres", "oauth-exchange" or "secret".
  std::string_view provider() const;
  // The same credential, wherever it is written.
  bool same_as(const CredentialSpec& o) const {
    return env == o.env && source == o.source && inject == o.inject;
  }
};

struct PostgresServer {
  std::string host = "127.0.0.1";
  std::uint16_t port = 5432;
  std::string database;
  std::string admin_secret;  // a secret holding a libpq URL of a role with CREATEROLE
};

struct CredentialServer {
  std::string name;
  PostgresServer postgres;
};

}  // namespace airlock::policy
