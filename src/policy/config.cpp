#include "policy/config.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/digest.hpp"
#include "common/units.hpp"
#include "egress/policy.hpp"
#include "policy/json_schema.hpp"
#include "policy/schema_internal.hpp"

namespace airlock::policy {
namespace {

namespace fs = std::filesystem;

// Thrown inside the parser only; load_config turns it into an Error naming file:line.
struct ConfigError {
  YAML::Mark mark;
  std::string message;
};

[[noreturn]] void fail_at(const YAML::Mark& mark, const std::string& message) {
  throw ConfigError{mark, message};
}

[[noreturn]] void fail(const YAML::Node& at, const std::string& message) {
  fail_at(at.Mark(), message);
}

class Reader {
 public:
  Reader(std::string base_dir) : base_dir_(std::move(base_dir)) {}

  void expect_map(const YAML::Node& n, const std::string& what) {
    if (!n.IsMap()) fail(n, what + ": expected a mapping");
  }

  // Rejects keys the schema does not know (a typo must not silently mean "default").
  void only_keys(const YAML::Node& n, const std::string& what, std::set<std::string> known) {
    expect_map(n, what);
    for (const auto& kv : n) {
      auto key = kv.first.as<std::string>();
      if (!known.count(key)) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        fail(kv.first, what + ": unknown field '" + key + "' (expected one of: " + list + ")");
      }
    }
  }

  std::string string(const YAML::Node& n, const std::string& what) {
    if (!n.IsScalar()) fail(n, what + ": expected a string");
    return n.as<std::string>();
  }

  std::vector<std::string> strings(const YAML::Node& n, const std::string& what) {
    if (!n.IsSequence()) fail(n, what + ": expected a list of strings");
    std::vector<std::string> out;
    for (const auto& item : n) out.push_back(string(item, what));
    return out;
  }

  std::uint64_t unsigned_int(const YAML::Node& n, const std::string& what, std::uint64_t max) {
    if (!n.IsScalar()) fail(n, what + ": expected a whole number");
    std::string s = n.as<std::string>();
    std::uint64_t v = 0;
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19 ||
        (v = std::stoull(s)) > max)
      fail(n, what + ": expected a whole number from 0 to " + std::to_string(max) + ", got '" + s + "'");
    return v;
  }

  bool boolean(const YAML::Node& n, const std::string& what) {
    if (!n.IsScalar()) fail(n, what + ": expected true or false");
    std::string s = n.as<std::string>();
    if (s == "true") return true;
    if (s == "false") return false;
    fail(n, what + ": expected true or false, got '" + s + "'");
  }

  std::chrono::milliseconds duration(const YAML::Node& n, const std::string& what) {
    auto d = parse_duration(string(n, what));
    if (!d) fail(n, what + ": " + d.error().message);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    if (ms.count() <= 0) fail(n, what + ": must be positive");
    return ms;
  }

  std::uint64_t size(const YAML::Node& n, const std::string& what) {
    auto s = parse_size(string(n, what));
    if (!s) fail(n, what + ": " + s.error().message);
    return *s;
  }

  std::string path(const YAML::Node& n, const std::string& what) {
    std::string p = string(n, what);
    if (p.empty()) fail(n, what + ": empty path");
    return fs::path(p).is_absolute() ? p : (fs::path(base_dir_) / p).lexically_normal().string();
  }

  // YAML to JSON for schemas; numbers stay numbers, strings strings.
  nlohmann::json json(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Map: {
        nlohmann::json j = nlohmann::json::object();
        for (const auto& kv : n) j[kv.first.as<std::string>()] = json(kv.second);
        return j;
      }
      case YAML::NodeType::Sequence: {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& item : n) j.push_back(json(item));
        return j;
      }
      case YAML::NodeType::Scalar: {
        std::string s = n.Scalar();
        if (n.Tag() == "!") return s;  // quoted: a string
        if (s == "true") return true;
        if (s == "false") return false;
        if (s == "null" || s == "~") return nullptr;
        try {
          std::size_t used = 0;
          if (s.find_first_of(".eE") == std::string::npos) {
            long long v = std::stoll(s, &used);
            if (used == s.size()) return v;
          } else {
            double v = std::stod(s, &used);
            if (used == s.size()) return v;
          }
        } catch (const std::exception&) {
        }
        return s;
      }
      default:
        return nullptr;
    }
  }

  sandbox::Limits limits(const YAML::Node& n, const std::string& what, sandbox::Limits base) {
    only_keys(n, what, {"timeout", "cpuTime", "memory", "pids", "disk", "output", "openFiles"});
    if (n["timeout"]) base.wall_time = duration(n["timeout"], what + ".timeout");
    if (n["cpuTime"]) base.cpu_time = duration(n["cpuTime"], what + ".cpuTime");
    if (n["memory"]) base.memory_bytes = size(n["memory"], what + ".memory");
    if (n["pids"]) base.pids = static_cast<std::uint32_t>(unsigned_int(n["pids"], what + ".pids", 65536));
    if (n["disk"]) base.disk_bytes = size(n["disk"], what + ".disk");
    if (n["output"]) base.output_bytes = size(n["output"], what + ".output");
    if (n["openFiles"])
      base.open_files = static_cast<std::uint32_t>(unsigned_int(n["openFiles"], what + ".openFiles", 1 << 20));
    return base;
  }

  LimitOverrides overrides(const YAML::Node& n, const std::string& what) {
    only_keys(n, what, {"timeout", "cpuTime", "memory", "pids", "disk", "output", "openFiles"});
    LimitOverrides o;
    if (n["timeout"]) o.timeout = duration(n["timeout"], what + ".timeout");
    if (n["cpuTime"]) o.cpu_time = duration(n["cpuTime"], what + ".cpuTime");
    if (n["memory"]) o.memory = size(n["memory"], what + ".memory");
    if (n["pids"]) o.pids = static_cast<std::uint32_t>(unsigned_int(n["pids"], what + ".pids", 65536));
    if (n["disk"]) o.disk = size(n["disk"], what + ".disk");
    if (n["output"]) o.output = size(n["output"], what + ".output");
    if (n["openFiles"])
      o.open_files = static_cast<std::uint32_t>(unsigned_int(n["openFiles"], what + ".openFiles", 1 << 20));
    return o;
  }

  Risk risk(const YAML::Node& n, const std::string& what) {
    std::string s = string(n, what);
    if (s == "low") return Risk::low;
    if (s == "medium") return Risk::medium;
    if (s == "high") return Risk::high;
    if (s == "critical") return Risk::critical;
    fail(n, what + ": expected low, medium, high or critical, got '" + s + "'");
  }

 private:
  std::string base_dir_;
};

void read_server(Reader& r, const YAML::Node& n, ServerConfig& s) {
  r.only_keys(n, "server", {"listen", "maxBodyBytes", "maxConcurrentInvocations", "queueLength", "drainTimeout",
                            "maxJsonDepth"});
  if (n["listen"]) {
    std::string listen = r.string(n["listen"], "server.listen");
    auto colon = listen.rfind(':');
    if (colon == std::string::npos || colon == 0)
      fail(n["listen"], "server.listen: expected HOST:PORT, got '" + listen + "'");
    s.listen_host = listen.substr(0, colon);
    YAML::Node port(listen.substr(colon + 1));
    try {
      s.listen_port = static_cast<std::uint16_t>(std::stoul(listen.substr(colon + 1)));
    } catch (const std::exception&) {
      fail(n["listen"], "server.listen: bad port in '" + listen + "'");
    }
  }
  if (n["maxBodyBytes"]) s.max_body_bytes = r.size(n["maxBodyBytes"], "server.maxBodyBytes");
  if (n["maxConcurrentInvocations"])
    s.max_concurrent_invocations = static_cast<unsigned>(
        r.unsigned_int(n["maxConcurrentInvocations"], "server.maxConcurrentInvocations", 4096));
  if (s.max_concurrent_invocations == 0) fail(n["maxConcurrentInvocations"], "server.maxConcurrentInvocations: must be at least 1");
  if (n["queueLength"])
    s.queue_length = static_cast<unsigned>(r.unsigned_int(n["queueLength"], "server.queueLength", 1 << 20));
  if (n["drainTimeout"]) s.drain_timeout = r.duration(n["drainTimeout"], "server.drainTimeout");
  if (n["maxJsonDepth"])
    s.max_json_depth = r.unsigned_int(n["maxJsonDepth"], "server.maxJsonDepth", 256);
  if (s.max_json_depth == 0) fail(n["maxJsonDepth"], "server.maxJsonDepth: must be at least 1");
}

void read_storage(Reader& r, const YAML::Node& n, StorageConfig& s) {
  r.only_keys(n, "storage", {"dataDir", "checkpointEvery", "checkpointInterval"});
  if (n["dataDir"]) s.data_dir = r.path(n["dataDir"], "storage.dataDir");
  if (n["checkpointEvery"])
    s.checkpoint_every = static_cast<std::uint32_t>(r.unsigned_int(n["checkpointEvery"], "storage.checkpointEvery", 1 << 30));
  if (n["checkpointInterval"]) s.checkpoint_interval = r.duration(n["checkpointInterval"], "storage.checkpointInterval");
}

Principal read_principal(Reader& r, const YAML::Node& n, std::size_t i) {
  std::string what = "principals[" + std::to_string(i) + "]";
  r.only_keys(n, what, {"name", "apiKeySha256", "tools"});
  Principal p;
  if (!n["name"]) fail(n, what + ": missing name");
  p.name = r.string(n["name"], what + ".name");
  if (!n["apiKeySha256"]) fail(n, what + ": missing apiKeySha256 (the SHA-256 of the API key, hex)");
  p.api_key_sha256 = r.string(n["apiKeySha256"], what + ".apiKeySha256");
  for (auto& c : p.api_key_sha256) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (p.api_key_sha256.size() != 64 || p.api_key_sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail(n["apiKeySha256"], what + ".apiKeySha256: expected 64 hex digits (the SHA-256 of the key, not the key)");
  if (n["tools"]) p.tools = r.strings(n["tools"], what + ".tools");
  return p;
}

// A tool's schema compiled, or every problem in it, each at its own file:line:column.
std::shared_ptr<const JsonSchema> compile_schema(const YAML::Node& n, const nlohmann::json& schema,
                                                 const std::string& what,
                                                 const std::string& label) {
  auto compiled = JsonSchema::compile(schema);
  if (compiled.schema) return compiled.schema;
  std::string more;
  for (std::size_t i = 1; i < compiled.problems.size(); ++i) {
    const auto& p = compiled.problems[i];
    auto mark = detail::mark_at(n, p.pointer);
    more += "\n" + label + ":" + std::to_string(mark.line + 1) + ":" +
            std::to_string(mark.column + 1) + ": " + what + p.pointer + ": " + p.message;
  }
  const auto& first = compiled.problems.front();
  fail_at(detail::mark_at(n, first.pointer), what + first.pointer + ": " + first.message + more);
}

ToolConfig read_tool(Reader& r, const YAML::Node& n, std::size_t i, const std::string& label) {
  std::string what = "tools[" + std::to_string(i) + "]";
  r.only_keys(n, what, {"name", "description", "risk", "runtime", "inputSchema", "outputSchema", "limits",
                        "network", "validation", "dataPaths", "env"});
  ToolConfig t;
  t.where = label + ":" + std::to_string(n.Mark().line + 1);
  if (!n["name"]) fail(n, what + ": missing name");
  t.name = r.string(n["name"], what + ".name");
  if (t.name.empty() || t.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos)
    fail(n["name"], what + ".name: use lower-case letters, digits, '-', '_' and '.'");
  what = "tool " + t.name;
  if (n["description"]) t.description = r.string(n["description"], what + ".description");
  if (n["risk"]) t.risk = r.risk(n["risk"], what + ".risk");
  if (!n["runtime"]) fail(n, what + ": missing runtime");
  {
    const auto& rt = n["runtime"];
    r.only_keys(rt, what + ".runtime", {"type", "file", "command", "interpreter"});
    if (!rt["type"]) fail(rt, what + ".runtime: missing type (python, command or python-code)");
    std::string type = r.string(rt["type"], what + ".runtime.type");
    if (type == "python") {
      t.runtime.kind = ToolRuntime::Kind::python;
      if (!rt["file"]) fail(rt, what + ".runtime: python needs file (a module defining run(args))");
      t.runtime.file = r.path(rt["file"], what + ".runtime.file");
      if (!fs::is_regular_file(t.runtime.file))
        fail(rt["file"], what + ".runtime.file: " + t.runtime.file + " is not a file");
    } else if (type == "command") {
      t.runtime.kind = ToolRuntime::Kind::command;
      if (!rt["command"]) fail(rt, what + ".runtime: command needs command (a list: program and arguments)");
      t.runtime.command = r.strings(rt["command"], what + ".runtime.command");
      if (t.runtime.command.empty()) fail(rt["command"], what + ".runtime.command: empty");
    } else if (type == "python-code") {
      t.runtime.kind = ToolRuntime::Kind::python_code;
    } else {
      fail(rt["type"], what + ".runtime.type: expected python, command or python-code, got '" + type + "'");
    }
    if (rt["interpreter"]) t.runtime.interpreter = r.string(rt["interpreter"], what + ".runtime.interpreter");
  }
  if (n["inputSchema"]) {
    if (!n["inputSchema"].IsMap()) fail(n["inputSchema"], what + ".inputSchema: expected a JSON Schema object");
    t.input_schema = r.json(n["inputSchema"]);
  }
  t.input_check = compile_schema(n["inputSchema"] ? n["inputSchema"] : n, t.input_schema,
                                 what + ".inputSchema", label);
  if (n["outputSchema"]) {
    if (!n["outputSchema"].IsMap()) fail(n["outputSchema"], what + ".outputSchema: expected a JSON Schema object");
    t.output_schema = r.json(n["outputSchema"]);
    t.output_check =
        compile_schema(n["outputSchema"], *t.output_schema, what + ".outputSchema", label);
  }
  if (n["limits"]) t.limits = r.overrides(n["limits"], what + ".limits");
  if (n["network"]) {
    const auto& net = n["network"];
    r.only_keys(net, what + ".network", {"allow", "forward", "resolve"});
    if (net["allow"])
      for (const auto& item : net["allow"]) {
        auto rule = egress::parse_allow_rule(r.string(item, what + ".network.allow"));
        if (!rule) fail(item, what + ".network.allow: " + rule.error().message);
        t.network.allow.push_back(*rule);
      }
    if (net["forward"])
      for (const auto& item : net["forward"]) {
        auto f = egress::parse_forward(r.string(item, what + ".network.forward"));
        if (!f) fail(item, what + ".network.forward: " + f.error().message);
        t.network.forwards.push_back(*f);
      }
    if (net["resolve"]) {
      r.expect_map(net["resolve"], what + ".network.resolve");
      for (const auto& kv : net["resolve"])
        t.network.resolve[kv.first.as<std::string>()] = r.string(kv.second, what + ".network.resolve");
    }
    if (auto compiled = egress::EgressPolicy::compile(t.network); !compiled)
      fail(net, what + ".network: " + compiled.error().message);
  }
  if (n["validation"]) {
    const auto& v = n["validation"];
    r.only_keys(v, what + ".validation", {"allowImports", "allowHosts", "writeRoots", "readRoots", "allowDynamicPaths"});
    if (v["allowImports"]) t.validation.allow_imports = r.strings(v["allowImports"], what + ".validation.allowImports");
    if (v["allowHosts"]) t.validation.allow_hosts = r.strings(v["allowHosts"], what + ".validation.allowHosts");
    if (v["writeRoots"]) t.validation.write_roots = r.strings(v["writeRoots"], what + ".validation.writeRoots");
    if (v["readRoots"]) t.validation.read_roots = r.strings(v["readRoots"], what + ".validation.readRoots");
    if (v["allowDynamicPaths"]) t.validation.allow_dynamic_paths = r.boolean(v["allowDynamicPaths"], what + ".validation.allowDynamicPaths");
  }
  if (n["dataPaths"]) {
    if (!n["dataPaths"].IsSequence()) fail(n["dataPaths"], what + ".dataPaths: expected a list of paths");
    for (const auto& item : n["dataPaths"]) {
      std::string p = r.path(item, what + ".dataPaths");
      if (!fs::exists(p)) fail(item, what + ".dataPaths: " + p + " does not exist");
      t.data_paths.push_back(p);
    }
  }
  if (n["env"]) {
    r.expect_map(n["env"], what + ".env");
    for (const auto& kv : n["env"]) {
      std::string key = kv.first.as<std::string>();
      if (key.empty() || key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos ||
          std::isdigit(static_cast<unsigned char>(key[0])))
        fail(kv.first, what + ".env: '" + key + "' is not a valid variable name");
      t.env[key] = r.string(kv.second, what + ".env." + key);
    }
  }
  return t;
}

Config read_config(const YAML::Node& root, const std::string& label, const std::string& base_dir) {
  Reader r(base_dir);
  r.only_keys(root, "the configuration", {"apiVersion", "kind", "server", "storage", "principals", "tiers", "tools", "dlp"});
  if (!root["apiVersion"] || r.string(root["apiVersion"], "apiVersion") != kApiVersion)
    fail(root["apiVersion"] ? root["apiVersion"] : root, std::string("apiVersion: expected ") + kApiVersion);
  if (!root["kind"] || r.string(root["kind"], "kind") != kKind)
    fail(root["kind"] ? root["kind"] : root, std::string("kind: expected ") + kKind);
  Config c;
  c.path = label;
  c.tiers = default_tiers();
  if (root["server"]) read_server(r, root["server"], c.server);
  if (root["storage"]) read_storage(r, root["storage"], c.storage);
  if (root["dlp"]) {
    r.only_keys(root["dlp"], "dlp", {"policy"});
    if (root["dlp"]["policy"]) {
      c.dlp_policy = r.path(root["dlp"]["policy"], "dlp.policy");
      if (!fs::is_regular_file(c.dlp_policy))
        fail(root["dlp"]["policy"], "dlp.policy: " + c.dlp_policy + " is not a file");
    }
  }
  if (root["principals"]) {
    if (!root["principals"].IsSequence()) fail(root["principals"], "principals: expected a list");
    std::set<std::string> names, keys;
    std::size_t i = 0;
    for (const auto& p : root["principals"]) {
      auto principal = read_principal(r, p, i++);
      if (!names.insert(principal.name).second) fail(p, "principals: '" + principal.name + "' is defined twice");
      if (!keys.insert(principal.api_key_sha256).second) fail(p, "principals: two principals share an API key");
      c.principals.push_back(std::move(principal));
    }
  }
  if (root["tiers"]) {
    const auto& tiers = root["tiers"];
    r.only_keys(tiers, "tiers", {"low", "medium", "high", "critical"});
    for (const auto& kv : tiers) {
      Risk risk = r.risk(kv.first, "tiers");
      c.tiers[risk] = r.limits(kv.second, "tiers." + std::string(risk_name(risk)), c.tiers[risk]);
    }
  }
  if (root["tools"]) {
    if (!root["tools"].IsSequence()) fail(root["tools"], "tools: expected a list");
    std::set<std::string> names;
    std::size_t i = 0;
    for (const auto& t : root["tools"]) {
      auto tool = read_tool(r, t, i++, label);
      if (!names.insert(tool.name).second) fail(t, "tools: '" + tool.name + "' is defined twice");
      c.tools.push_back(std::move(tool));
    }
  }
  return c;
}

}  // namespace

std::string_view risk_name(Risk r) {
  switch (r) {
    case Risk::low: return "low";
    case Risk::medium: return "medium";
    case Risk::high: return "high";
    case Risk::critical: return "critical";
  }
  return "critical";
}

std::map<Risk, sandbox::Limits> default_tiers() {
  using namespace std::chrono_literals;
  sandbox::Limits low;
  low.wall_time = 10s;
  low.cpu_time = 5s;
  low.memory_bytes = 256ULL << 20;
  low.pids = 32;
  low.disk_bytes = 32ULL << 20;
  low.output_bytes = 1ULL << 20;
  sandbox::Limits medium = low;
  medium.wall_time = 30s;
  medium.cpu_time = 20s;
  medium.memory_bytes = 512ULL << 20;
  medium.pids = 64;
  medium.disk_bytes = 128ULL << 20;
  sandbox::Limits high = medium;
  high.wall_time = 120s;
  high.cpu_time = 60s;
  high.memory_bytes = 1ULL << 30;
  high.pids = 128;
  return {{Risk::low, low}, {Risk::medium, medium}, {Risk::high, high}, {Risk::critical, high}};
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

const Principal* Config::find_principal_by_key(std::string_view api_key) const {
  const std::string hash = sha256_hex(api_key);
  const Principal* found = nullptr;
  for (const auto& p : principals)  // no early exit
    if (constant_time_equal(p.api_key_sha256, hash)) found = &p;
  return found;
}

sandbox::Limits Config::limits_for(const ToolConfig& tool) const {
  sandbox::Limits l = tiers.at(tool.risk);
  const auto& o = tool.limits;
  if (o.timeout) l.wall_time = *o.timeout;
  if (o.cpu_time) l.cpu_time = *o.cpu_time;
  if (o.memory) l.memory_bytes = *o.memory;
  if (o.disk) l.disk_bytes = *o.disk;
  if (o.output) l.output_bytes = *o.output;
  if (o.pids) l.pids = *o.pids;
  if (o.open_files) l.open_files = *o.open_files;
  return l;
}

Result<Config> parse_config(const std::string& yaml, const std::string& label, const std::string& base_dir) {
  try {
    YAML::Node root = YAML::Load(yaml);
    if (!root.IsMap()) return Error::make("config", label + ":1: expected a mapping with apiVersion and kind");
    return read_config(root, label, base_dir);
  } catch (const ConfigError& e) {
    return Error::make("config", label + ":" + std::to_string(e.mark.line + 1) + ":" +
                                     std::to_string(e.mark.column + 1) + ": " + e.message);
  } catch (const YAML::Exception& e) {
    return Error::make("config", label + ":" + std::to_string(e.mark.line + 1) + ":" +
                                     std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return Error::make("config", label + ": " + e.what());
  }
}

Result<Config> load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::make("config", path + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  auto base = fs::absolute(path).parent_path().string();
  return parse_config(ss.str(), path, base);
}

}  // namespace airlock::policy
