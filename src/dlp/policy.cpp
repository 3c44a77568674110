// Policy files, in the style of Kubernetes manifests (docs/dlp.md has the format):
//
//   apiVersion: airlock.dev/v1
//   kind: DlpPolicy
//   spec:
//     thresholds: {redact: 0.5, block: 0.8}
//     detectors:
//       email: {action: hash}
//
// Every error names the file, the line and what was expected.
#include "dlp/policy.hpp"

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dlp/detectors.hpp"

namespace airlock::dlp {

Policy Policy::literals_only() {
  Policy p;
  for (const auto& d : detail::detector_table()) p.detectors[std::string(d.id)].enabled = false;
  p.literal_action = Action::redact;
  return p;
}

namespace {

constexpr std::array<std::string_view, 5> kActionNames{"allow", "redact", "mask", "hash", "block"};

// Thrown inside this file only; parse_policy turns it into an Error.
struct PolicyError {
  std::string message;
};

class PolicyReader {
 public:
  explicit PolicyReader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const {
    std::string where(source_);
    if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
    throw PolicyError{where + ": " + what};
  }

  void expect_map(const YAML::Node& node, const std::string& path) const {
    if (!node.IsMap()) fail(node, path + ": expected a mapping");
  }

  // Rejects keys this format does not have (a typo would otherwise be silently ignored).
  void only_keys(const YAML::Node& node, const std::string& path,
                 std::initializer_list<std::string_view> allowed) const {
    for (const auto& entry : node) {
      auto key = entry.first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(entry.first, path + "." + key + ": unknown field (expected one of: " + list + ")");
      }
    }
  }

  std::string string_at(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, path + ": expected a string");
    return node.as<std::string>();
  }

  double confidence_at(const YAML::Node& node, const std::string& path) const {
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || value < 0 || value > 1)
      fail(node, path + ": expected a number between 0 and 1");
    return value;
  }

  double positive_at(const YAML::Node& node, const std::string& path) const {
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || value < 0)
      fail(node, path + ": expected a non-negative number");
    return value;
  }

  unsigned count_at(const YAML::Node& node, const std::string& path) const {
    unsigned value = 0;
    if (!node.IsScalar() || !YAML::convert<unsigned>::decode(node, value))
      fail(node, path + ": expected a non-negative integer");
    return value;
  }

  bool bool_at(const YAML::Node& node, const std::string& path) const {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value))
      fail(node, path + ": expected true or false");
    return value;
  }

  Action action_at(const YAML::Node& node, const std::string& path) const {
    auto action = node.IsScalar() ? parse_action(node.as<std::string>()) : std::nullopt;
    if (!action) fail(node, path + ": expected one of allow, redact, mask, hash, block");
    return *action;
  }

  Policy read(const YAML::Node& root) const {
    expect_map(root, "document");
    only_keys(root, "document", {"apiVersion", "kind", "metadata", "spec"});
    if (!root["apiVersion"] || string_at(root["apiVersion"], "apiVersion") != "airlock.dev/v1")
      fail(root["apiVersion"] ? root["apiVersion"] : root, "apiVersion: expected airlock.dev/v1");
    if (!root["kind"] || string_at(root["kind"], "kind") != "DlpPolicy")
      fail(root["kind"] ? root["kind"] : root, "kind: expected DlpPolicy");
    Policy policy;
    if (!root["spec"]) return policy;
    const YAML::Node spec = root["spec"];
    expect_map(spec, "spec");
    only_keys(spec, "spec",
              {"thresholds", "contextWindow", "hashKey", "hashKeyEnv", "literals", "detectors", "code"});
    if (spec["thresholds"]) read_thresholds(spec["thresholds"], policy);
    if (spec["contextWindow"]) policy.context_window = count_at(spec["contextWindow"], "spec.contextWindow");
    if (spec["hashKey"] && spec["hashKeyEnv"])
      fail(spec["hashKeyEnv"], "spec: give hashKey or hashKeyEnv, not both");
    if (spec["hashKey"]) policy.hash_key = string_at(spec["hashKey"], "spec.hashKey");
    if (spec["hashKeyEnv"]) {
      std::string name = string_at(spec["hashKeyEnv"], "spec.hashKeyEnv");
      const char* value = std::getenv(name.c_str());
      if (!value || !*value) fail(spec["hashKeyEnv"], "spec.hashKeyEnv: environment variable " + name + " is not set");
      policy.hash_key = value;
    }
    if (spec["literals"]) {
      const YAML::Node literals = spec["literals"];
      expect_map(literals, "spec.literals");
      only_keys(literals, "spec.literals", {"action"});
      if (literals["action"]) policy.literal_action = action_at(literals["action"], "spec.literals.action");
    }
    if (spec["detectors"]) read_detectors(spec["detectors"], policy);
    if (spec["code"]) read_code(spec["code"], policy);
    return policy;
  }

 private:
  void read_code(const YAML::Node& node, Policy& policy) const {
    expect_map(node, "spec.code");
    only_keys(node, "spec.code", {"onFinding"});
    if (!node["onFinding"]) return;
    const std::string what = string_at(node["onFinding"], "spec.code.onFinding");
    if (what == "refuse") policy.code_findings = CodeFindings::refuse;
    else if (what == "report") policy.code_findings = CodeFindings::report;
    else fail(node["onFinding"], "spec.code.onFinding: expected refuse or report, got '" + what + "'");
  }

  void read_thresholds(const YAML::Node& node, Policy& policy) const {
    expect_map(node, "spec.thresholds");
    only_keys(node, "spec.thresholds", {"allow", "redact", "mask", "hash", "block"});
    for (std::size_t i = 0; i < kActionNames.size(); ++i) {
      std::string name(kActionNames[i]);
      if (node[name]) policy.thresholds[i] = confidence_at(node[name], "spec.thresholds." + name);
    }
  }

  void read_detectors(const YAML::Node& node, Policy& policy) const {
    expect_map(node, "spec.detectors");
    for (const auto& entry : node) {
      std::string id = entry.first.as<std::string>();
      std::string path = "spec.detectors." + id;
      if (!detail::find_detector(id)) fail(entry.first, path + ": unknown detector (docs/dlp.md lists them)");
      const YAML::Node& settings = entry.second;
      expect_map(settings, path);
      only_keys(settings, path, {"enabled", "action", "minConfidence", "minEntropy", "minLength"});
      DetectorOverride o;
      if (settings["enabled"]) o.enabled = bool_at(settings["enabled"], path + ".enabled");
      if (settings["action"]) o.action = action_at(settings["action"], path + ".action");
      if (settings["minConfidence"])
        o.min_confidence = confidence_at(settings["minConfidence"], path + ".minConfidence");
      if (settings["minEntropy"]) o.min_entropy = positive_at(settings["minEntropy"], path + ".minEntropy");
      if (settings["minLength"]) o.min_length = count_at(settings["minLength"], path + ".minLength");
      policy.detectors[id] = o;
    }
  }

  std::string_view source_;
};

}  // namespace

std::string_view to_string(Category category) { return category == Category::pii ? "pii" : "secret"; }

std::string_view to_string(Action action) { return kActionNames[static_cast<std::size_t>(action)]; }

std::optional<Action> parse_action(std::string_view text) {
  for (std::size_t i = 0; i < kActionNames.size(); ++i)
    if (kActionNames[i] == text) return static_cast<Action>(i);
  return std::nullopt;
}

Result<Policy> parse_policy(std::string_view text, std::string_view source_name) {
  PolicyReader reader(source_name);
  try {
    return reader.read(YAML::Load(std::string(text)));
  } catch (const PolicyError& e) {
    return Error::make("invalid_policy", e.message);
  } catch (const YAML::Exception& e) {
    std::string where(source_name);
    if (e.mark.line >= 0) where += ":" + std::to_string(e.mark.line + 1);
    return Error::make("invalid_policy", where + ": " + e.msg);
  }
}

Result<Policy> load_policy_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::make("invalid_policy", path + ": cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_policy(text.str(), path);
}

}  // namespace airlock::dlp
