// reflection-format: str.format/format_map/string.Formatter with replacement fields that
// reach attributes or items ("{0.__class__}", "{x[k]}"), or with a template that is not a
// literal (its fields cannot be seen). f-strings are expressions in the tree and are checked
// like any other code.
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

// The first replacement field whose name contains '.' or '[' (nested fields in format specs
// included), or "" when there is none.
std::string first_reaching_field(std::string_view text, int depth = 0) {
  if (depth > 2) return std::string(text);
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '}' ) {
      if (i + 1 < text.size() && text[i + 1] == '}') ++i;
      continue;
    }
    if (c != '{') continue;
    if (i + 1 < text.size() && text[i + 1] == '{') {
      ++i;
      continue;
    }
    // Find the matching brace, counting nested fields in the spec.
    std::size_t end = i + 1;
    int open = 1;
    for (; end < text.size() && open > 0; ++end) {
      if (text[end] == '{') ++open;
      else if (text[end] == '}') --open;
    }
    std::string_view field = text.substr(i + 1, end - i - 2);
    std::size_t name_end = field.find_first_of("!:");
    std::string_view name = field.substr(0, name_end);
    if (name.find_first_of(".[") != std::string_view::npos) return std::string(field);
    if (name_end != std::string_view::npos) {
      std::string nested = first_reaching_field(field.substr(name_end + 1), depth + 1);
      if (!nested.empty()) return nested;
    }
    i = end - 1;
  }
  return {};
}

void check_template(const Node& call, const Node& template_node, std::string_view how,
                    Analysis& analysis) {
  auto text = analysis.literal_string(template_node);
  if (!text) {
    analysis.report(call, "reflection-format",
                    std::string(how) + " with a template that is not a literal: its fields "
                                       "could read any attribute of the arguments");
    return;
  }
  std::string field = first_reaching_field(*text);
  if (!field.empty())
    analysis.report(call, "reflection-format",
                    std::string(how) + " field {" + field +
                        "}: format fields with '.' or '[' read attributes and items");
}

}  // namespace

void check_format_strings(const Node& node, Analysis& analysis) {
  if (!node.is("Call")) return;
  auto func = node.child("func");
  if (!func.is("Attribute")) return;
  auto method = func.text("attr");
  // Formatter().get_field("0.__class__", args, kwargs) looks the field up directly.
  if (method == "get_field") {
    auto receiver = func.child("value");
    bool formatter = receiver.is("Call") && callee_matches(receiver, analysis, "string.Formatter");
    for (const auto& r : analysis.resolve(receiver))
      if (name_matches("string.Formatter", r.name)) formatter = true;
    if (!formatter && !analysis.program_imports("string")) return;
    auto field = analysis.literal_string(Analysis::argument(node, 0, "field_name"));
    if (!field || field->find_first_of(".[") != std::string::npos)
      analysis.report(node, "reflection-format",
                      ".get_field(...) with a field that is not a literal plain name: it reads "
                      "attributes and items");
    return;
  }
  if (method != "format" && method != "format_map" && method != "vformat") return;
  auto receiver = func.child("value");
  // "literal".format(...)
  if (receiver.is_string_constant() || receiver.is("JoinedStr") || receiver.is("BinOp")) {
    check_template(node, receiver, "str." + std::string(method), analysis);
    return;
  }
  // str.format(template, ...) and string.Formatter().format(template, ...)
  for (const auto& r : analysis.resolve(receiver)) {
    if (r.name == "builtins.str") {
      check_template(node, Analysis::argument(node, 0), "str." + std::string(method), analysis);
      return;
    }
  }
  bool formatter = receiver.is("Call") && callee_matches(receiver, analysis, "string.Formatter");
  for (const auto& r : analysis.resolve(receiver))
    if (name_matches("string.Formatter", r.name)) formatter = true;
  if (formatter) {
    check_template(node, Analysis::argument(node, 0), "Formatter." + std::string(method), analysis);
    return;
  }
  // Anything else: a template held in a variable is data, and its fields could reach
  // anything. A library object's own .format method (a call through an import) is not a
  // template.
  if (auto text = analysis.literal_string(receiver)) {
    check_template(node, receiver, "str." + std::string(method), analysis);
    return;
  }
  if (receiver.is("Call")) {
    auto callee = analysis.resolve(receiver.child("func"));
    if (!callee.empty() && callee.front().name.rfind("builtins.", 0) != 0) return;
  }
  analysis.report(node, "reflection-format",
                  "." + std::string(method) + "(...) on a template that is not a literal: "
                  "its fields could read any attribute of the arguments");
}

}  // namespace airlock::validate::rules
