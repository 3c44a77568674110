#include "policy/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "common/digest.hpp"
#include "common/units.hpp"
#include "egress/address.hpp"
#include "egress/policy.hpp"
#include "policy/program_lookup.hpp"
#include "policy/yaml_checks.hpp"
#include "sandbox/plan.hpp"

namespace airlock::policy {
namespace {

namespace fs = std::filesystem;

// Thrown inside the reader only: Reader::guard records it and reading goes on with the next
// field, item or tool.
struct ConfigError {
  YAML::Mark mark;
  std::string message;
};

[[noreturn]] void fail(const YAML::Node& at, const std::string& message) {
  throw ConfigError{at.Mark(), message};
}

sandbox::Limits with_overrides(sandbox::Limits l, const LimitOverrides& o) {
  if (o.timeout) l.wall_time = *o.timeout;
  if (o.cpu_time) l.cpu_time = *o.cpu_time;
  if (o.memory) l.memory_bytes = *o.memory;
  if (o.disk) l.disk_bytes = *o.disk;
  if (o.output) l.output_bytes = *o.output;
  if (o.pids) l.pids = *o.pids;
  if (o.open_files) l.open_files = *o.open_files;
  return l;
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

  void expect_map(const YAML::Node& n, const std::string& what) {
    if (!n.IsMap()) fail(n, what + ": expected a mapping");
  }

  // Rejects keys the schema does not know (a typo must not silently mean "default").
  void only_keys(const YAML::Node& n, const std::string& what, std::set<std::string> known) {
    expect_map(n, what);
    for (const auto& kv : n) {
      auto key = kv.first.as<std::string>();
      if (known.count(key)) continue;
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      error(kv.first, what + ": unknown field '" + key + "' (expected one of: " + list + ")");
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
      fail(n, what + ": expected a whole number from 0 to " + std::to_string(max) + ", got '" + s +
                  "'");
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

  // YAML to JSON for schemas; numbers stay numbers, strings strings. The document has no
  // aliases and bounded depth (scan_document), so this expands nothing.
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
      case YAML::NodeType::Scalar:
        return json_scalar(n);
      default:
        return nullptr;
    }
  }

  LimitOverrides overrides(const YAML::Node& n, const std::string& what) {
    only_keys(n, what, {"timeout", "cpuTime", "memory", "pids", "disk", "output", "openFiles"});
    LimitOverrides o;
    field(n, "timeout", [&](const YAML::Node& v) { o.timeout = duration(v, what + ".timeout"); });
    field(n, "cpuTime", [&](const YAML::Node& v) { o.cpu_time = duration(v, what + ".cpuTime"); });
    field(n, "memory", [&](const YAML::Node& v) { o.memory = size(v, what + ".memory"); });
    field(n, "pids", [&](const YAML::Node& v) {
      o.pids = static_cast<std::uint32_t>(unsigned_int(v, what + ".pids", 65536));
    });
    field(n, "disk", [&](const YAML::Node& v) { o.disk = size(v, what + ".disk"); });
    field(n, "output", [&](const YAML::Node& v) { o.output = size(v, what + ".output"); });
    field(n, "openFiles", [&](const YAML::Node& v) {
      o.open_files = static_cast<std::uint32_t>(unsigned_int(v, what + ".openFiles", 1 << 20));
    });
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
  static nlohmann::json json_scalar(const YAML::Node& n) {
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

  std::string base_dir_;
  std::vector<ConfigIssue>& issues_;
};

void read_server(Reader& r, const YAML::Node& n, ServerConfig& s) {
  r.only_keys(
      n, "server",
      {"listen", "maxBodyBytes", "maxConcurrentInvocations", "queueLength", "drainTimeout"});
  r.field(n, "listen", [&](const YAML::Node& v) {
    auto listen = parse_listen(r.string(v, "server.listen"));
    if (!listen) fail(v, "server.listen: " + listen.error().message);
    s.listen_host = listen->host;
    s.listen_port = listen->port;
  });
  r.field(n, "maxBodyBytes",
          [&](const YAML::Node& v) { s.max_body_bytes = r.size(v, "server.maxBodyBytes"); });
  r.field(n, "maxConcurrentInvocations", [&](const YAML::Node& v) {
    const std::string what = "server.maxConcurrentInvocations";
    s.max_concurrent_invocations = static_cast<unsigned>(r.unsigned_int(v, what, 4096));
    if (s.max_concurrent_invocations == 0) fail(v, what + ": must be at least 1");
  });
  r.field(n, "queueLength", [&](const YAML::Node& v) {
    s.queue_length = static_cast<unsigned>(r.unsigned_int(v, "server.queueLength", 1 << 20));
  });
  r.field(n, "drainTimeout",
          [&](const YAML::Node& v) { s.drain_timeout = r.duration(v, "server.drainTimeout"); });
}

void read_storage(Reader& r, const YAML::Node& n, StorageConfig& s) {
  r.only_keys(n, "storage", {"dataDir", "checkpointEvery", "checkpointInterval"});
  r.field(n, "dataDir", [&](const YAML::Node& v) { s.data_dir = r.path(v, "storage.dataDir"); });
  r.field(n, "checkpointEvery", [&](const YAML::Node& v) {
    s.checkpoint_every =
        static_cast<std::uint32_t>(r.unsigned_int(v, "storage.checkpointEvery", 1 << 30));
  });
  r.field(n, "checkpointInterval", [&](const YAML::Node& v) {
    s.checkpoint_interval = r.duration(v, "storage.checkpointInterval");
  });
}

void read_dlp(Reader& r, const YAML::Node& n, std::string& policy) {
  r.only_keys(n, "dlp", {"policy"});
  r.field(n, "policy", [&](const YAML::Node& v) {
    policy = r.path(v, "dlp.policy");
    if (!fs::is_regular_file(policy)) fail(v, "dlp.policy: " + policy + " is not a file");
  });
}

std::string lower_hex_key(Reader& r, const YAML::Node& v, const std::string& what) {
  std::string key = r.string(v, what);
  for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key.size() != 64 || key.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail(v, what + ": expected 64 hex digits (the SHA-256 of the key, not the key)");
  return key;
}

Principal read_principal(Reader& r, const YAML::Node& n, const std::string& what) {
  r.only_keys(n, what, {"name", "apiKeySha256", "tools"});
  Principal p;
  if (!n["name"]) r.error(n, what + ": missing name");
  if (!n["apiKeySha256"])
    r.error(n, what + ": missing apiKeySha256 (the SHA-256 of the API key, hex)");
  r.field(n, "name", [&](const YAML::Node& v) { p.name = r.string(v, what + ".name"); });
  r.field(n, "apiKeySha256", [&](const YAML::Node& v) {
    p.api_key_sha256 = lower_hex_key(r, v, what + ".apiKeySha256");
  });
  r.field(n, "tools", [&](const YAML::Node& v) { p.tools = r.strings(v, what + ".tools"); });
  return p;
}

void read_principals(Reader& r, const YAML::Node& n, std::vector<Principal>& out) {
  std::set<std::string> names, keys;
  std::size_t i = 0;
  r.items(n, "principals", [&](const YAML::Node& item) {
    auto p = read_principal(r, item, "principals[" + std::to_string(i++) + "]");
    if (!p.name.empty() && !names.insert(p.name).second)
      fail(item, "principals: '" + p.name + "' is defined twice");
    if (!p.api_key_sha256.empty() && !keys.insert(p.api_key_sha256).second)
      fail(item, "principals: two principals share an API key");
    out.push_back(std::move(p));
  });
}

void read_tiers(Reader& r, const YAML::Node& n, std::map<Risk, sandbox::Limits>& tiers) {
  r.expect_map(n, "tiers");
  for (const auto& kv : n)
    r.guard([&] {
      Risk risk = r.risk(kv.first, "tiers");
      auto what = "tiers." + std::string(risk_name(risk));
      tiers[risk] = with_overrides(tiers[risk], r.overrides(kv.second, what));
    });
}

void read_runtime(Reader& r, const YAML::Node& rt, const std::string& what, ToolRuntime& out) {
  r.only_keys(rt, what, {"type", "file", "command", "interpreter"});
  r.field(rt, "interpreter",
          [&](const YAML::Node& v) { out.interpreter = r.string(v, what + ".interpreter"); });
  if (!rt["type"]) fail(rt, what + ": missing type (python, command or python-code)");
  std::string type = r.string(rt["type"], what + ".type");
  if (type == "python") {
    out.kind = ToolRuntime::Kind::python;
    if (!rt["file"]) fail(rt, what + ": python needs file (a module defining run(args))");
    out.file = r.path(rt["file"], what + ".file");
    if (!fs::is_regular_file(out.file))
      fail(rt["file"], what + ".file: " + out.file + " is not a file");
  } else if (type == "command") {
    out.kind = ToolRuntime::Kind::command;
    if (!rt["command"]) fail(rt, what + ": command needs command (a list: program and arguments)");
    out.command = r.strings(rt["command"], what + ".command");
    if (out.command.empty()) fail(rt["command"], what + ".command: empty");
  } else if (type == "python-code") {
    out.kind = ToolRuntime::Kind::python_code;
  } else {
    fail(rt["type"], what + ".type: expected python, command or python-code, got '" + type + "'");
  }
}

// The program (or the interpreter) must be there in the sandbox's view: looked up the way
// the sandbox will, in what it binds and on its PATH.
void check_program(const YAML::Node& rt, const std::string& what, const ToolConfig& t) {
  const bool command = t.runtime.kind == ToolRuntime::Kind::command;
  const std::string program = command ? t.runtime.command.front() : t.runtime.interpreter;
  const auto path_env = t.env.find("PATH");
  auto found = find_program_for_sandbox(
      program, t.data_paths, path_env != t.env.end() ? path_env->second : sandbox::kDefaultPath);
  if (found) return;
  const char* field = command ? "command" : "interpreter";
  fail(rt[field] ? rt[field] : rt, what + ".runtime." + field + ": " + found.error().message);
}

void read_network(Reader& r, const YAML::Node& n, const std::string& what,
                  sandbox::NetworkPolicy& net) {
  r.only_keys(n, what, {"allow", "forward", "resolve"});
  const std::size_t errors_before = r.error_count();
  r.field(n, "allow", [&](const YAML::Node& v) {
    r.items(v, what + ".allow", [&](const YAML::Node& item) {
      auto rule = egress::parse_allow_rule(r.string(item, what + ".allow"));
      if (!rule) fail(item, what + ".allow: " + rule.error().message);
      net.allow.push_back(*rule);
    });
  });
  r.field(n, "forward", [&](const YAML::Node& v) {
    r.items(v, what + ".forward", [&](const YAML::Node& item) {
      auto f = egress::parse_forward(r.string(item, what + ".forward"));
      if (!f) fail(item, what + ".forward: " + f.error().message);
      net.forwards.push_back(*f);
    });
  });
  r.field(n, "resolve", [&](const YAML::Node& v) {
    r.expect_map(v, what + ".resolve");
    for (const auto& kv : v)
      r.guard([&] {
        net.resolve[kv.first.as<std::string>()] = r.string(kv.second, what + ".resolve");
      });
  });
  if (r.error_count() != errors_before) return;  // the rules as a whole only when each parsed
  if (auto compiled = egress::EgressPolicy::compile(net); !compiled)
    fail(n, what + ": " + compiled.error().message);
}

void read_validation(Reader& r, const YAML::Node& v, const std::string& what,
                     ValidationConfig& out) {
  r.only_keys(v, what,
              {"allowImports", "allowHosts", "writeRoots", "readRoots", "allowDynamicPaths"});
  auto list = [&](const char* key, std::vector<std::string>& to) {
    r.field(v, key, [&](const YAML::Node& n) { to = r.strings(n, what + "." + key); });
  };
  list("allowImports", out.allow_imports);
  list("allowHosts", out.allow_hosts);
  list("writeRoots", out.write_roots);
  list("readRoots", out.read_roots);
  r.field(v, "allowDynamicPaths", [&](const YAML::Node& n) {
    out.allow_dynamic_paths = r.boolean(n, what + ".allowDynamicPaths");
  });
}

void read_data_paths(Reader& r, const YAML::Node& n, const std::string& what,
                     std::vector<std::string>& out) {
  if (!n.IsSequence()) fail(n, what + ": expected a list of paths");
  r.items(n, what, [&](const YAML::Node& item) {
    std::string p = r.path(item, what);
    if (!fs::exists(p)) fail(item, what + ": " + p + " does not exist");
    out.push_back(p);
  });
}

bool is_variable_name(const std::string& key) {
  return !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
         key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
             std::string::npos;
}

void read_env(Reader& r, const YAML::Node& n, const std::string& what,
              std::map<std::string, std::string>& out) {
  r.expect_map(n, what);
  for (const auto& kv : n)
    r.guard([&] {
      std::string key = kv.first.as<std::string>();
      if (!is_variable_name(key))
        fail(kv.first, what + ": '" + key + "' is not a valid variable name");
      out[key] = r.string(kv.second, what + "." + key);
    });
}

bool is_tool_name(const std::string& name) {
  return !name.empty() &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") == std::string::npos;
}

ToolConfig read_tool(Reader& r, const YAML::Node& n, std::size_t i, const std::string& label) {
  std::string what = "tools[" + std::to_string(i) + "]";
  r.only_keys(n, what,
              {"name", "description", "risk", "runtime", "inputSchema", "outputSchema", "limits",
               "network", "validation", "dataPaths", "env"});
  ToolConfig t;
  t.where = label + ":" + std::to_string(n.Mark().line + 1);
  if (!n["name"]) r.error(n, what + ": missing name");
  r.field(n, "name", [&](const YAML::Node& v) {
    t.name = r.string(v, what + ".name");
    if (!is_tool_name(t.name))
      fail(v, what + ".name: use lower-case letters, digits, '-', '_' and '.'");
  });
  if (!t.name.empty()) what = "tool " + t.name;
  r.field(n, "description",
          [&](const YAML::Node& v) { t.description = r.string(v, what + ".description"); });
  r.field(n, "risk", [&](const YAML::Node& v) { t.risk = r.risk(v, what + ".risk"); });
  if (!n["runtime"]) r.error(n, what + ": missing runtime");
  const bool runtime_ok = n["runtime"] && r.field(n, "runtime", [&](const YAML::Node& v) {
    read_runtime(r, v, what + ".runtime", t.runtime);
  });
  r.field(n, "inputSchema", [&](const YAML::Node& v) {
    if (!v.IsMap()) fail(v, what + ".inputSchema: expected a JSON Schema object");
    t.input_schema = r.json(v);
  });
  r.field(n, "outputSchema", [&](const YAML::Node& v) {
    if (!v.IsMap()) fail(v, what + ".outputSchema: expected a JSON Schema object");
    t.output_schema = r.json(v);
  });
  r.field(n, "limits", [&](const YAML::Node& v) { t.limits = r.overrides(v, what + ".limits"); });
  r.field(n, "network",
          [&](const YAML::Node& v) { read_network(r, v, what + ".network", t.network); });
  r.field(n, "validation",
          [&](const YAML::Node& v) { read_validation(r, v, what + ".validation", t.validation); });
  const bool paths_ok = r.field(n, "dataPaths", [&](const YAML::Node& v) {
    read_data_paths(r, v, what + ".dataPaths", t.data_paths);
  });
  const bool env_ok =
      r.field(n, "env", [&](const YAML::Node& v) { read_env(r, v, what + ".env", t.env); });
  if (runtime_ok && paths_ok && env_ok) r.guard([&] { check_program(n["runtime"], what, t); });
  return t;
}

void read_tools(Reader& r, const YAML::Node& n, const std::string& label,
                std::vector<ToolConfig>& out) {
  std::set<std::string> names;
  std::size_t i = 0;
  r.items(n, "tools", [&](const YAML::Node& item) {
    auto tool = read_tool(r, item, i++, label);
    if (!tool.name.empty() && !names.insert(tool.name).second)
      fail(item, "tools: '" + tool.name + "' is defined twice");
    out.push_back(std::move(tool));
  });
}

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

Config read_config(Reader& r, const YAML::Node& root, const std::string& label) {
  Config c;
  c.path = label;
  c.tiers = default_tiers();
  if (!is_airlock_config(r, root)) return c;
  r.only_keys(root, "the configuration",
              {"apiVersion", "kind", "server", "storage", "principals", "tiers", "tools", "dlp"});
  r.field(root, "server", [&](const YAML::Node& v) { read_server(r, v, c.server); });
  r.field(root, "storage", [&](const YAML::Node& v) { read_storage(r, v, c.storage); });
  r.field(root, "dlp", [&](const YAML::Node& v) { read_dlp(r, v, c.dlp_policy); });
  r.field(root, "principals", [&](const YAML::Node& v) { read_principals(r, v, c.principals); });
  r.field(root, "tiers", [&](const YAML::Node& v) { read_tiers(r, v, c.tiers); });
  r.field(root, "tools", [&](const YAML::Node& v) { read_tools(r, v, label, c.tools); });
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
  for (const auto& i : issues) {
    if (!out.empty()) out += "\n";
    out += label;
    if (!i.mark.is_null())
      out += ":" + std::to_string(i.mark.line + 1) + ":" + std::to_string(i.mark.column + 1);
    out += ": " + i.message;
  }
  return out;
}

std::string too_big(const std::string& label) {
  return label + ": larger than " + std::to_string(kMaxConfigBytes) +
         " bytes, the limit for a configuration file";
}

std::optional<std::uint16_t> port_number(std::string_view s) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  unsigned long v = std::stoul(std::string(s));
  if (v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
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
  return with_overrides(tiers.at(tool.risk), tool.limits);
}

Result<ListenAddress> parse_listen(std::string_view text) {
  std::string_view host, port;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos || text.substr(close + 1, 1) != ":")
      return Error::make("config", "expected [IPv6]:PORT, got '" + std::string(text) + "'");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return Error::make("config", "expected HOST:PORT, got '" + std::string(text) + "'");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return Error::make("config", "an IPv6 address goes in brackets ([::1]:8750), got '" +
                                       std::string(text) + "'");
  }
  if (!egress::parse_ip_strict(host))
    return Error::make("config", "'" + std::string(host) +
                                     "' is not an IP address (names are not resolved; for this "
                                     "machine only, use 127.0.0.1 or [::1])");
  auto number = port_number(port);
  if (!number)
    return Error::make("config",
                       "port '" + std::string(port) + "' is not a number from 0 to 65535");
  return ListenAddress{std::string(host), *number};
}

Result<Config> parse_config(const std::string& yaml, const std::string& label,
                            const std::string& base_dir) {
  if (yaml.size() > kMaxConfigBytes) return Error::make("config", too_big(label));
  std::vector<ConfigIssue> issues;
  Config config;
  if (scan_document(yaml, issues)) config = read_document(yaml, label, base_dir, issues);
  if (!issues.empty()) return Error::make("config", format_issues(label, std::move(issues)));
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
