#include "validate/engine.hpp"

#include <algorithm>
#include <functional>

#include "validate/analysis.hpp"
#include "validate/rules/rules.hpp"

namespace airlock::validate {
namespace {

using RuleFamily = void (*)(const Node&, Analysis&);

constexpr RuleFamily kFamilies[] = {
    rules::check_imports,       rules::check_dynamic_code, rules::check_process_execution,
    rules::check_reflection,    rules::check_format_strings, rules::check_serialization,
    rules::check_files,         rules::check_network,      rules::check_classes,
    rules::check_reexports,
};

class Walker {
 public:
  Walker(Analysis& analysis, int minor) : analysis_(analysis), minor_(minor) {}

  void walk(const Node& node) {
    analysis_.ancestors().push_back(node);
    if (!is_known_node_type(node.type_name(), minor_)) {
      analysis_.report(node, "unknown-node",
                       "node type " + std::string(node.type_name()) +
                           " is not one the rule engine knows for Python 3." +
                           std::to_string(minor_));
    }
    for (RuleFamily family : kFamilies) family(node, analysis_);
    node.for_each_child([&](const Node& child) { walk(child); });
    analysis_.ancestors().pop_back();
  }

 private:
  Analysis& analysis_;
  int minor_;
};

Finding parse_failure(const Json& reply) {
  if (!reply.is_object())
    return {"parse-failed", "the parse worker's reply is not an object", 0, 0, Severity::error};
  std::string error = reply.value("error", "internal");
  std::string message = reply.value("message", "");
  int line = reply.value("line", 0);
  int col = reply.value("col", 0);
  if (error == "syntax_error")
    return {"syntax-error", "the target interpreter cannot parse the code: " + message, line, col,
            Severity::error};
  if (error == "too_deep")
    return {"syntax-too-deep", "the code is nested too deeply to check (" + message + ")", line,
            col, Severity::error};
  if (error == "decode_error")
    return {"source-not-utf8", "the interpreter cannot decode the source: " + message, line,
            col, Severity::error};
  return {"parse-failed", "the parse worker failed: " + message, line, col, Severity::error};
}

int python_minor(const Json& reply) {
  auto it = reply.find("python");
  if (it == reply.end()) return -1;
  const auto& version = *it;
  if (!version.is_array() || version.size() < 2 || version[0] != 3 ||
      !version[1].is_number_integer())
    return -1;
  return version[1].get<int>();
}

}  // namespace

struct Program::Parsed {
  Parsed(std::unique_ptr<SyntaxTree> t, const Policy& policy, int python_minor)
      : tree(std::move(t)), facts(gather_facts(tree->root(), policy)), minor(python_minor) {}
  std::unique_ptr<SyntaxTree> tree;
  ProgramFacts facts;
  int minor;
};

Program::Program(const Json& reply, std::string_view tree_bytes, const Policy& policy)
    : reply_(reply), policy_(policy) {
  if (!reply.is_object() || !reply.value("ok", false)) {
    failure_ = parse_failure(reply);
    return;
  }
  int minor = python_minor(reply);
  if (minor < 0) {
    failure_ = Finding{"parse-failed", "the parse worker's interpreter is not Python 3", 0, 0,
                       Severity::error};
    return;
  }
  std::unique_ptr<SyntaxTree> tree;
  if (!tree_bytes.empty()) {
    std::string error;
    tree = SyntaxTree::from_binary(tree_bytes, error);
    if (!tree) {
      failure_ = Finding{"parse-failed", "the parse worker's tree: " + error, 0, 0, Severity::error};
      return;
    }
  } else {
    tree = std::make_unique<SyntaxTree>(reply);
  }
  if (!tree->root().is("Module")) {
    failure_ = Finding{"parse-failed", "the parse worker returned no module", 0, 0, Severity::error};
    return;
  }
  parsed_ = std::make_unique<Parsed>(std::move(tree), policy, minor);
}

Program::~Program() = default;

std::set<std::string> Program::modules_to_introspect() const {
  std::set<std::string> modules;
  for (const auto& entry : policy_.allowed_imports)
    if (entry.find('*') == std::string::npos) modules.insert(entry);
  if (!parsed_) return modules;
  for (const auto& m : parsed_->facts.imported_modules)
    if (import_allowed(policy_, m)) modules.insert(m);
  return modules;
}

std::vector<Finding> Program::analyze(const ExportTable& exports) const {
  if (!parsed_) return {*failure_};
  Analysis analysis(policy_, exports, parsed_->facts);
  if (auto ids = reply_.find("identifiers"); ids != reply_.end() && ids->is_array()) {
    for (const auto& id : *ids) {
      if (!id.is_object()) continue;
      analysis.report_at(id.value("line", 0), id.value("col", 0) + 1, "source-nfkc-identifier",
                         "identifier \"" + id.value("written", "") +
                             "\" is read by Python as \"" + id.value("normalized", "") +
                             "\" (NFKC); write it as such");
    }
  }
  Walker(analysis, parsed_->minor).walk(parsed_->tree->root());
  return analysis.take_findings();
}

std::vector<Finding> analyze(const Json& reply, const Policy& policy, const ExportTable& exports) {
  return Program(reply, {}, policy).analyze(exports);
}

std::set<std::string> modules_to_introspect(const Json& reply, const Policy& policy) {
  return Program(reply, {}, policy).modules_to_introspect();
}

Report make_report(std::vector<Finding> findings) {
  std::sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.line, a.col, a.rule, a.message) < std::tie(b.line, b.col, b.rule, b.message);
  });
  Report report;
  report.verdict = Verdict::accept;
  for (const auto& f : findings)
    if (f.severity == Severity::error) report.verdict = Verdict::reject;
  report.findings = std::move(findings);
  return report;
}

}  // namespace airlock::validate
