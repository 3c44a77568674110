// The rule families. Each checks one node at a time (Analysis::ancestors().back() is the node)
// and reports findings; docs/validate.md describes every rule id.
#pragma once

#include <string_view>
#include <initializer_list>
#include <unordered_map>
#include <vector>

#include "validate/analysis.hpp"

namespace airlock::validate::rules {

void check_imports(const Node& node, Analysis& analysis);          // imports.cpp
void check_dynamic_code(const Node& node, Analysis& analysis);     // dynamic_code.cpp
void check_process_execution(const Node& node, Analysis& analysis);  // process_execution.cpp
void check_reflection(const Node& node, Analysis& analysis);       // reflection.cpp
void check_format_strings(const Node& node, Analysis& analysis);   // format_strings.cpp
void check_serialization(const Node& node, Analysis& analysis);    // serialization.cpp
void check_files(const Node& node, Analysis& analysis);            // files.cpp
void check_network(const Node& node, Analysis& analysis);          // network.cpp
void check_classes(const Node& node, Analysis& analysis);          // classes.cpp
void check_reexports(const Node& node, Analysis& analysis);        // reexports.cpp

// A rule table row: a qualified-name pattern (see name_matches) and why it is refused.
struct NamePattern {
  std::string_view pattern;
  std::string_view reason;
};

// A rule table, indexed: find() gives what a scan with name_matches() would, the first
// matching row, by looking up each dotted prefix of the name ("a.b.c", "a.b", "a") instead of
// comparing every row (the scan was a fifth of the rules' time).
class NamePatternTable {
 public:
  NamePatternTable(std::initializer_list<NamePattern> rows);
  const NamePattern* find(std::string_view name) const;
  const std::vector<NamePattern>& rows() const { return rows_; }

 private:
  std::vector<NamePattern> rows_;
  std::unordered_map<std::string_view, std::size_t> by_base_;  // "a.b" and "a.b.*" -> row
  std::vector<std::pair<std::string_view, std::size_t>> prefixes_;  // "a.b*" -> row
};

// For Name/Attribute nodes that are read (or any import alias), the first row of `table`
// that matches what the node refers to (canonical or as spelled); reports it under `rule`.
// Returns whether it reported.
bool report_reference(const Node& node, Analysis& analysis, std::string_view rule,
                      const NamePatternTable& table);
// The first row matching `name`, or null.
const NamePattern* find_pattern(const NamePatternTable& table, std::string_view name);

// Whether the call's callee refers to a name matching `pattern` (canonical or spelled).
bool callee_matches(const Node& call, const Analysis& analysis, std::string_view pattern);

// The rule ids with a one-line description each (SARIF's rules[], docs/validate.md).
struct RuleDescription {
  std::string_view id;
  std::string_view family;
  std::string_view summary;
};
const std::vector<RuleDescription>& catalog();

}  // namespace airlock::validate::rules

namespace airlock::validate::rules {
// For Import/ImportFrom nodes: reports every imported module (or `from M import n` as M.n)
// that matches `table`, at the alias. Returns whether it reported.
bool report_imports(const Node& node, Analysis& analysis, std::string_view rule,
                    const NamePatternTable& table);
}  // namespace airlock::validate::rules
