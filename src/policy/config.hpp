// The daemon's configuration: one YAML file in the style of a Kubernetes manifest
// (apiVersion/kind), validated as a whole at start. Every error in the file is reported, each
// naming file:line:column and what was expected there. docs/config.md documents every field
// with a complete example.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_limits.hpp"
#include "common/result.hpp"
#include "egress/rules.hpp"
#include "policy/limit_overrides.hpp"
#include "policy/sections/approvals_config.hpp"
#include "policy/sections/backends_config.hpp"
#include "policy/sections/credentials_config.hpp"
#include "policy/sections/mcp_servers_config.hpp"
#include "policy/sections/identity_config.hpp"
#include "policy/sections/quotas_config.hpp"
#include "policy/sections/session_templates_config.hpp"
#include "policy/sections/validation_config.hpp"
#include "policy/risk.hpp"
#include "policy/sections/warm_config.hpp"
#include "policy/sections/webhooks_config.hpp"
#include "sandbox/spec.hpp"

namespace airlock::policy {

class JsonSchema;  // policy/json_schema.hpp

inline constexpr const char* kApiVersion = "airlock.dev/v1";
inline constexpr const char* kKind = "AirlockConfig";
// Limits on the file itself (docs/config.md): its size, and how deep mappings and lists nest.
inline constexpr std::size_t kMaxConfigBytes = 1 << 20;
inline constexpr int kMaxConfigNesting = 64;
// Errors listed at most (in file order); a count of the others follows.
inline constexpr std::size_t kMaxConfigErrorsShown = 100;

// server.tls: the API over TLS (docs/daemon.md, "TLS and client certificates"). The paths
// are resolved against the config's directory; the files were readable at load.
struct TlsConfig {
  std::string cert_file;       // PEM: the server's certificate, then any intermediates
  std::string key_file;        // PEM: its private key
  std::string client_ca_file;  // PEM: CAs whose client certificates authenticate; "": none
  // Between replicas (storage.postgres), when this one forwards a session's request to the
  // replica that holds it: the CAs that verify that replica's certificate ("": the system's),
  // and the name it must carry ("": the host of that replica's advertised URL).
  std::string replica_ca_file;
  std::string replica_server_name;
  bool operator==(const TlsConfig&) const = default;
};

struct ServerConfig {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8750;
  std::uint64_t max_body_bytes = 1 << 20;
  unsigned max_concurrent_invocations = 8;
  unsigned queue_length = 64;
  std::chrono::milliseconds drain_timeout{30'000};  // on SIGTERM, for running invocations
  // The longest an admitted invocation waits in the fair queue for a worker; past it, it
  // ends with quota_exceeded (quota "queueTimeout") rather than waiting on silently.
  std::chrono::milliseconds queue_timeout{30'000};
  std::chrono::milliseconds read_timeout{30'000};   // for a request's head and body to arrive
  std::size_t max_json_depth = kDefaultMaxJsonDepth;  // request bodies and tool output
  std::optional<TlsConfig> tls;                       // none: plain HTTP
  // With storage.postgres: how the other replicas reach this one (http[s]://HOST:PORT, https
  // with tls), written in its row of `replicas`. "": derived from listen (advertised_url).
  std::string advertise_url;
  McpEndpointConfig mcp;                              // /mcp (policy/sections/mcp_servers_config.hpp)
  unsigned max_warm_templates = 8;  // warm templates running at once (policy/sections/warm_config.hpp)
  // MCP server instances (the gateway's sandboxes) at once, all servers together; as each
  // server's maxInstances, an idle one makes room, else the call is refused.
  unsigned max_mcp_server_instances = 64;
};

// storage.postgres: the database the audit log lives in when several daemons share it
// (policy/config_storage.cpp). The password is in the URL or in password_file, not both.
struct PostgresStorage {
  std::string url;            // postgresql://user[:password]@host:port/database
  std::string password_file;  // "" when the URL has the password (or the server needs none)
  bool operator==(const PostgresStorage&) const = default;
};

struct StorageConfig {
  std::string data_dir = "./airlock-data";
  std::uint32_t checkpoint_every = 1000;           // audit records
  std::chrono::milliseconds checkpoint_interval{60'000};
  // Set: the audit log and the state are in PostgreSQL, shared by every replica. None:
  // <data_dir>/audit.db and state.db, SQLite.
  std::optional<PostgresStorage> postgres;
  // The key that signs the audit log's checkpoints; required with postgres (every writer
  // shares it). "": <data_dir>/audit.db.key.
  std::string signing_key_file;
  // The key Airlock signs its own tokens with (identity::TokenSigner); required with postgres
  // (every replica accepts the others' tokens). "": <data_dir>/token.key.
  std::string token_key_file;
  // With postgres, several replicas (docs/daemon.md, "Replicas and failover"): each refreshes
  // its heartbeat row this often, and a replica whose heartbeat is older than failover_after
  // (> heartbeat_interval) is taken for dead and its running invocations recorded as aborted.
  // A kill is noticed within failover_after + heartbeat_interval: 25 s by default.
  std::chrono::milliseconds heartbeat_interval{5'000};
  std::chrono::milliseconds failover_after{20'000};
};

// principals[].certificate: the client certificate (mTLS) that authenticates as a principal.
// Exactly one of the two is set; each is compared exactly.
struct CertificateMatch {
  std::string subject;  // RFC 2253, most specific first: "CN=research-agent,O=agents"
  std::string uri_san;  // a URI subjectAltName: "spiffe://example.org/agents/research"
};

struct Principal {
  std::string name;
  std::string api_key_sha256;          // lower-case hex; the key itself is never stored; or
  std::optional<PrincipalJwt> jwt;     // a JWT of a configured issuer; or
  std::optional<CertificateMatch> certificate;  // a client certificate (at least one is set)
  std::vector<std::string> tools;      // names or globs ("fetch-*"); none by default
  std::vector<std::string> session_templates;  // sessionTemplates it may create sessions of
};

// How a tool runs. `python`: a file defining run(args) -> dict, run by Airlock's runner;
// `command`: argv speaking the JSON protocol on stdin/stdout; `python-code`: model-written
// code in the `code` argument, validated statically before it runs.
struct ToolRuntime {
  enum class Kind { python, command, python_code } kind = Kind::python;
  std::string file;                    // python: host path of the tool's module
  std::vector<std::string> command;    // command: argv
  std::string interpreter = "python3"; // python, python-code: inside the sandbox
};

// The inputSchema a python-code tool publishes when its config gives none: {code, arguments?},
// nothing else (docs/validate.md, "python-code tools").
nlohmann::json python_code_input_schema();

struct ToolConfig {
  std::string name;
  std::string description;
  Risk risk = Risk::low;
  ToolRuntime runtime;
  nlohmann::json input_schema = nlohmann::json::object();
  std::optional<nlohmann::json> output_schema;
  // Both compiled when the configuration is loaded (null: not compiled, e.g. built in code).
  std::shared_ptr<const JsonSchema> input_check, output_check;
  LimitOverrides limits;
  egress::EgressRules network;  // allow, forwards, resolve
  ValidationConfig validation;
  std::vector<std::string> data_paths;  // host paths bound read-only at the same path
  std::map<std::string, std::string> env;
  bool requires_user = false;           // a call not on behalf of a user is refused
  std::vector<CredentialSpec> credentials;  // leased per call (docs/credentials.md)
  // Set for a tool an MCP server provides (the gateway adds these once it has listed and
  // pinned them): the execute stage calls the server instead of running `runtime`.
  std::optional<McpToolSource> mcp;
  ToolPlacement placement;              // tools[].kubernetes: for the kubernetes backend
  ApprovalPolicy approval;              // tools[].approval: read for critical tools only
  std::optional<WarmPolicy> warm;       // tools[].warm: calls fork from a warm template
  std::string where;                    // "file:line" of its definition
};

// A TLS client's verified certificate (HTTP layer: server/http/peer_certificate.hpp).
struct ClientCertificate {
  // The subject in RFC 2253 form, most specific first ("CN=research-agent,O=agents"), as
  // `openssl x509 -noout -subject -nameopt RFC2253` prints it; "" for an empty subject.
  std::string subject;
  std::vector<std::string> uri_sans;  // the URI subjectAltNames, in certificate order
};

struct Config {
  std::string path;
  // The SHA-256 (hex) of the file's text: what an invocation started under ("" when the
  // configuration was built in code).
  std::string version;
  ServerConfig server;
  StorageConfig storage;
  std::vector<Principal> principals;
  std::map<Risk, sandbox::Limits> tiers;
  std::map<Risk, TierBackend> tier_backends;  // tiers.<risk>.backend; absent: the default
  std::vector<ToolConfig> tools;
  std::string dlp_policy;  // a DLP policy file (docs/dlp.md); empty: the built-in defaults
  IdentityConfig identity;
  std::vector<Role> roles;
  std::vector<RoleBinding> bindings;
  std::vector<CredentialServer> credential_servers;
  std::vector<McpServerConfig> mcp_servers;
  std::vector<WebhookConfig> webhooks;  // docs/webhooks.md
  QuotasConfig quotas;                  // docs/daemon.md, "Quotas"
  std::vector<SessionTemplate> session_templates;  // docs/sessions.md
  // The entries as written in the file, read as JSON: "tools", "principals", "roles",
  // "credentialServers", "mcpServers", "issuers" (each by name), "tiers" and "dlp". What a
  // call waiting for an approval was decided on is compared by these when it resumes
  // (pipeline/decision_basis.hpp), not by the whole file's version. Empty when built in code.
  nlohmann::json definitions = nlohmann::json::object();

  const ToolConfig* find_tool(std::string_view name) const;
  const Principal* find_principal(std::string_view name) const;
  const Role* find_role(std::string_view name) const;
  const CredentialServer* find_credential_server(std::string_view name) const;
  const McpServerConfig* find_mcp_server(std::string_view name) const;
  const SessionTemplate* find_session_template(std::string_view name) const;
  // The principal whose key this is (its SHA-256 compared in constant time with every
  // principal's), or nullptr.
  const Principal* find_principal_by_key(std::string_view api_key) const;
  // The principal whose `certificate` matches: its subject equal to the certificate's, or its
  // uriSAN equal to one of the certificate's URI SANs. nullptr when none does, and when more
  // than one principal does (one by subject, another by URI SAN): an ambiguous certificate
  // authenticates as nobody.
  const Principal* find_principal_by_certificate(const ClientCertificate& certificate) const;
  // The limits a tool runs with: its tier's, with its overrides applied.
  sandbox::Limits limits_for(const ToolConfig& tool) const;
  // The limits a session of `t` runs with: its tier's with the template's applied; wall_time
  // is its maxLifetime, cpu_time the template's cpuTime or none (a tier's is per call).
  sandbox::Limits limits_for(const SessionTemplate& t) const;
};

// On failure the Error's message lists every mistake, one "file:line:column: what" per line,
// in file order.
Result<Config> load_config(const std::string& path);
// Parses YAML text; `label` stands for the file in messages. Relative paths in the config
// are resolved against `base_dir`.
Result<Config> parse_config(const std::string& yaml, const std::string& label,
                            const std::string& base_dir);

// Where the daemon listens: "IPv4:PORT" or "[IPv6]:PORT". The host must be an IP literal
// (the daemon binds it as given and resolves no names); the port 0 to 65535 (0: any free
// port). Used for server.listen and for `airlock serve --listen`.
struct ListenAddress {
  std::string host;  // without brackets
  std::uint16_t port = 0;
};
Result<ListenAddress> parse_listen(std::string_view text);

// The URL the other replicas reach this daemon at (docs/daemon.md, "Replicas and failover"):
// server.advertiseUrl, else http[s]://LISTEN_HOST:PORT with `port` (the bound one: listen may
// say 0). Error "config" when listen is a wildcard (0.0.0.0, ::) and advertiseUrl is not set:
// no other machine can reach "any address". `airlock serve` checks it as it loads the config
// with storage.postgres, after its --listen and --advertise-url.
Result<std::string> advertised_url(const ServerConfig& server, std::uint16_t port);
// What is wrong with server.advertiseUrl, or nothing: http[s]://HOST:PORT and nothing after,
// https exactly when server.tls is set (the others connect to what this one serves).
std::optional<std::string> advertise_url_problem(const ServerConfig& server);

// The safe defaults of each risk tier (docs/config.md).
std::map<Risk, sandbox::Limits> default_tiers();

// fnmatch-style: '*' any run of characters, '?' one character.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace airlock::policy
