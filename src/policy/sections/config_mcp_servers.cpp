// The mcpServers section: third-party MCP servers the gateway runs in the sandbox
// (docs/config.md, "mcpServers"). Their tools become "<name>.<tool>" in the registry, so a
// server's name is one segment of a tool name and no configured tool may use it as its first.
#include <algorithm>
#include <filesystem>

#include "common/split.hpp"
#include "egress/proxy.hpp"
#include "policy/config_reader.hpp"
#include "policy/names.hpp"

namespace airlock::policy::detail {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// Where a server's data may not go: what the sandbox itself lays out (system trees, its
// work dir and /tmp, the kernel's file systems), so a bind can never hide or replace them.
constexpr const char* kReservedInside[] = {"/proc",   "/sys",  "/dev",  "/etc",   "/usr",
                                           "/bin",    "/sbin", "/lib",  "/lib32", "/lib64",
                                           "/libx32", "/tmp",  "/work", "/run"};

// Variables the sandbox sets for every run (sandbox/plan.cpp, backend/ca_bundle.cpp): a
// server's env may not point them elsewhere (the proxy, the CA bundle, its home).
constexpr const char* kCaVariables[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                                        "NODE_EXTRA_CA_CERTS"};

constexpr milliseconds kMinTimeout{1'000};
constexpr milliseconds kMaxIdleTimeout{24 * 3'600'000};
constexpr milliseconds kMaxCallTimeout{3'600'000};
constexpr milliseconds kMaxStartTimeout{600'000};

bool is_within(const std::string& path, const std::string& root) {
  return path == root || path.starts_with(root + "/");
}

bool is_reserved_variable(const std::string& name) {
  if (name == "HOME" || name.starts_with("AIRLOCK_")) return true;
  if (std::find(std::begin(kCaVariables), std::end(kCaVariables), name) != std::end(kCaVariables))
    return true;
  const auto proxy = egress::proxy_environment();
  return std::any_of(proxy.begin(), proxy.end(), [&](const auto& kv) { return kv.first == name; });
}

// A segment of a tool name: the tool name rule without '.', which separates the segments.
bool valid_server_name(const std::string& name) {
  return valid_tool_name(name) && name.find('.') == std::string::npos;
}

// A glob on the server's tool names: their characters, '*' and '?'.
bool valid_tool_glob(const std::string& glob) {
  if (glob.empty()) return false;
  std::string letters = glob;
  std::replace_if(
      letters.begin(), letters.end(), [](char c) { return c == '*' || c == '?'; }, 'a');
  return valid_tool_name(letters);
}

std::string inside_problem(const std::string& inside) {
  if (inside.empty() || inside[0] != '/') return "'" + inside + "' is not an absolute path";
  if (inside == "/") return "cannot bind onto / (the sandbox's root)";
  const bool normal = fs::path(inside).lexically_normal().string() == inside &&
                      inside.back() != '/' && inside.find("//") == std::string::npos;
  if (!normal) return "'" + inside + "' is not in normal form (no '.', '..', '//' or trailing '/')";
  for (const char* reserved : kReservedInside)
    if (is_within(inside, reserved))
      return "cannot bind onto " + inside + ": " + reserved + " is the sandbox's own";
  return "";
}

McpDataPath parse_data_path(Reader& r, const YAML::Node& item, const std::string& what) {
  const std::string text = r.string(item, what);
  const auto parts = split_nonempty(text, ':');
  const auto colons = static_cast<std::size_t>(std::count(text.begin(), text.end(), ':'));
  const bool shape =
      colons + 1 == parts.size() && (parts.size() == 2 || (parts.size() == 3 && parts[2] == "rw"));
  if (!shape)
    fail(item, what + ": expected HOST:INSIDE or HOST:INSIDE:rw (no ':' in either path), got '" +
                   text + "'");
  // The host path, like every path of the config, relative to the config file's directory.
  McpDataPath p{r.resolve(std::string(parts[0])), std::string(parts[1]), parts.size() == 3};
  std::error_code ec;
  if (!fs::exists(p.host_path, ec))
    fail(item, what + ": the host path " + p.host_path + " does not exist");
  p.host_path = fs::path(p.host_path).lexically_normal().string();
  if (auto problem = inside_problem(p.path_inside); !problem.empty())
    fail(item, what + ": " + problem);
  return p;
}

void read_data_paths(Reader& r, const YAML::Node& n, const std::string& what,
                     std::vector<McpDataPath>& out) {
  r.items(n, what, [&](const YAML::Node& item) {
    McpDataPath p = parse_data_path(r, item, what);
    for (const auto& before : out)
      if (is_within(p.path_inside, before.path_inside) ||
          is_within(before.path_inside, p.path_inside))
        fail(item, what + ": " + p.path_inside + " overlaps " + before.path_inside +
                       ", given before: one bind per directory");
    out.push_back(std::move(p));
  });
}

void read_overrides(Reader& r, const YAML::Node& n, const std::string& what, McpServerConfig& s) {
  r.expect_map(n, what);
  for (const auto& kv : n)
    r.guard([&] {
      const std::string name = kv.first.as<std::string>();
      if (!valid_tool_name(name)) fail(kv.first, what + ": '" + name + "': " + kToolNameRule);
      const bool allowed = s.tools_allow.empty() ||
                           std::any_of(s.tools_allow.begin(), s.tools_allow.end(),
                                       [&](const std::string& g) { return glob_match(g, name); });
      if (!allowed) fail(kv.first, what + ": '" + name + "' is not allowed by tools.allow");
      s.risk_overrides[name] = r.risk(kv.second, what + "." + name);
    });
}

void read_tool_filter(Reader& r, const YAML::Node& n, const std::string& what, McpServerConfig& s) {
  r.only_keys(n, what, {"allow", "riskOverrides"});
  r.field(n, "allow", [&](const YAML::Node& v) {
    r.items(v, what + ".allow", [&](const YAML::Node& item) {
      std::string glob = r.string(item, what + ".allow");
      if (!valid_tool_glob(glob))
        fail(item, what + ".allow: '" + glob +
                       "': use lower-case letters, digits, '-', '_', '.', '*' and '?'");
      s.tools_allow.push_back(std::move(glob));
    });
  });
  // After allow: an override must name a tool that allow admits.
  r.field(n, "riskOverrides",
          [&](const YAML::Node& v) { read_overrides(r, v, what + ".riskOverrides", s); });
}

void read_server_env(Reader& r, const YAML::Node& n, const std::string& what,
                     std::map<std::string, std::string>& out) {
  read_env(r, n, what, out);
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    if (is_variable_name(key) && is_reserved_variable(key))
      r.error(kv.first, what + ": " + key + " is set by Airlock for every sandbox");
  }
}

milliseconds bounded_duration(Reader& r, const YAML::Node& v, const std::string& what,
                              milliseconds max, const char* max_text) {
  const milliseconds d = r.duration(v, what);
  if (d < kMinTimeout || d > max) fail(v, what + ": from 1s to " + max_text);
  return d;
}

void read_name(Reader& r, const YAML::Node& n, const std::string& what,
               const std::vector<ToolConfig>& tools, McpServerConfig& s) {
  if (!n["name"]) fail(n, what + ": missing name");
  s.name = r.string(n["name"], what + ".name");
  if (!valid_server_name(s.name))
    fail(n["name"], what + ".name: '" + s.name +
                        "': a server's name is its tools' first segment: use lower-case letters, "
                        "digits, '-' and '_'");
  for (const auto& t : tools)
    if (t.name.starts_with(s.name + "."))
      fail(n["name"], what + ".name: tool " + t.name + " (" + t.where + ") is named as " + s.name +
                          "'s tools are: rename one");
}

void read_command(Reader& r, const YAML::Node& n, const std::string& what, McpServerConfig& s) {
  if (!n["command"]) {
    r.error(n, what + ": missing command (a list: program and arguments)");
    return;
  }
  r.field(n, "command", [&](const YAML::Node& v) {
    s.command = r.strings(v, what + ".command");
    if (s.command.empty()) fail(v, what + ".command: empty");
    if (s.command.front().empty()) fail(v, what + ".command: the program is empty");
  });
}

// After env and network: a credential's variable is neither in env nor one the sandbox sets.
void read_server_credentials(Reader& r, const YAML::Node& n, const std::string& what,
                             const std::vector<CredentialServer>& credential_servers,
                             McpServerConfig& s) {
  read_credentials(r, n, what, credential_servers, s.env, s.network, s.credentials);
  for (const auto& c : s.credentials)
    if (is_reserved_variable(c.env))
      fail(n, what + ": " + c.env + " is set by the sandbox itself; give the credential another variable");
}

McpServerConfig read_server(Reader& r, const YAML::Node& n, std::size_t i, const std::string& label,
                            const std::vector<ToolConfig>& tools,
                            const std::vector<CredentialServer>& credential_servers) {
  std::string what = "mcpServers[" + std::to_string(i) + "]";
  r.expect_map(n, what);
  McpServerConfig s;
  s.where = label + ":" + std::to_string(n.Mark().line + 1);
  if (r.guard([&] { read_name(r, n, what, tools, s); })) what = "mcp server " + s.name;
  r.only_keys(n, what,
              {"name", "command", "dataPaths", "network", "risk", "tools", "env", "credentials",
               "idleTimeout", "callTimeout", "startTimeout", "maxInstances", "kubernetes"});
  read_command(r, n, what, s);
  r.field(n, "dataPaths",
          [&](const YAML::Node& v) { read_data_paths(r, v, what + ".dataPaths", s.data_paths); });
  r.field(n, "network",
          [&](const YAML::Node& v) { read_network(r, v, what + ".network", s.network); });
  r.field(n, "risk", [&](const YAML::Node& v) { s.risk = r.risk(v, what + ".risk"); });
  r.field(n, "tools", [&](const YAML::Node& v) { read_tool_filter(r, v, what + ".tools", s); });
  r.field(n, "env", [&](const YAML::Node& v) { read_server_env(r, v, what + ".env", s.env); });
  r.field(n, "credentials", [&](const YAML::Node& v) {
    read_server_credentials(r, v, what + ".credentials", credential_servers, s);
  });
  r.field(n, "idleTimeout", [&](const YAML::Node& v) {
    s.idle_timeout = bounded_duration(r, v, what + ".idleTimeout", kMaxIdleTimeout, "24h");
  });
  r.field(n, "callTimeout", [&](const YAML::Node& v) {
    s.call_timeout = bounded_duration(r, v, what + ".callTimeout", kMaxCallTimeout, "1h");
  });
  r.field(n, "startTimeout", [&](const YAML::Node& v) {
    s.start_timeout = bounded_duration(r, v, what + ".startTimeout", kMaxStartTimeout, "10m");
  });
  r.field(n, "maxInstances", [&](const YAML::Node& v) {
    s.max_instances = static_cast<unsigned>(r.unsigned_int(v, what + ".maxInstances", 4096));
    if (s.max_instances == 0) fail(v, what + ".maxInstances: must be at least 1");
  });
  r.field(n, "kubernetes",
          [&](const YAML::Node& v) { read_placement(r, v, what + ".kubernetes", s.placement); });
  return s;
}

}  // namespace

void read_mcp_servers(Reader& r, const YAML::Node& n, const std::string& label,
                      const std::vector<ToolConfig>& tools,
                      const std::vector<CredentialServer>& credential_servers,
                      std::vector<McpServerConfig>& out) {
  std::set<std::string> names;
  std::size_t i = 0;
  r.items(n, "mcpServers", [&](const YAML::Node& item) {
    auto server = read_server(r, item, i++, label, tools, credential_servers);
    if (!server.name.empty() && !names.insert(server.name).second)
      fail(item, "mcpServers: '" + server.name + "' is defined twice");
    out.push_back(std::move(server));
  });
}

}  // namespace airlock::policy::detail
