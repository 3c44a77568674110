// The policy file: YAML (or JSON, which is YAML) in the style of a Kubernetes manifest.
//
//   apiVersion: airlock.dev/v1
//   kind: ValidationPolicy
//   spec:
//     imports: [urllib.request, "xml.*"]   # added to the default set
//     defaultImports: true                 # false: only `imports`
//     writeRoots: [/work, /tmp]
//     readRoots: [/work, /tmp, /data]
//     workdir: /work
//     allowDynamicPaths: false
//     allowedHosts: [api.example.com, "*.example.org", 203.0.113.0/24]
//     nonLiteralDestination: reject        # or warn; default: reject without hosts
//     interpreter: /usr/bin/python3
//     maxSourceBytes: 2097152
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "validate/policy.hpp"

namespace airlock::validate {
namespace {

class PolicyReader {
 public:
  explicit PolicyReader(std::string origin) : origin_(std::move(origin)) {}

  Error error(const YAML::Node& at, const std::string& what) const {
    int line = at.Mark().line >= 0 ? at.Mark().line + 1 : 0;
    return Error::make("invalid_policy", origin_ + ":" + std::to_string(line) + ": " + what);
  }

  Result<std::vector<std::string>> strings(const YAML::Node& node, const std::string& key) const {
    if (!node.IsSequence()) return error(node, key + ": expected a list of strings");
    std::vector<std::string> out;
    for (const auto& item : node) {
      if (!item.IsScalar()) return error(item, key + ": expected a string");
      out.push_back(item.as<std::string>());
    }
    return out;
  }

  Result<bool> boolean(const YAML::Node& node, const std::string& key) const {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value))
      return error(node, key + ": expected true or false");
    return value;
  }

  Result<std::string> absolute_path(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar() || node.Scalar().empty() || node.Scalar().front() != '/')
      return error(node, key + ": expected an absolute path");
    return node.Scalar();
  }

  Result<Policy> read(const YAML::Node& root) const {
    if (!root.IsMap()) return error(root, "expected a mapping with apiVersion, kind and spec");
    for (const auto& item : root) {
      std::string key = item.first.as<std::string>();
      if (key != "apiVersion" && key != "kind" && key != "metadata" && key != "spec")
        return error(item.first, "unknown key \"" + key + "\" (expected apiVersion, kind, metadata, spec)");
    }
    if (!root["kind"] || root["kind"].as<std::string>() != "ValidationPolicy")
      return error(root, "kind: expected ValidationPolicy");
    if (!root["apiVersion"] || root["apiVersion"].as<std::string>() != "airlock.dev/v1")
      return error(root, "apiVersion: expected airlock.dev/v1");
    Policy policy;
    YAML::Node spec = root["spec"];
    if (!spec) return policy;
    if (!spec.IsMap()) return error(spec, "spec: expected a mapping");
    std::vector<std::string> imports;
    bool keep_defaults = true;
    std::vector<std::string> hosts;
    for (const auto& item : spec) {
      std::string key = item.first.as<std::string>();
      const YAML::Node& value = item.second;
      if (key == "imports") {
        auto list = strings(value, key);
        if (!list) return list.error();
        imports = *list;
      } else if (key == "defaultImports") {
        auto b = boolean(value, key);
        if (!b) return b.error();
        keep_defaults = *b;
      } else if (key == "writeRoots" || key == "readRoots") {
        auto list = strings(value, key);
        if (!list) return list.error();
        for (const auto& p : *list)
          if (p.empty() || p.front() != '/') return error(value, key + ": \"" + p + "\" is not absolute");
        (key == "writeRoots" ? policy.write_roots : policy.read_roots) = *list;
      } else if (key == "workdir") {
        auto p = absolute_path(value, key);
        if (!p) return p.error();
        policy.workdir = *p;
      } else if (key == "allowDynamicPaths") {
        auto b = boolean(value, key);
        if (!b) return b.error();
        policy.allow_dynamic_paths = *b;
      } else if (key == "allowedHosts") {
        auto list = strings(value, key);
        if (!list) return list.error();
        hosts = *list;
      } else if (key == "nonLiteralDestination") {
        std::string v = value.IsScalar() ? value.Scalar() : "";
        if (v == "warn") policy.non_literal_destination = NonLiteralDestination::warn;
        else if (v == "reject") policy.non_literal_destination = NonLiteralDestination::reject;
        else return error(value, key + ": expected warn or reject");
      } else if (key == "interpreter") {
        auto p = absolute_path(value, key);
        if (!p) return p.error();
        policy.interpreter = *p;
      } else if (key == "maxSourceBytes") {
        unsigned long long bytes = 0;
        if (!value.IsScalar() || !YAML::convert<unsigned long long>::decode(value, bytes) || bytes == 0)
          return error(value, key + ": expected a positive number of bytes");
        policy.max_source_bytes = bytes;
      } else {
        return error(item.first, "spec: unknown key \"" + key + "\"");
      }
    }
    if (!keep_defaults) policy.allowed_imports.clear();
    for (const auto& m : imports) {
      if (m.empty()) return error(spec["imports"], "imports: empty module name");
      policy.allowed_imports.insert(m);
    }
    auto allowlist = HostAllowlist::parse(hosts);
    if (!allowlist) return error(spec["allowedHosts"], allowlist.error().message);
    policy.allowed_hosts = std::move(*allowlist);
    return policy;
  }

 private:
  std::string origin_;
};

}  // namespace

Result<Policy> parse_policy_text(std::string_view text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error::make("invalid_policy", origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  try {
    return PolicyReader(origin).read(root);
  } catch (const YAML::Exception& e) {
    return Error::make("invalid_policy", origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

Result<Policy> load_policy_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::make("invalid_policy", path + ": cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_policy_text(buffer.str(), path);
}

}  // namespace airlock::validate
