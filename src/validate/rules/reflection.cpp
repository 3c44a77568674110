// Reflection: the ways Python code reaches objects it was not handed.
//   reflection-dunder        dunder attributes and names (load, store, del), outside the
//                            documented harmless forms
//   reflection-private       _private attributes of anything but self/cls in its own class
//   reflection-frame         frame, traceback, generator and code object attributes, and the
//                            functions that return frames
//   reflection-getattr       getattr/setattr/delattr/hasattr (and operator.attrgetter/
//                            methodcaller) with a name that is not a literal or starts with _
//   reflection-getattr-value those functions passed around as values
//   reflection-module-value  a module used as a value (aliased, passed, stored, returned)
//   reflection-module-write  assigning or deleting an attribute of a module
#include <set>

#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

// Dunder methods ordinary classes define with `def` in their body, and that `super()` may
// call. Dangerous ones (__del__, __getattr__, ...) are the class rules' business.
const std::set<std::string, std::less<>>& ordinary_dunder_methods() {
  static const std::set<std::string, std::less<>> kMethods = {
      "__init__", "__new__", "__post_init__", "__repr__", "__str__", "__bytes__", "__format__",
      "__hash__", "__bool__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
      "__len__", "__length_hint__", "__iter__", "__next__", "__reversed__", "__contains__",
      "__getitem__", "__setitem__", "__delitem__", "__missing__", "__enter__", "__exit__",
      "__aenter__", "__aexit__", "__aiter__", "__anext__", "__await__", "__call__",
      "__add__", "__sub__", "__mul__", "__matmul__", "__truediv__", "__floordiv__", "__mod__",
      "__divmod__", "__pow__", "__lshift__", "__rshift__", "__and__", "__xor__", "__or__",
      "__radd__", "__rsub__", "__rmul__", "__rmatmul__", "__rtruediv__", "__rfloordiv__",
      "__rmod__", "__rdivmod__", "__rpow__", "__rlshift__", "__rrshift__", "__rand__",
      "__rxor__", "__ror__", "__iadd__", "__isub__", "__imul__", "__imatmul__",
      "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__", "__ilshift__", "__irshift__",
      "__iand__", "__ixor__", "__ior__", "__neg__", "__pos__", "__abs__", "__invert__",
      "__complex__", "__int__", "__float__", "__index__", "__round__", "__trunc__",
      "__floor__", "__ceil__", "__copy__", "__deepcopy__", "__sizeof__"};
  return kMethods;
}

// Methods of namedtuple whose public names start with an underscore.
bool is_namedtuple_api(std::string_view name) {
  return name == "_asdict" || name == "_replace" || name == "_fields" || name == "_make" ||
         name == "_field_defaults";
}

bool is_frame_attribute(std::string_view name) {
  static const std::set<std::string, std::less<>> kNames = {
      "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace", "f_lasti",
      "f_lineno", "tb_frame", "tb_next", "tb_lasti", "gi_frame", "gi_code", "gi_yieldfrom",
      "gi_running", "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running", "ag_frame",
      "ag_code", "ag_await", "ag_running", "co_code", "co_consts", "co_names", "co_varnames",
      "co_freevars", "co_cellvars", "co_filename", "co_lines", "co_positions", "co_qualname",
      "func_globals", "func_code", "func_closure", "func_defaults", "cell_contents",
      "im_func", "im_self", "im_class", "mro"};
  return kNames.count(name) > 0;
}

const NamePatternTable& frame_functions() {
  static const NamePatternTable kTable = {
      {"sys._getframe", "returns a stack frame"},
      {"sys._current_frames", "returns every thread's stack frame"},
      {"sys.settrace", "runs a function on every frame"},
      {"sys.setprofile", "runs a function on every frame"},
      {"sys.exc_info", "returns a traceback, whose frames reach every global"},
      {"sys.last_traceback", "a traceback, whose frames reach every global"},
      {"inspect.currentframe", "returns a stack frame"},
      {"inspect.stack", "returns stack frames"},
      {"inspect.trace", "returns stack frames"},
      {"inspect.getouterframes", "returns stack frames"},
      {"inspect.getinnerframes", "returns stack frames"},
      {"inspect.getframeinfo", "reads stack frames"},
      {"inspect.getmembers*", "enumerates every attribute, private ones included"},
      {"inspect.getattr_static", "reads any attribute by name"},
      {"inspect.getclosurevars", "exposes a function's globals"},
      {"inspect.getgeneratorlocals", "exposes a generator's frame"},
      {"inspect.getcoroutinelocals", "exposes a coroutine's frame"},
      {"inspect.unwrap", "reaches wrapped functions"},
      {"gc.get_objects", "returns every object, past every restriction"},
      {"gc.get_referrers", "walks the object graph"},
      {"gc.get_referents", "walks the object graph"},
      {"traceback.walk_stack", "returns stack frames"},
      {"traceback.walk_tb", "returns stack frames"},
  };
  return kTable;
}

bool is_getattr_family(const Resolved& r) {
  return r.name == "builtins.getattr" || r.name == "builtins.setattr" ||
         r.name == "builtins.delattr" || r.name == "builtins.hasattr";
}
bool is_attrgetter_family(const Resolved& r) {
  return r.name == "operator.attrgetter" || r.name == "operator.methodcaller";
}

// The checks every attribute name gets, however the code names it.
void check_attribute_name(const Node& at, std::string_view name, bool private_allowed,
                          Analysis& analysis, std::string_view how) {
  std::string shown(how);
  if (is_dunder(name)) {
    analysis.report(at, "reflection-dunder",
                    shown + ": dunder attributes reach the interpreter's internals "
                            "(classes, globals, builtins)");
  } else if (!name.empty() && name.front() == '_' && !private_allowed &&
             !is_namedtuple_api(name)) {
    analysis.report(at, "reflection-private",
                    shown + ": private attributes are open only to self/cls in their own class");
  } else if (is_frame_attribute(name)) {
    analysis.report(at, "reflection-frame",
                    shown + ": frame, traceback, generator and code attributes reach every "
                            "global of the program and of the interpreter");
  }
}

bool is_super_call(const Node& node) {
  if (!node.is("Call")) return false;
  auto func = node.child("func");
  return func.is("Name") && func.text("id") == "super";
}

void check_attribute(const Node& node, Analysis& analysis) {
  auto attr = node.text("attr");
  auto value = node.child("value");
  bool private_ok = value.is("Name") &&
                    (value.text("id") == "self" || value.text("id") == "cls") &&
                    analysis.is_method_receiver(value.text("id"));
  bool super_ok = is_super_call(value) && ordinary_dunder_methods().count(attr) > 0;
  if (!super_ok)
    check_attribute_name(node, attr, private_ok, analysis, "." + std::string(attr));

  auto ctx = node.ctx();
  if (ctx == "Store" || ctx == "Del") {
    for (const auto& base : analysis.resolve(value)) {
      if (base.kind == Resolved::Kind::object) continue;
      analysis.report(node, "reflection-module-write",
                      std::string(ctx == "Store" ? "assigning " : "deleting ") + base.spelled +
                          "." + std::string(attr) +
                          ": changing a module changes it for every user of it");
      break;
    }
  }
}

// A module may be named only to reach one of its attributes.
void check_module_value(const Node& node, Analysis& analysis) {
  if (node.is("Name") && node.ctx() == "Store") return;
  Node parent = analysis.parent();
  if (parent.is("Attribute") && parent.child("value") == node) return;
  for (const auto& r : analysis.resolve(node)) {
    if (r.kind == Resolved::Kind::object) continue;
    analysis.report(node, "reflection-module-value",
                    "module " + r.name + " used as a value: aliases and containers hide what "
                    "is reached through it; write " + r.spelled + ".<attribute>");
    return;
  }
}

void check_reference_as_value(const Node& node, Analysis& analysis) {
  Node parent = analysis.parent();
  bool called = parent.is("Call") && parent.child("func") == node;
  if (called) return;
  for (const auto& r : analysis.resolve(node)) {
    if (is_getattr_family(r) || is_attrgetter_family(r)) {
      analysis.report(node, "reflection-getattr-value",
                      r.spelled + " passed as a value: it would read or write attributes "
                                  "with names the validator cannot see");
      return;
    }
  }
}

void check_name(const Node& node, Analysis& analysis) {
  auto id = node.text("id");
  if (is_dunder(id)) {
    Node parent = analysis.parent();
    bool main_guard = false;
    if (id == "__name__" && parent.is("Compare")) {
      for (const auto& side : parent.children("comparators"))
        if (side.is_string_constant() && side.constant_text() == "__main__") main_guard = true;
      if (parent.child("left").is_string_constant() &&
          parent.child("left").constant_text() == "__main__")
        main_guard = true;
    }
    if (!main_guard)
      analysis.report(node, "reflection-dunder",
                      std::string(id) + ": dunder names reach the interpreter's internals");
  }
}

void check_getattr_call(const Node& call, Analysis& analysis) {
  for (const auto& r : analysis.resolve(call.child("func"))) {
    if (is_getattr_family(r)) {
      auto name_node = Analysis::argument(call, 1);
      auto name = analysis.literal_string(name_node);
      if (!name || !name_node.is("Constant")) {
        analysis.report(call, "reflection-getattr",
                        r.spelled + " with a computed attribute name: the validator cannot "
                                    "see which attribute it reaches; use obj.name");
      } else if (!name->empty() && name->front() == '_') {
        analysis.report(call, "reflection-getattr",
                        r.spelled + "(..., \"" + *name + "\"): names starting with _ are "
                                    "private or internals");
      } else {
        check_attribute_name(call, *name, false, analysis, r.spelled + "(..., \"" + *name + "\")");
      }
      return;
    }
    if (is_attrgetter_family(r)) {
      auto args = call.children("args");
      if (args.empty() || Analysis::has_starred_arguments(call)) {
        analysis.report(call, "reflection-getattr", r.spelled + " without literal names");
        return;
      }
      std::size_t names = r.name == "operator.methodcaller" ? 1 : args.size();
      for (std::size_t i = 0; i < names; ++i) {
        if (!args[i].is_string_constant()) {
          analysis.report(call, "reflection-getattr",
                          r.spelled + " with a computed attribute name");
          return;
        }
        std::string_view dotted = args[i].constant_text();
        std::size_t start = 0;
        while (start <= dotted.size()) {
          auto end = dotted.find('.', start);
          auto part = dotted.substr(start, end == std::string_view::npos ? end : end - start);
          if (!part.empty() && part.front() == '_')
            analysis.report(call, "reflection-getattr",
                            r.spelled + "(\"" + std::string(dotted) +
                                "\"): names starting with _ are private or internals");
          else
            check_attribute_name(call, part, false, analysis, r.spelled + "(\"" + std::string(dotted) + "\")");
          if (end == std::string_view::npos) break;
          start = end + 1;
        }
      }
      return;
    }
  }
}

void check_bound_identifier(const Node& at, std::string_view name, Analysis& analysis) {
  if (is_dunder(name))
    analysis.report(at, "reflection-dunder",
                    "binding the dunder name " + std::string(name) +
                        ": dunder names belong to the interpreter");
}

void check_definition(const Node& node, Analysis& analysis) {
  auto name = node.text("name");
  if (!is_dunder(name)) return;
  bool in_class = analysis.parent().is("ClassDef");
  if (in_class && ordinary_dunder_methods().count(name) > 0) return;
  // The dangerous class methods are reported by the class rules.
  if (in_class) {
    static const std::set<std::string, std::less<>> kClassRules = {
        "__del__", "__getattr__", "__getattribute__", "__init_subclass__",
        "__class_getitem__", "__set_name__", "__setattr__", "__delattr__", "__reduce__",
        "__reduce_ex__", "__get__", "__set__", "__delete__", "__instancecheck__",
        "__subclasscheck__", "__mro_entries__", "__prepare__"};
    if (kClassRules.count(name) > 0) return;
  }
  analysis.report(node, "reflection-dunder",
                  "def " + std::string(name) +
                      (in_class ? ": not one of the ordinary dunder methods"
                                : ": dunder functions outside a class hook into the interpreter"));
}

}  // namespace

void check_reflection(const Node& node, Analysis& analysis) {
  std::string_view type = node.type_name();
  if (type == "Name") {
    check_name(node, analysis);
    if (node.ctx() == "Load") check_reference_as_value(node, analysis);
    check_module_value(node, analysis);
    report_reference(node, analysis, "reflection-frame", frame_functions());
  } else if (type == "Attribute") {
    check_attribute(node, analysis);
    check_reference_as_value(node, analysis);
    check_module_value(node, analysis);
    report_reference(node, analysis, "reflection-frame", frame_functions());
  } else if (type == "Call") {
    check_getattr_call(node, analysis);
  } else if (type == "FunctionDef" || type == "AsyncFunctionDef") {
    check_definition(node, analysis);
  } else if (type == "ClassDef") {
    check_bound_identifier(node, node.text("name"), analysis);
  } else if (type == "arg") {
    check_bound_identifier(node, node.text("arg"), analysis);
  } else if (type == "ExceptHandler" || type == "MatchAs" || type == "MatchStar") {
    check_bound_identifier(node, node.text("name"), analysis);
  } else if (type == "MatchMapping") {
    check_bound_identifier(node, node.text("rest"), analysis);
  } else if (type == "Global" || type == "Nonlocal") {
    for (auto name : node.texts("names")) check_bound_identifier(node, name, analysis);
  } else if (type == "alias") {
    check_bound_identifier(node, node.text("asname"), analysis);
  } else if (type == "ImportFrom") {
    for (const auto& alias : node.children("names")) {
      auto name = alias.text("name");
      if (name != "*")
        check_attribute_name(alias, name, false, analysis,
                             "from " + std::string(node.text("module")) + " import " +
                                 std::string(name));
    }
  } else if (type == "Import") {
    for (const auto& alias : node.children("names")) {
      auto module = alias.text("name");
      std::size_t start = 0;
      while (start < module.size()) {
        auto end = module.find('.', start);
        auto part = module.substr(start, end == std::string_view::npos ? end : end - start);
        if (is_dunder(part)) check_bound_identifier(alias, part, analysis);
        if (end == std::string_view::npos) break;
        start = end + 1;
      }
    }
  } else if (type == "MatchClass") {
    // `case C(__class__=x)` reads the attribute __class__.
    for (auto attr : node.texts("kwd_attrs"))
      check_attribute_name(node, attr, false, analysis, "pattern attribute " + std::string(attr));
  }
}

}  // namespace airlock::validate::rules
