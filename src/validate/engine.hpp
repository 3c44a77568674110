// The rule engine: one parsed program in, findings out. No processes, no I/O: the unit tests
// drive it with trees made ahead of time.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "validate/module_exports.hpp"
#include "validate/policy.hpp"
#include "validate/syntax_tree.hpp"
#include "validate/validate.hpp"

namespace airlock::validate {

// What the parse worker replied for one source (ast_dump.py's reply object).
struct ParsedSource {
  Json reply;
};

// Runs every rule over a successful parse, or turns a failed one into its finding.
std::vector<Finding> analyze(const Json& reply, const Policy& policy, const ExportTable& exports);

// The modules whose exports the analysis of `reply` needs: the policy's exact entries and the
// allowed modules the program imports.
std::set<std::string> modules_to_introspect(const Json& reply, const Policy& policy);

// Sorts findings and decides the verdict.
Report make_report(std::vector<Finding> findings);

}  // namespace airlock::validate
