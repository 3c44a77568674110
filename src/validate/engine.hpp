// The rule engine: one parsed program in, findings out. No processes, no I/O: the unit tests
// drive it with trees made ahead of time.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "validate/module_exports.hpp"
#include "validate/policy.hpp"
#include "validate/syntax_tree.hpp"
#include "validate/validate.hpp"

namespace airlock::validate {

// What the parse worker replied for one source: ast_dump.py's reply object and, when its C
// walk made it, the tree in binary form (otherwise the tree is in the reply).
struct ParsedSource {
  Json reply;
  std::string tree_bytes;
};

// One parsed program with its tree indexed once, for both steps of a check: which modules'
// exports it needs, then the rules. `reply` and `tree_bytes` must outlive it.
class Program {
 public:
  Program(const Json& reply, std::string_view tree_bytes, const Policy& policy);
  explicit Program(const ParsedSource& parsed, const Policy& policy)
      : Program(parsed.reply, parsed.tree_bytes, policy) {}
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // The policy's exact entries and the allowed modules the program imports.
  std::set<std::string> modules_to_introspect() const;
  // Every rule over a successful parse, or the finding that says why there is nothing to run
  // them on.
  std::vector<Finding> analyze(const ExportTable& exports) const;

 private:
  struct Parsed;
  const Json& reply_;
  const Policy& policy_;
  std::unique_ptr<Parsed> parsed_;  // null when the parse failed
  std::optional<Finding> failure_;
};

// The same for a JSON reply (tests, tools): each call indexes the tree.
std::vector<Finding> analyze(const Json& reply, const Policy& policy, const ExportTable& exports);
std::set<std::string> modules_to_introspect(const Json& reply, const Policy& policy);

// Sorts findings and decides the verdict.
Report make_report(std::vector<Finding> findings);

}  // namespace airlock::validate
