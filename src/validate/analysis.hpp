// The state the rule families share while they walk one program: the policy, the module
// exports, what the program imports and binds, name resolution, literal evaluation, the
// position in the tree, and the findings.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "validate/module_exports.hpp"
#include "validate/policy.hpp"
#include "validate/syntax_tree.hpp"
#include "validate/validate.hpp"

namespace airlock::validate {

// What a name or attribute chain refers to.
struct Resolved {
  enum class Kind {
    module,   // a module object ("os", "os.path")
    package,  // a parent package bound by `import a.b` that is not itself allowed
    object,   // anything else reached through a module or a builtin
  };
  std::string name;     // canonical: "os.system", "builtins.eval", "subprocess.run"
  std::string spelled;  // as the code reaches it: "platform.os.system", "r"
  Kind kind = Kind::object;
};

// Facts about the whole program, gathered before the rules run.
struct ProgramFacts {
  // Names bound by import statements anywhere (any scope), and what they refer to.
  std::map<std::string, std::vector<Resolved>, std::less<>> import_bindings;
  // How often each name is bound anywhere (assignments, defs, parameters, imports, ...).
  std::map<std::string, int, std::less<>> binding_counts;
  // Names bound exactly once in the whole program, by a plain `NAME = value` (any scope):
  // wherever such a name is read, it holds that value (or is unbound).
  std::map<std::string, Node, std::less<>> single_assignments;
  // Names defined with def (any scope): decorators may name them.
  std::set<std::string, std::less<>> function_names;
  // Every module named by an import statement (the full dotted names).
  std::set<std::string, std::less<>> imported_modules;
};

ProgramFacts gather_facts(const Node& module, const Policy& policy);

// The value a name certainly holds (bound once by NAME = value), or the node itself.
Node single_value(const ProgramFacts& facts, const Node& expression);

class Analysis {
 public:
  Analysis(const Policy& policy, const ExportTable& exports, const ProgramFacts& facts);

  const Policy& policy() const { return policy_; }
  const ExportTable& exports() const { return exports_; }
  const ProgramFacts& facts() const { return facts_; }

  void report(const Node& at, std::string_view rule, std::string message,
              Severity severity = Severity::error);
  void report_at(int line, int col, std::string_view rule, std::string message,
                 Severity severity = Severity::error);
  std::vector<Finding> take_findings();

  // What a Name/Attribute (or `getattr(X, "lit")`) expression refers to; empty when it is
  // not reached from an import or a builtin. A name bound by several imports gives several.
  const std::vector<Resolved>& resolve(const Node& expression) const;
  // The module's attribute as the exports describe it, or null.
  const ExportedAttribute* exported(std::string_view module, std::string_view attribute) const;
  bool program_imports(std::string_view module_or_package) const;

  // Literal evaluation (constants, concatenation, f-strings without fields, os.path.join,
  // pathlib.Path(...) / "x", names bound once to a literal).
  std::optional<std::string> literal_string(const Node& expression) const;
  std::optional<std::string> literal_path(const Node& expression) const;
  // The literal text an expression certainly starts with (f"https://host/{x}" -> "https://host/").
  std::string literal_prefix(const Node& expression) const;

  // The walk's position: the node being checked is ancestors().back().
  std::vector<Node>& ancestors() { return ancestors_; }
  Node parent(std::size_t levels_up = 1) const;
  // Whether `name` is the first parameter of the method (a def directly in a class body)
  // that encloses the current node.
  bool is_method_receiver(std::string_view name) const;

  // Call helpers: positional argument `index` or keyword `keyword`, or invalid.
  static Node argument(const Node& call, std::size_t index, std::string_view keyword = {});
  static bool has_starred_arguments(const Node& call);

 private:
  std::vector<Resolved> resolve_uncached(const Node& expression) const;
  std::vector<Resolved> resolve_attribute(const Node& base, std::string_view attribute) const;
  std::vector<Resolved> resolve_member(const Resolved& base, std::string_view attribute) const;

  const Policy& policy_;
  const ExportTable& exports_;
  const ProgramFacts& facts_;
  std::vector<Finding> findings_;
  std::vector<Node> ancestors_;
  mutable std::unordered_map<const NodeData*, std::vector<Resolved>> resolved_;  // per node
};

// Matching of qualified names against rule tables:
//   "os.system"  that name and anything below it ("os.system.x")
//   "os.exec*"   any name that starts with "os.exec"
//   "subprocess.*" the module and anything below it
bool name_matches(std::string_view pattern, std::string_view name);

// "__x__"
bool is_dunder(std::string_view name);

}  // namespace airlock::validate
