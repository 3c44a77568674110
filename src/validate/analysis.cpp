#include "validate/analysis.hpp"

#include <algorithm>
#include <array>

namespace airlock::validate {

bool name_matches(std::string_view pattern, std::string_view name) {
  if (pattern.size() >= 2 && pattern.substr(pattern.size() - 2) == ".*") {
    auto module = pattern.substr(0, pattern.size() - 2);
    return name == module ||
           (name.size() > module.size() && name.substr(0, module.size()) == module &&
            name[module.size()] == '.');
  }
  if (!pattern.empty() && pattern.back() == '*') {
    auto prefix = pattern.substr(0, pattern.size() - 1);
    return name.substr(0, prefix.size()) == prefix;
  }
  return name == pattern || (name.size() > pattern.size() &&
                             name.substr(0, pattern.size()) == pattern &&
                             name[pattern.size()] == '.');
}

bool is_dunder(std::string_view name) {
  return name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";
}

namespace {

// Python's builtin names: a Name that no import binds and that is one of these refers to the
// builtin, whatever else the program binds to it (the rules are stricter, never laxer).
bool is_builtin_name(std::string_view name) {
  static const std::set<std::string, std::less<>> kBuiltins = {
      "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "breakpoint", "bytearray",
      "bytes", "callable", "chr", "classmethod", "compile", "complex", "copyright", "credits",
      "delattr", "dict", "dir", "divmod", "enumerate", "eval", "exec", "exit", "filter",
      "float", "format", "frozenset", "getattr", "globals", "hasattr", "hash", "help", "hex",
      "id", "input", "int", "isinstance", "issubclass", "iter", "len", "license", "list",
      "locals", "map", "max", "memoryview", "min", "next", "object", "oct", "open", "ord",
      "pow", "print", "property", "quit", "range", "repr", "reversed", "round", "set",
      "setattr", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "type",
      "vars", "zip", "__import__", "__build_class__", "__builtins__", "__loader__",
      "__spec__", "__debug__"};
  return kBuiltins.count(name) > 0;
}

class FactGatherer {
 public:
  FactGatherer(ProgramFacts& facts, const Policy& policy) : facts_(facts), policy_(policy) {}

  void walk(const Node& node) {
    std::string_view type = node.type_name();
    if (type == "Name") {
      auto ctx = node.ctx();
      if (ctx == "Store" || ctx == "Del") bind(node.text("id"));
    } else if (type == "FunctionDef" || type == "AsyncFunctionDef") {
      bind(node.text("name"));
      facts_.function_names.insert(std::string(node.text("name")));
    } else if (type == "ClassDef") {
      bind(node.text("name"));
    } else if (type == "arg") {
      bind(node.text("arg"));
    } else if (type == "ExceptHandler" || type == "MatchAs" || type == "MatchStar") {
      if (!node.text("name").empty()) bind(node.text("name"));
    } else if (type == "MatchMapping") {
      if (!node.text("rest").empty()) bind(node.text("rest"));
    } else if (type == "Global" || type == "Nonlocal") {
      for (auto name : node.texts("names")) bind(name);
    } else if (type == "Import") {
      for (const auto& alias : node.children("names")) import_module(alias);
    } else if (type == "ImportFrom") {
      for (const auto& alias : node.children("names")) import_from(node, alias);
    } else if (type == "Assign") {
      auto targets = node.children("targets");
      if (targets.size() == 1 && targets[0].is("Name"))
        candidate_constants_.emplace_back(std::string(targets[0].text("id")), node.child("value"));
    }
    node.for_each_child([&](const Node& child) { walk(child); });
  }

  void finish() {
    for (auto& [name, value] : candidate_constants_) {
      auto count = facts_.binding_counts.find(name);
      if (count != facts_.binding_counts.end() && count->second == 1 &&
          facts_.import_bindings.count(name) == 0)
        facts_.single_assignments.emplace(name, value);
    }
  }

 private:
  void bind(std::string_view name) { ++facts_.binding_counts[std::string(name)]; }

  void add_binding(const std::string& name, Resolved resolved) {
    bind(name);
    auto& list = facts_.import_bindings[name];
    for (const auto& existing : list)
      if (existing.name == resolved.name && existing.kind == resolved.kind) return;
    list.push_back(std::move(resolved));
  }

  void import_module(const Node& alias) {
    std::string module(alias.text("name"));
    facts_.imported_modules.insert(module);
    std::string as(alias.text("asname"));
    if (!as.empty()) {
      add_binding(as, Resolved{module, as, Resolved::Kind::module});
      return;
    }
    // `import a.b.c` binds `a`: a module when allowed itself, otherwise only a way to reach
    // its allowed submodules.
    std::string top = module.substr(0, module.find('.'));
    bool top_allowed = import_allowed(policy_, top);
    add_binding(top, Resolved{top, top,
                              top_allowed || top == module ? Resolved::Kind::module
                                                           : Resolved::Kind::package});
  }

  void import_from(const Node& statement, const Node& alias) {
    std::string module(statement.text("module"));
    if (!module.empty()) facts_.imported_modules.insert(module);
    std::string name(alias.text("name"));
    if (name == "*") return;
    std::string as(alias.text("asname"));
    std::string bound = as.empty() ? name : as;
    std::string qualified = module.empty() ? name : module + "." + name;
    // What the name is, resolved like the attribute `module.name` at check time.
    add_binding(bound, Resolved{qualified, bound, Resolved::Kind::object});
  }

  ProgramFacts& facts_;
  const Policy& policy_;
  std::vector<std::pair<std::string, Node>> candidate_constants_;
};

}  // namespace

ProgramFacts gather_facts(const Node& module, const Policy& policy) {
  ProgramFacts facts;
  FactGatherer gatherer(facts, policy);
  gatherer.walk(module);
  gatherer.finish();
  return facts;
}

Node single_value(const ProgramFacts& facts, const Node& expression) {
  if (!expression.is("Name")) return expression;
  auto it = facts.single_assignments.find(expression.text("id"));
  return it == facts.single_assignments.end() ? expression : it->second;
}

Analysis::Analysis(const Policy& policy, const ExportTable& exports, const ProgramFacts& facts)
    : policy_(policy), exports_(exports), facts_(facts) {}

void Analysis::report(const Node& at, std::string_view rule, std::string message,
                      Severity severity) {
  report_at(at.line(), at.col(), rule, std::move(message), severity);
}

void Analysis::report_at(int line, int col, std::string_view rule, std::string message,
                         Severity severity) {
  for (const auto& f : findings_)
    if (f.line == line && f.col == col && f.rule == rule) return;
  findings_.push_back(Finding{std::string(rule), std::move(message), line, col, severity});
}

std::vector<Finding> Analysis::take_findings() { return std::move(findings_); }

const ExportedAttribute* Analysis::exported(std::string_view module,
                                            std::string_view attribute) const {
  auto it = exports_.find(module);
  if (it == exports_.end()) return nullptr;
  auto attr = it->second.attributes.find(attribute);
  return attr == it->second.attributes.end() ? nullptr : &attr->second;
}

bool Analysis::program_imports(std::string_view module_or_package) const {
  for (const auto& m : facts_.imported_modules)
    if (name_matches(module_or_package, m)) return true;
  return false;
}

std::vector<Resolved> Analysis::resolve_member(const Resolved& base,
                                               std::string_view attribute) const {
  std::string spelled = base.spelled + "." + std::string(attribute);
  std::string dotted = base.name + "." + std::string(attribute);
  if (base.kind == Resolved::Kind::object)
    return {Resolved{dotted, spelled, Resolved::Kind::object}};
  // A submodule the policy allows is a module, whatever the parent exposes.
  if (import_allowed(policy_, dotted)) return {Resolved{dotted, spelled, Resolved::Kind::module}};
  if (base.kind == Resolved::Kind::package) {
    // `import a.b.c` makes a.b reachable as the way to a.b.c.
    for (const auto& m : facts_.imported_modules)
      if (m.size() > dotted.size() && m.compare(0, dotted.size(), dotted) == 0 &&
          m[dotted.size()] == '.' && import_allowed(policy_, m))
        return {Resolved{dotted, spelled, Resolved::Kind::package}};
    return {Resolved{dotted, spelled, Resolved::Kind::object}};
  }
  if (const auto* attr = exported(base.name, attribute)) {
    switch (attr->kind) {
      case ExportedAttribute::Kind::module:
        return {Resolved{canonical_module_name(attr->origin), spelled, Resolved::Kind::module}};
      case ExportedAttribute::Kind::callable:
      case ExportedAttribute::Kind::class_type: {
        std::string canonical = canonical_callable_name(*attr);
        if (canonical.empty() || attr->origin.empty()) canonical = dotted;
        return {Resolved{canonical, spelled, Resolved::Kind::object}};
      }
      case ExportedAttribute::Kind::value:
        break;
    }
  }
  return {Resolved{dotted, spelled, Resolved::Kind::object}};
}

std::vector<Resolved> Analysis::resolve_attribute(const Node& base,
                                                  std::string_view attribute) const {
  std::vector<Resolved> out;
  for (const auto& b : resolve(base))
    for (auto& r : resolve_member(b, attribute)) out.push_back(std::move(r));
  return out;
}

const std::vector<Resolved>& Analysis::resolve(const Node& expression) const {
  static const std::vector<Resolved> kNothing;
  if (!expression.valid()) return kNothing;
  auto it = resolved_.find(expression.data());
  if (it != resolved_.end()) return it->second;
  return resolved_.emplace(expression.data(), resolve_uncached(expression)).first->second;
}

std::vector<Resolved> Analysis::resolve_uncached(const Node& expression) const {
  if (expression.is("Name")) {
    std::string_view id = expression.text("id");
    auto it = facts_.import_bindings.find(id);
    if (it != facts_.import_bindings.end()) {
      std::vector<Resolved> out;
      for (const auto& binding : it->second) {
        if (binding.kind != Resolved::Kind::object) {
          Resolved r = binding;
          r.name = canonical_module_name(binding.name);
          out.push_back(std::move(r));
          continue;
        }
        // `from M import n`: resolve as the attribute M.n.
        auto dot = binding.name.rfind('.');
        if (dot == std::string::npos) {
          out.push_back(binding);
          continue;
        }
        Resolved module{canonical_module_name(binding.name.substr(0, dot)),
                        binding.name.substr(0, dot), Resolved::Kind::module};
        for (auto& r : resolve_member(module, binding.name.substr(dot + 1))) {
          r.spelled = binding.spelled;
          out.push_back(std::move(r));
        }
      }
      return out;
    }
    if (is_builtin_name(id)) {
      std::string name = "builtins." + std::string(id);
      return {Resolved{name, std::string(id), Resolved::Kind::object}};
    }
    return {};
  }
  if (expression.is("Attribute"))
    return resolve_attribute(expression.child("value"), expression.text("attr"));
  if (expression.is("Call")) {
    // getattr(X, "literal") is X.literal.
    auto func = expression.child("func");
    if (func.is("Name") && func.text("id") == "getattr" &&
        facts_.import_bindings.count("getattr") == 0) {
      auto name = literal_string(argument(expression, 1));
      if (name) return resolve_attribute(argument(expression, 0), *name);
    }
  }
  if (expression.is("NamedExpr")) return resolve(expression.child("value"));
  return {};
}

Node Analysis::argument(const Node& call, std::size_t index, std::string_view keyword) {
  auto args = call.children("args");
  std::size_t position = 0;
  for (const auto& arg : args) {
    if (arg.is("Starred")) return {};
    if (position++ == index) return arg;
  }
  if (!keyword.empty())
    for (const auto& kw : call.children("keywords"))
      if (kw.text("arg") == keyword) return kw.child("value");
  return {};
}

bool Analysis::has_starred_arguments(const Node& call) {
  for (const auto& arg : call.children("args"))
    if (arg.is("Starred")) return true;
  for (const auto& kw : call.children("keywords"))
    if (kw.text("arg").empty()) return true;  // **kwargs
  return false;
}

std::optional<std::string> Analysis::literal_string(const Node& e) const {
  if (!e) return std::nullopt;
  if (e.is("Constant")) {
    auto kind = e.constant_kind();
    if (kind == "str" || kind == "bytes") return std::string(e.constant_text());
    return std::nullopt;
  }
  if (e.is("BinOp") && e.child("op").is("Add")) {
    auto left = literal_string(e.child("left"));
    auto right = literal_string(e.child("right"));
    if (left && right) return *left + *right;
    return std::nullopt;
  }
  if (e.is("JoinedStr")) {
    std::string out;
    for (const auto& part : e.children("values")) {
      auto text = part.is("Constant") ? literal_string(part) : std::nullopt;
      if (!text) return std::nullopt;
      out += *text;
    }
    return out;
  }
  if (e.is("Name")) {
    auto it = facts_.single_assignments.find(e.text("id"));
    if (it != facts_.single_assignments.end()) return literal_string(it->second);
  }
  return std::nullopt;
}

namespace {
std::string join_path(std::string base, std::string_view part) {
  if (!part.empty() && part.front() == '/') return std::string(part);
  if (!base.empty() && base.back() != '/') base += '/';
  return base + std::string(part);
}
}  // namespace

std::optional<std::string> Analysis::literal_path(const Node& e) const {
  if (!e) return std::nullopt;
  if (auto text = literal_string(e)) return text;
  if (e.is("Name")) {
    auto it = facts_.single_assignments.find(e.text("id"));
    if (it != facts_.single_assignments.end()) return literal_path(it->second);
    return std::nullopt;
  }
  if (e.is("BinOp") && e.child("op").is("Div")) {
    auto left = literal_path(e.child("left"));
    auto right = literal_path(e.child("right"));
    if (left && right) return join_path(*left, *right);
    return std::nullopt;
  }
  if (e.is("Call") && !has_starred_arguments(e)) {
    static const std::set<std::string, std::less<>> kPathClasses = {
        "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath"};
    for (const auto& r : resolve(e.child("func"))) {
      bool path_class = kPathClasses.count(r.name) > 0;
      bool join = r.name == "os.path.join";
      if (!path_class && !join) continue;
      auto args = e.children("args");
      if (args.empty()) return path_class ? std::optional<std::string>(".") : std::nullopt;
      std::string out;
      for (std::size_t i = 0; i < args.size(); ++i) {
        auto part = literal_path(args[i]);
        if (!part) return std::nullopt;
        out = i == 0 ? *part : join_path(out, *part);
      }
      return out;
    }
  }
  return std::nullopt;
}

std::string Analysis::literal_prefix(const Node& e) const {
  if (!e) return {};
  if (auto whole = literal_string(e)) return *whole;
  if (e.is("Name")) {
    auto it = facts_.single_assignments.find(e.text("id"));
    if (it != facts_.single_assignments.end()) return literal_prefix(it->second);
    return {};
  }
  if (e.is("JoinedStr")) {
    std::string out;
    for (const auto& part : e.children("values")) {
      auto text = part.is("Constant") ? literal_string(part) : std::nullopt;
      if (!text) break;
      out += *text;
    }
    return out;
  }
  if (e.is("BinOp") && e.child("op").is("Add")) {
    auto left = literal_string(e.child("left"));
    if (!left) return literal_prefix(e.child("left"));
    return *left + literal_prefix(e.child("right"));
  }
  return {};
}

Node Analysis::parent(std::size_t levels_up) const {
  if (ancestors_.size() <= levels_up) return {};
  return ancestors_[ancestors_.size() - 1 - levels_up];
}

bool Analysis::is_method_receiver(std::string_view name) const {
  for (std::size_t i = ancestors_.size(); i-- > 0;) {
    const Node& node = ancestors_[i];
    if (!node.is("FunctionDef") && !node.is("AsyncFunctionDef")) continue;
    auto arguments = node.child("args");
    auto positional = arguments.children("posonlyargs");
    for (const auto& a : arguments.children("args")) positional.push_back(a);
    bool in_class = i > 0 && ancestors_[i - 1].is("ClassDef");
    if (in_class) return !positional.empty() && positional.front().text("arg") == name;
    // A nested function that rebinds the name is not the method's receiver.
    for (const auto& a : positional)
      if (a.text("arg") == name) return false;
  }
  return false;
}

}  // namespace airlock::validate
