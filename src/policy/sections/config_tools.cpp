// The tools section: each tool's runtime, schemas, limits, network, validation, data paths, env.
#include <cctype>
#include <filesystem>

#include "egress/policy.hpp"
#include "policy/config_reader.hpp"
#include "policy/json_schema.hpp"
#include "policy/names.hpp"
#include "policy/schema_internal.hpp"
#include "policy/program_lookup.hpp"
#include "sandbox/plan.hpp"

namespace airlock::policy {

nlohmann::json python_code_input_schema() {
  return {{"type", "object"},
          {"properties",
           {{"code",
             {{"type", "string"},
              {"description",
               "Python 3 source, run as __main__ in a fresh sandbox after static validation. "
               "What it prints is the answer's stdout; if it defines run(args), its return value "
               "(a JSON object) is the answer's result. If it raises, the error gives the "
               "exception's name, value, line and traceback (lines numbered from 1 in this code)."}}},
            {"arguments",
             {{"type", "object"},
              {"description", "The args run(args) gets when the code defines run; {} if absent."}}}}},
          {"required", nlohmann::json::array({"code"})},
          {"additionalProperties", false}};
}

}  // namespace airlock::policy

namespace airlock::policy::detail {

namespace fs = std::filesystem;

// Shared with the mcpServers section (config_mcp_servers.cpp).
void read_network(Reader& r, const YAML::Node& n, const std::string& what,
                  egress::EgressRules& net) {
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

namespace {

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

void read_data_paths(Reader& r, const YAML::Node& n, const std::string& what,
                     std::vector<std::string>& out) {
  if (!n.IsSequence()) fail(n, what + ": expected a list of paths");
  r.items(n, what, [&](const YAML::Node& item) {
    std::string p = r.path(item, what);
    if (!fs::exists(p)) fail(item, what + ": " + p + " does not exist");
    out.push_back(p);
  });
}

// A tool's schema compiled, or null with every problem in it recorded, each at the YAML node
// its JSON pointer names.
std::shared_ptr<const JsonSchema> compile_schema(Reader& r, const YAML::Node& n,
                                                 const nlohmann::json& schema,
                                                 const std::string& what) {
  auto compiled = JsonSchema::compile(schema);
  for (const auto& p : compiled.problems)
    r.error(detail::mark_at(n, p.pointer), what + p.pointer + ": " + p.message);
  return compiled.schema;
}

ToolConfig read_tool(Reader& r, const YAML::Node& n, std::size_t i, const std::string& label,
                     const std::vector<CredentialServer>& servers) {
  std::string what = "tools[" + std::to_string(i) + "]";
  r.only_keys(n, what,
              {"name", "description", "risk", "runtime", "inputSchema", "outputSchema", "limits",
               "network", "validation", "dataPaths", "env", "requiresUser", "credentials",
               "kubernetes", "approval", "warm"});
  ToolConfig t;
  t.where = label + ":" + std::to_string(n.Mark().line + 1);
  if (!n["name"]) r.error(n, what + ": missing name");
  r.field(n, "name", [&](const YAML::Node& v) {
    t.name = r.string(v, what + ".name");
    if (!valid_tool_name(t.name))
      fail(v, what + ".name: " + kToolNameRule);
  });
  if (!t.name.empty()) what = "tool " + t.name;
  r.field(n, "description",
          [&](const YAML::Node& v) { t.description = r.string(v, what + ".description"); });
  r.field(n, "risk", [&](const YAML::Node& v) { t.risk = r.risk(v, what + ".risk"); });
  if (!n["runtime"]) r.error(n, what + ": missing runtime");
  const bool runtime_ok = n["runtime"] && r.field(n, "runtime", [&](const YAML::Node& v) {
    read_runtime(r, v, what + ".runtime", t.runtime);
  });
  const bool input_ok = r.field(n, "inputSchema", [&](const YAML::Node& v) {
    if (!v.IsMap()) fail(v, what + ".inputSchema: expected a JSON Schema object");
    t.input_schema = r.json(v);
  });
  // A python-code tool without one publishes what it takes, so that a model is told.
  if (runtime_ok && !n["inputSchema"] && t.runtime.kind == ToolRuntime::Kind::python_code)
    t.input_schema = python_code_input_schema();
  if (input_ok)
    t.input_check = compile_schema(r, n["inputSchema"] ? n["inputSchema"] : n, t.input_schema,
                                   what + ".inputSchema");
  r.field(n, "outputSchema", [&](const YAML::Node& v) {
    if (!v.IsMap()) fail(v, what + ".outputSchema: expected a JSON Schema object");
    t.output_schema = r.json(v);
    t.output_check = compile_schema(r, v, *t.output_schema, what + ".outputSchema");
  });
  r.field(n, "limits", [&](const YAML::Node& v) { t.limits = r.overrides(v, what + ".limits"); });
  r.field(n, "kubernetes",
          [&](const YAML::Node& v) { read_placement(r, v, what + ".kubernetes", t.placement); });
  r.field(n, "approval", [&](const YAML::Node& v) {
    if (t.risk != Risk::critical)
      fail(v, what + ".approval: only a risk: critical tool waits for an approval (this one is " +
                  std::string(risk_name(t.risk)) + ")");
    read_approval(r, v, what + ".approval", t.approval);
  });
  r.field(n, "requiresUser",
          [&](const YAML::Node& v) { t.requires_user = r.boolean(v, what + ".requiresUser"); });
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
  r.field(n, "credentials", [&](const YAML::Node& v) {
    read_credentials(r, v, what + ".credentials", servers, t.env, t.network, t.credentials);
    for (auto& c : t.credentials) c.where = t.where;
  });
  r.field(n, "warm", [&](const YAML::Node& v) {
    if (auto conflict = warm_conflict(t); !conflict.empty()) fail(v, what + ".warm: " + conflict);
    read_warm(r, v, what + ".warm", t.warm.emplace());
  });
  return t;
}

}  // namespace

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

void read_tools(Reader& r, const YAML::Node& n, const std::string& label,
                const std::vector<CredentialServer>& servers, std::vector<ToolConfig>& out) {
  std::set<std::string> names;
  std::size_t i = 0;
  r.items(n, "tools", [&](const YAML::Node& item) {
    auto tool = read_tool(r, item, i++, label, servers);
    if (!tool.name.empty() && !names.insert(tool.name).second)
      fail(item, "tools: '" + tool.name + "' is defined twice");
    out.push_back(std::move(tool));
  });
}

}  // namespace airlock::policy::detail
