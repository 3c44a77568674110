// The configuration reader's tools, shared by the readers of each section (config_*.cpp):
// typed field readers that name file:line on error, and the list the errors go to. Private to
// src/policy.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "policy/config.hpp"
#include "policy/yaml_checks.hpp"

namespace airlock::policy::detail {

// Thrown inside the reader only: Reader::guard records it and reading goes on with the next
// field, item or tool.
struct ConfigError {
  YAML::Mark mark;
  std::string message;
};

[[noreturn]] inline void fail(const YAML::Node& at, const std::string& message) {
  throw ConfigError{at.Mark(), message};
}

class Reader {
 public:
  Reader(std::string base_dir, std::vector<ConfigIssue>& issues)
      : base_dir_(std::move(base_dir)), issues_(issues) {}

  // Records a mistake and goes on. Others' lists of errors (a schema's) come in here too.
  void error(const YAML::Mark& at, std::string message) {
    issues_.push_back({at, std::move(message)});
  }
  void error(const YAML::Node& at, std::string message) { error(at.Mark(), std::move(message)); }
  std::size_t error_count() const { return issues_.size(); }

  // Runs `read`; what it throws is recorded. Returns whether it read without error.
  template <typename F>
  bool guard(F&& read) {
    try {
      read();
      return true;
    } catch (const ConfigError& e) {
      error(e.mark, e.message);
    } catch (const YAML::Exception& e) {
      error(e.mark, e.msg);
    }
    return false;
  }

  // Reads n[key] with `read(node)` if it is there, guarded. True if absent or read cleanly.
  template <typename F>
  bool field(const YAML::Node& n, const char* key, F&& read) {
    const YAML::Node v = n[key];
    return !v || guard([&] { read(v); });
  }

  // Reads each item of the list `n` with `read(item)`, each guarded.
  template <typename F>
  void items(const YAML::Node& n, const std::string& what, F&& read) {
    if (!n.IsSequence()) fail(n, what + ": expected a list");
    for (const auto& item : n) guard([&] { read(item); });
  }

  void expect_map(const YAML::Node& n, const std::string& what);

  // Rejects keys the schema does not know (a typo must not silently mean "default").
  void only_keys(const YAML::Node& n, const std::string& what, std::set<std::string> known);
  std::string string(const YAML::Node& n, const std::string& what);
  std::vector<std::string> strings(const YAML::Node& n, const std::string& what);
  std::uint64_t unsigned_int(const YAML::Node& n, const std::string& what, std::uint64_t max);
  bool boolean(const YAML::Node& n, const std::string& what);
  std::chrono::milliseconds duration(const YAML::Node& n, const std::string& what);
  std::uint64_t size(const YAML::Node& n, const std::string& what);
  // Relative paths are relative to the config file's directory.
  std::string path(const YAML::Node& n, const std::string& what);
  std::string resolve(const std::string& path) const;  // against the config file's directory

  // YAML to JSON for schemas; numbers stay numbers, strings strings. The document has no
  // aliases and bounded depth (scan_document), so this expands nothing.
  nlohmann::json json(const YAML::Node& n);
  // `also`: other keys the mapping may have, read by the caller (tiers.<risk>.backend...).
  LimitOverrides overrides(const YAML::Node& n, const std::string& what,
                           const std::set<std::string>& also = {});
  Risk risk(const YAML::Node& n, const std::string& what);

 private:
  static nlohmann::json json_scalar(const YAML::Node& n);

  std::string base_dir_;
  std::vector<ConfigIssue>& issues_;
};

// The readers of each section. Each records its errors in `r` and reads on where it can.
void read_server(Reader& r, const YAML::Node& n, ServerConfig& s);
void read_storage(Reader& r, const YAML::Node& n, StorageConfig& s);
void read_dlp(Reader& r, const YAML::Node& n, std::string& policy);
// `identity` must be read first: a principal's jwt.issuer names one of its issuers.
void read_principals(Reader& r, const YAML::Node& n, const IdentityConfig& identity,
                     std::vector<Principal>& out);
void read_identity(Reader& r, const YAML::Node& n, IdentityConfig& out);
void read_roles(Reader& r, const YAML::Node& n, std::vector<Role>& out);
// After identity and roles: a binding names one of the roles and, for each user, an issuer.
void read_bindings(Reader& r, const YAML::Node& n, const IdentityConfig& identity,
                   const std::vector<Role>& roles, std::vector<RoleBinding>& out);
// An error unless `name` is one of identity's issuers.
void check_issuer_name(const YAML::Node& at, const std::string& what, const std::string& name,
                       const IdentityConfig& identity);
// principals[].certificate is refused unless server.tls.clientCAFile is set.
void check_certificates_need_client_ca(Reader& r, const YAML::Node& principals,
                                       const ServerConfig& server);
void read_tiers(Reader& r, const YAML::Node& n, std::map<Risk, sandbox::Limits>& tiers,
                std::map<Risk, TierBackend>& backends);
// tiers.<risk>'s backend keys (backend, gvisor, kubernetes), beside its limits.
inline const std::set<std::string> kTierBackendKeys = {"backend", "gvisor", "kubernetes"};
void read_tier_backend(Reader& r, const YAML::Node& n, const std::string& what, TierBackend& out);
void read_gvisor(Reader& r, const YAML::Node& n, const std::string& what, GvisorConfig& out);
void read_kubernetes(Reader& r, const YAML::Node& n, const std::string& what, KubernetesConfig& out);
// tools[].kubernetes
void read_placement(Reader& r, const YAML::Node& n, const std::string& what, ToolPlacement& out);
// tools[].approval (config_approvals.cpp)
void read_approval(Reader& r, const YAML::Node& n, const std::string& what, ApprovalPolicy& out);
// tools[].warm (config_warm.cpp); warm_conflict: why this tool cannot have one, or "".
void read_warm(Reader& r, const YAML::Node& n, const std::string& what, WarmPolicy& out);
std::string warm_conflict(const ToolConfig& t);
// Every warm tool has its template, within server.maxWarmTemplates.
void check_warm_templates(Reader& r, const YAML::Node& tools, const Config& c);
// quotas (config_quotas.cpp); after principals: its entries name them.
void read_quotas(Reader& r, const YAML::Node& n, const std::vector<Principal>& principals, QuotasConfig& out);
// After credentialServers: a tool's postgres credential names one of them.
void read_tools(Reader& r, const YAML::Node& n, const std::string& label,
                const std::vector<CredentialServer>& servers, std::vector<ToolConfig>& out);
void read_credential_servers(Reader& r, const YAML::Node& n, std::vector<CredentialServer>& out);
// After tools: a server's name must not be the first segment of a configured tool's name.
void read_mcp_servers(Reader& r, const YAML::Node& n, const std::string& label,
                      const std::vector<ToolConfig>& tools,
                      const std::vector<CredentialServer>& credential_servers,
                      std::vector<McpServerConfig>& out);
// A `network` block (allow, forward, resolve), compiled as a whole once each rule parsed:
// tools[].network and mcpServers[].network.
void read_network(Reader& r, const YAML::Node& n, const std::string& what, egress::EgressRules& net);
// A `validation` block (tools[].validation, sessionTemplates[].validation).
void read_validation(Reader& r, const YAML::Node& v, const std::string& what, ValidationConfig& out);
// An `env` mapping: each name a variable name, each value a string.
void read_env(Reader& r, const YAML::Node& n, const std::string& what,
              std::map<std::string, std::string>& out);
// tools[].credentials and mcpServers[].credentials, after the env and network of what they
// are for (an injected host is added to `network`'s allowed endpoints).
void read_credentials(Reader& r, const YAML::Node& n, const std::string& what,
                      const std::vector<CredentialServer>& servers,
                      const std::map<std::string, std::string>& env, egress::EgressRules& network,
                      std::vector<CredentialSpec>& out);
// sessionTemplates (config_session_templates.cpp)
void read_session_templates(Reader& r, const YAML::Node& n, const std::string& label,
                            const std::vector<CredentialServer>& servers, std::vector<SessionTemplate>& out);
// webhooks (config_webhooks.cpp): each secret is read from its variable or file here.
void read_webhooks(Reader& r, const YAML::Node& n, const std::string& label, std::vector<WebhookConfig>& out);
// An environment variable's name: letters, digits and '_', not starting with a digit.
bool is_variable_name(const std::string& key);

// A tier's limits with a tool's (or the config's) overrides applied.
sandbox::Limits with_overrides(sandbox::Limits l, const LimitOverrides& o);

}  // namespace airlock::policy::detail
