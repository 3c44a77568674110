// Helpers the rule families share: matching what a node refers to against a table.
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {

NamePatternTable::NamePatternTable(std::initializer_list<NamePattern> rows) : rows_(rows) {
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    std::string_view pattern = rows_[i].pattern;
    if (pattern.size() >= 2 && pattern.substr(pattern.size() - 2) == ".*")
      by_base_.emplace(pattern.substr(0, pattern.size() - 2), i);  // keeps the first row
    else if (!pattern.empty() && pattern.back() == '*')
      prefixes_.emplace_back(pattern.substr(0, pattern.size() - 1), i);
    else
      by_base_.emplace(pattern, i);
  }
}

const NamePattern* NamePatternTable::find(std::string_view name) const {
  std::size_t best = rows_.size();
  for (std::string_view prefix = name;;) {
    auto it = by_base_.find(prefix);
    if (it != by_base_.end() && it->second < best) best = it->second;
    auto dot = prefix.rfind('.');
    if (dot == std::string_view::npos) break;
    prefix = prefix.substr(0, dot);
  }
  for (const auto& [prefix, row] : prefixes_)
    if (row < best && name.substr(0, prefix.size()) == prefix) best = row;
  return best < rows_.size() ? &rows_[best] : nullptr;
}

const NamePattern* find_pattern(const NamePatternTable& table, std::string_view name) {
  return table.find(name);
}

namespace {
bool is_reference(const Node& node) {
  if (node.is("Name")) return node.ctx() == "Load";
  return node.is("Attribute");
}
}  // namespace

bool report_reference(const Node& node, Analysis& analysis, std::string_view rule,
                      const NamePatternTable& table) {
  if (!is_reference(node)) return false;
  for (const auto& r : analysis.resolve(node)) {
    const NamePattern* row = find_pattern(table, r.name);
    if (!row) row = find_pattern(table, r.spelled);
    if (!row) continue;
    std::string what = r.spelled == r.name ? r.name : r.spelled + " (" + r.name + ")";
    analysis.report(node, rule, what + ": " + std::string(row->reason));
    return true;
  }
  return false;
}

bool callee_matches(const Node& call, const Analysis& analysis, std::string_view pattern) {
  if (!call.is("Call")) return false;
  for (const auto& r : analysis.resolve(call.child("func")))
    if (name_matches(pattern, r.name) || name_matches(pattern, r.spelled)) return true;
  return false;
}

}  // namespace airlock::validate::rules

namespace airlock::validate::rules {

bool report_imports(const Node& node, Analysis& analysis, std::string_view rule,
                    const NamePatternTable& table) {
  bool reported = false;
  if (node.is("Import")) {
    for (const auto& alias : node.children("names")) {
      std::string module = canonical_module_name(alias.text("name"));
      if (const auto* row = find_pattern(table, module)) {
        analysis.report(alias, rule, "import " + module + ": " + std::string(row->reason));
        reported = true;
      }
    }
  } else if (node.is("ImportFrom")) {
    std::string module = canonical_module_name(node.text("module"));
    for (const auto& alias : node.children("names")) {
      std::string qualified = module + "." + std::string(alias.text("name"));
      const auto* row = find_pattern(table, module);
      if (!row) row = find_pattern(table, qualified);
      if (!row) {
        // What the name is when the module re-exports it (`from m import system`).
        if (const auto* attr = analysis.exported(module, alias.text("name"))) {
          std::string canonical = attr->kind == ExportedAttribute::Kind::module
                                      ? canonical_module_name(attr->origin)
                                      : canonical_callable_name(*attr);
          row = find_pattern(table, canonical);
        }
      }
      if (row) {
        analysis.report(alias, rule, "from " + module + " import " +
                                         std::string(alias.text("name")) + ": " +
                                         std::string(row->reason));
        reported = true;
      }
    }
  }
  return reported;
}

}  // namespace airlock::validate::rules
