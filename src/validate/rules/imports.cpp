// Import allowlist, default deny: import-not-allowed, import-star, import-relative,
// import-unavailable.
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

void report_unavailable(const Node& at, const std::string& module, Analysis& analysis) {
  auto it = analysis.exports().find(module);
  if (it == analysis.exports().end() || it->second.importable) return;
  analysis.report(at, "import-unavailable",
                  "the target interpreter cannot import " + module + " (" + it->second.error +
                      "), so what it exposes cannot be checked");
}

void check_import(const Node& node, Analysis& analysis) {
  const Policy& policy = analysis.policy();
  for (const auto& alias : node.children("names")) {
    std::string module(alias.text("name"));
    if (!import_allowed(policy, module)) {
      analysis.report(alias, "import-not-allowed",
                      "import " + module + ": not in the policy's allowed imports" +
                          (is_name_only_module(module)
                               ? " (a module that only an exact entry can allow)"
                               : ""));
      continue;
    }
    report_unavailable(alias, module, analysis);
  }
}

void check_import_from(const Node& node, Analysis& analysis) {
  const Policy& policy = analysis.policy();
  std::string module(node.text("module"));
  if (node.integer("level") > 0) {
    analysis.report(node, "import-relative",
                    "relative import: a tool is a single file and may import only allowed "
                    "modules by absolute name");
    return;
  }
  bool module_allowed = import_allowed(policy, module);
  for (const auto& alias : node.children("names")) {
    std::string name(alias.text("name"));
    if (name == "*") {
      analysis.report(alias, "import-star",
                      "from " + module + " import *: binds names the validator cannot see; "
                      "import the names you need");
      continue;
    }
    std::string submodule = module + "." + name;
    if (import_allowed(policy, submodule)) {
      report_unavailable(alias, submodule, analysis);
      continue;
    }
    if (!module_allowed) {
      analysis.report(alias, "import-not-allowed",
                      "from " + module + " import " + name + ": " + module +
                          " is not in the policy's allowed imports");
      continue;
    }
    auto exports = analysis.exports().find(module);
    if (exports == analysis.exports().end()) continue;
    if (!exports->second.importable) {
      report_unavailable(alias, module, analysis);
      continue;
    }
    // A name the module does not have is a submodule the import would load.
    if (exports->second.attributes.count(name) == 0)
      analysis.report(alias, "import-not-allowed",
                      "from " + module + " import " + name + ": " + module +
                          " has no attribute " + name + ", so this imports the submodule " +
                          submodule + ", which is not allowed");
  }
}

}  // namespace

void check_imports(const Node& node, Analysis& analysis) {
  if (node.is("Import")) check_import(node, analysis);
  else if (node.is("ImportFrom")) check_import_from(node, analysis);
}

}  // namespace airlock::validate::rules
