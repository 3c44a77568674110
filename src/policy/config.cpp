// The configuration as a whole: the checks of the YAML text, then each section
// (config_server.cpp, config_identity.cpp, config_roles.cpp, config_principals.cpp,
// config_tiers.cpp, config_tools.cpp, config_credentials.cpp, config_mcp_servers.cpp, config_webhooks.cpp,
// config_quotas.cpp), every
// error collected and reported in file order.
#include "policy/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/digest.hpp"
#include "policy/config_reader.hpp"
#include "policy/yaml_checks.hpp"

namespace airlock::policy {
namespace {

namespace fs = std::filesystem;
using detail::ConfigError;
using detail::Reader;

// apiVersion and kind first: a file that is not an Airlock config gets these two errors only.
bool is_airlock_config(Reader& r, const YAML::Node& root) {
  bool ok = true;
  for (auto [key, expected] : {std::pair{"apiVersion", kApiVersion}, std::pair{"kind", kKind}}) {
    const YAML::Node v = root[key];
    if (v && v.IsScalar() && v.Scalar() == expected) continue;
    r.error(v ? v.Mark() : root.Mark(), std::string(key) + ": expected " + expected);
    ok = false;
  }
  return ok;
}

// The named entries of `list` (a YAML sequence of maps), each as JSON under its name.
nlohmann::json entries_by_name(Reader& r, const YAML::Node& list) {
  nlohmann::json out = nlohmann::json::object();
  if (!list || !list.IsSequence()) return out;
  for (const auto& item : list)
    if (item.IsMap() && item["name"] && item["name"].IsScalar()) out[item["name"].Scalar()] = r.json(item);
  return out;
}

// The entries a call's decisions read, as written (pipeline/decision_basis.hpp compares a
// waiting call's by these). Mistakes in them are the section readers' to report: a part that
// does not read is left out.
nlohmann::json definitions_of(Reader& r, const YAML::Node& root) {
  nlohmann::json d = nlohmann::json::object();
  try {
    for (const char* section : {"tools", "principals", "roles", "credentialServers", "mcpServers", "sessionTemplates"})
      d[section] = entries_by_name(r, root[section]);
    d["issuers"] = root["identity"] && root["identity"].IsMap() ? entries_by_name(r, root["identity"]["issuers"])
                                                               : nlohmann::json::object();
    d["tiers"] = root["tiers"] ? r.json(root["tiers"]) : nlohmann::json::object();
    d["dlp"] = root["dlp"] ? r.json(root["dlp"]) : nlohmann::json();
  } catch (const YAML::Exception&) {
  }
  return d;
}

Config read_config(Reader& r, const YAML::Node& root, const std::string& label) {
  Config c;
  c.path = label;
  c.tiers = default_tiers();
  if (!is_airlock_config(r, root)) return c;
  r.only_keys(root, "the configuration",
              {"apiVersion", "kind", "server", "storage", "identity", "roles", "bindings",
               "principals", "tiers", "tools", "dlp", "credentialServers", "mcpServers", "webhooks",
               "quotas", "sessionTemplates"});
  r.field(root, "server", [&](const YAML::Node& v) { detail::read_server(r, v, c.server); });
  r.field(root, "storage", [&](const YAML::Node& v) { detail::read_storage(r, v, c.storage); });
  r.field(root, "dlp", [&](const YAML::Node& v) { detail::read_dlp(r, v, c.dlp_policy); });
  // In this order whatever the file's: bindings and principals name issuers and roles.
  r.field(root, "identity", [&](const YAML::Node& v) { detail::read_identity(r, v, c.identity); });
  r.field(root, "roles", [&](const YAML::Node& v) { detail::read_roles(r, v, c.roles); });
  r.field(root, "bindings", [&](const YAML::Node& v) {
    detail::read_bindings(r, v, c.identity, c.roles, c.bindings);
  });
  r.field(root, "principals",
          [&](const YAML::Node& v) { detail::read_principals(r, v, c.identity, c.principals); });
  if (root["principals"])
    detail::check_certificates_need_client_ca(r, root["principals"], c.server);
  r.field(root, "quotas", [&](const YAML::Node& v) { detail::read_quotas(r, v, c.principals, c.quotas); });
  c.quotas.fallback_concurrent = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(kMaxQuotaConcurrent, std::uint64_t{c.server.max_concurrent_invocations} + c.server.queue_length));
  r.field(root, "tiers", [&](const YAML::Node& v) { detail::read_tiers(r, v, c.tiers, c.tier_backends); });
  r.field(root, "credentialServers",
          [&](const YAML::Node& v) { detail::read_credential_servers(r, v, c.credential_servers); });
  r.field(root, "tools", [&](const YAML::Node& v) {
    detail::read_tools(r, v, label, c.credential_servers, c.tools);
  });
  if (root["tools"]) detail::check_warm_templates(r, root["tools"], c);
  // After tools: a server's name may not be the first segment of a tool's.
  r.field(root, "mcpServers", [&](const YAML::Node& v) {
    detail::read_mcp_servers(r, v, label, c.tools, c.credential_servers, c.mcp_servers);
  });
  r.field(root, "webhooks", [&](const YAML::Node& v) { detail::read_webhooks(r, v, label, c.webhooks); });
  r.field(root, "sessionTemplates", [&](const YAML::Node& v) {
    detail::read_session_templates(r, v, label, c.credential_servers, c.session_templates);
  });
  c.definitions = definitions_of(r, root);
  return c;
}

// Builds the tree (scan_document found it safe to) and reads it; mistakes go to `issues`.
Config read_document(const std::string& yaml, const std::string& label, const std::string& base_dir,
                     std::vector<ConfigIssue>& issues) {
  Reader r(base_dir, issues);
  try {
    YAML::Node root = YAML::Load(yaml);
    if (root.IsMap()) return read_config(r, root, label);
    r.error(YAML::Mark(), "expected a mapping with apiVersion and kind");
  } catch (const ConfigError& e) {
    r.error(e.mark, e.message);
  } catch (const YAML::Exception& e) {
    r.error(e.mark, e.msg);
  } catch (const std::exception& e) {
    r.error(YAML::Mark::null_mark(), e.what());
  }
  return Config{};
}

// One "label:line:column: message" per line, in file order.
std::string format_issues(const std::string& label, std::vector<ConfigIssue> issues) {
  std::stable_sort(issues.begin(), issues.end(), [](const ConfigIssue& a, const ConfigIssue& b) {
    return std::pair(a.mark.line, a.mark.column) < std::pair(b.mark.line, b.mark.column);
  });
  std::string out;
  for (std::size_t n = 0; n < issues.size() && n < kMaxConfigErrorsShown; ++n) {
    const auto& i = issues[n];
    if (!out.empty()) out += "\n";
    out += label;
    if (!i.mark.is_null())
      out += ":" + std::to_string(i.mark.line + 1) + ":" + std::to_string(i.mark.column + 1);
    out += ": " + i.message;
  }
  if (issues.size() > kMaxConfigErrorsShown)
    out += "\n" + label + ": and " + std::to_string(issues.size() - kMaxConfigErrorsShown) +
           " more errors";
  return out;
}

std::string too_big(const std::string& label) {
  return label + ": larger than " + std::to_string(kMaxConfigBytes) +
         " bytes, the limit for a configuration file";
}

}  // namespace

std::string_view risk_name(Risk r) {
  switch (r) {
    case Risk::low:
      return "low";
    case Risk::medium:
      return "medium";
    case Risk::high:
      return "high";
    case Risk::critical:
      return "critical";
  }
  return "critical";
}

bool glob_match(std::string_view p, std::string_view t) {
  std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

const ToolConfig* Config::find_tool(std::string_view name) const {
  for (const auto& t : tools)
    if (t.name == name) return &t;
  return nullptr;
}

const Principal* Config::find_principal(std::string_view name) const {
  for (const auto& p : principals)
    if (p.name == name) return &p;
  return nullptr;
}

const Role* Config::find_role(std::string_view name) const {
  for (const auto& r : roles)
    if (r.name == name) return &r;
  return nullptr;
}

const CredentialServer* Config::find_credential_server(std::string_view name) const {
  for (const auto& s : credential_servers)
    if (s.name == name) return &s;
  return nullptr;
}

const McpServerConfig* Config::find_mcp_server(std::string_view name) const {
  for (const auto& s : mcp_servers)
    if (s.name == name) return &s;
  return nullptr;
}

const Principal* Config::find_principal_by_key(std::string_view api_key) const {
  const std::string hash = sha256_hex(api_key);
  const Principal* found = nullptr;
  for (const auto& p : principals)  // no early exit
    if (constant_time_equal(p.api_key_sha256, hash)) found = &p;
  return found;
}

namespace {

bool matches(const CertificateMatch& m, const ClientCertificate& c) {
  if (!m.subject.empty()) return m.subject == c.subject;
  return !m.uri_san.empty() &&
         std::find(c.uri_sans.begin(), c.uri_sans.end(), m.uri_san) != c.uri_sans.end();
}

}  // namespace

const Principal* Config::find_principal_by_certificate(const ClientCertificate& certificate) const {
  const Principal* found = nullptr;
  for (const auto& p : principals) {
    if (!p.certificate || !matches(*p.certificate, certificate)) continue;
    if (found) return nullptr;  // ambiguous
    found = &p;
  }
  return found;
}

sandbox::Limits Config::limits_for(const ToolConfig& tool) const {
  return detail::with_overrides(tiers.at(tool.risk), tool.limits);
}

const SessionTemplate* Config::find_session_template(std::string_view name) const {
  for (const auto& t : session_templates)
    if (t.name == name) return &t;
  return nullptr;
}

sandbox::Limits Config::limits_for(const SessionTemplate& t) const {
  LimitOverrides o = t.limits;
  o.timeout.reset();  // an exec's, not the session's: its life is maxLifetime
  sandbox::Limits l = detail::with_overrides(tiers.at(t.risk), o);
  l.wall_time = t.max_lifetime;
  l.cpu_time = t.limits.cpu_time;  // the tier's budget is a call's; a session has one only if given
  l.cpus = t.cpus;
  return l;
}

Result<Config> parse_config(const std::string& yaml, const std::string& label,
                            const std::string& base_dir) {
  if (yaml.size() > kMaxConfigBytes) return Error::make("config", too_big(label));
  std::vector<ConfigIssue> issues;
  Config config;
  if (scan_document(yaml, issues)) config = read_document(yaml, label, base_dir, issues);
  if (!issues.empty()) return Error::make("config", format_issues(label, std::move(issues)));
  config.version = sha256_hex(yaml);
  return config;
}

Result<Config> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::make("config", path + ": cannot read the file");
  std::string text(kMaxConfigBytes + 1, '\0');  // one byte more: to tell "too big"
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) return Error::make("config", path + ": cannot read the file");
  auto base = fs::absolute(path).parent_path().string();
  return parse_config(text, path, base);
}

}  // namespace airlock::policy
