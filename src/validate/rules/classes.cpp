// Classes and decorators: code that runs without a visible call.
//   class-dangerous-method  a class body defines a method the interpreter calls implicitly
//                           (__del__, __getattr__, __init_subclass__, ...)
//   class-metaclass         metaclass=, class keywords, subclassing type, type(name, bases, ns)
//   decorator-not-allowed   a decorator that is not a plain allowed name (or a call of one)
#include <set>

#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

const std::set<std::string, std::less<>>& implicit_methods() {
  static const std::set<std::string, std::less<>> kMethods = {
      "__del__", "__getattr__", "__getattribute__", "__init_subclass__",
      "__class_getitem__", "__set_name__", "__setattr__", "__delattr__", "__reduce__",
      "__reduce_ex__", "__get__", "__set__", "__delete__", "__instancecheck__",
      "__subclasscheck__", "__mro_entries__", "__prepare__"};
  return kMethods;
}

const std::set<std::string, std::less<>>& allowed_decorators() {
  static const std::set<std::string, std::less<>> kNames = {
      "builtins.property", "builtins.staticmethod", "builtins.classmethod",
      "functools.wraps", "functools.lru_cache", "functools.cache", "functools.cached_property",
      "functools.total_ordering", "functools.singledispatch", "functools.singledispatchmethod",
      "dataclasses.dataclass", "abc.abstractmethod", "typing.overload", "typing.final",
      "typing.runtime_checkable", "typing.no_type_check", "enum.unique", "enum.verify",
      "contextlib.contextmanager", "contextlib.asynccontextmanager"};
  return kNames;
}

bool is_allowed_decorator_reference(const Node& expression, Analysis& analysis) {
  for (const auto& r : analysis.resolve(expression))
    if (allowed_decorators().count(r.name) > 0) return true;
  // A function this program defines (its body is checked like everything else).
  if (expression.is("Name") && analysis.facts().import_bindings.count(expression.text("id")) == 0 &&
      analysis.facts().function_names.count(expression.text("id")) > 0)
    return true;
  // @x.setter / @x.getter / @x.deleter of a property, @f.register of a singledispatch function.
  if (expression.is("Attribute") && expression.child("value").is("Name")) {
    auto attr = expression.text("attr");
    if (attr == "setter" || attr == "getter" || attr == "deleter" || attr == "register")
      return analysis.resolve(expression.child("value")).empty();
  }
  return false;
}

void check_decorators(const Node& node, Analysis& analysis) {
  for (const auto& decorator : node.children("decorator_list")) {
    Node target = decorator.is("Call") ? decorator.child("func") : decorator;
    if (!(target.is("Name") || target.is("Attribute")) ||
        !is_allowed_decorator_reference(target, analysis))
      analysis.report(decorator, "decorator-not-allowed",
                      "decorators run code when the definition runs; only plain allowed names "
                      "(property, functools.wraps, dataclasses.dataclass, ... or a function "
                      "defined here) may decorate");
  }
}

void check_class(const Node& node, Analysis& analysis) {
  for (const auto& keyword : node.children("keywords")) {
    auto name = keyword.text("arg");
    analysis.report(keyword.child("value") ? keyword.child("value") : node, "class-metaclass",
                    name == "metaclass"
                        ? "metaclass= runs code when the class is created and on its use"
                        : "class keyword " + std::string(name.empty() ? "**" : name) +
                              " is passed to __init_subclass__ or a metaclass");
  }
  for (const auto& base : node.children("bases")) {
    for (const auto& r : analysis.resolve(base)) {
      if (r.name == "builtins.type" || r.name == "abc.ABCMeta" || r.name == "enum.EnumMeta" ||
          r.name == "enum.EnumType") {
        analysis.report(base, "class-metaclass",
                        "subclassing " + r.spelled + " defines a metaclass");
        break;
      }
    }
  }
  for (const auto& statement : node.children("body")) {
    if (!statement.is("FunctionDef") && !statement.is("AsyncFunctionDef")) continue;
    auto name = statement.text("name");
    if (implicit_methods().count(name) > 0)
      analysis.report(statement, "class-dangerous-method",
                      "def " + std::string(name) +
                          ": the interpreter calls it implicitly (on attribute access, "
                          "subclassing, subscription or collection), so code runs without a "
                          "visible call");
  }
}

void check_type_call(const Node& call, Analysis& analysis) {
  if (call.children("args").size() < 3 && !Analysis::has_starred_arguments(call)) return;
  for (const auto& r : analysis.resolve(call.child("func")))
    if (r.name == "builtins.type") {
      analysis.report(call, "class-metaclass",
                      "type(name, bases, namespace) creates a class from data");
      return;
    }
}

}  // namespace

void check_classes(const Node& node, Analysis& analysis) {
  std::string_view type = node.type_name();
  if (type == "ClassDef") {
    check_class(node, analysis);
    check_decorators(node, analysis);
  } else if (type == "FunctionDef" || type == "AsyncFunctionDef") {
    check_decorators(node, analysis);
  } else if (type == "Call") {
    check_type_call(node, analysis);
  }
}

}  // namespace airlock::validate::rules
