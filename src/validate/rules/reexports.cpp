// Allowed modules that re-export dangerous ones must not open a path. What each module
// exposes comes from the target interpreter (module_exports.hpp), not from a hand-kept list.
//   reexport-module              an attribute of a module that is itself a module the policy
//                                does not allow (platform.os, warnings.sys, random._os)
//   reexport-dangerous-callable  an attribute that is a callable from a module the policy
//                                does not allow and that only an exact entry could allow
#include <set>

#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

// Modules whose callables are dangerous wherever they surface (the name-only modules).
bool is_dangerous_origin(const std::string& canonical_module, const Policy& policy) {
  if (canonical_module.empty() || canonical_module == "builtins") return false;
  std::string top = canonical_module.substr(0, canonical_module.find('.'));
  // The named modules (after posix -> os, _io -> io, ...), not every private C accelerator
  // (_hashlib, _csv, _bisect are the allowed modules' own implementations).
  if (name_only_modules().count(top) == 0) return false;
  return !import_allowed(policy, canonical_module) && !import_allowed(policy, top);
}

void check_member(const Node& at, const std::string& module, std::string_view attribute,
                  Analysis& analysis, std::string_view how) {
  const Policy& policy = analysis.policy();
  const ExportedAttribute* attr = analysis.exported(module, attribute);
  if (!attr) return;
  std::string dotted = module + "." + std::string(attribute);
  if (import_allowed(policy, dotted)) return;
  if (attr->kind == ExportedAttribute::Kind::module) {
    std::string target = canonical_module_name(attr->origin);
    // The package's own submodule by that name (os.path, json.decoder) is part of it.
    if (target == dotted) return;
    if (!import_allowed(policy, attr->origin) && !import_allowed(policy, target))
      analysis.report(at, "reexport-module",
                      std::string(how) + " is the module " + attr->origin +
                          ", which the policy does not allow");
    return;
  }
  if (attr->kind == ExportedAttribute::Kind::callable ||
      attr->kind == ExportedAttribute::Kind::class_type) {
    std::string origin = canonical_module_name(attr->origin);
    if (is_dangerous_origin(origin, policy))
      analysis.report(at, "reexport-dangerous-callable",
                      std::string(how) + " is " + canonical_callable_name(*attr) + " from " +
                          attr->origin + ", which the policy does not allow");
  }
}

}  // namespace

void check_reexports(const Node& node, Analysis& analysis) {
  if (node.is("Attribute")) {
    for (const auto& base : analysis.resolve(node.child("value"))) {
      if (base.kind == Resolved::Kind::module) {
        check_member(node, base.name, node.text("attr"), analysis,
                     base.spelled + "." + std::string(node.text("attr")));
      } else if (base.kind == Resolved::Kind::package) {
        std::string dotted = base.name + "." + std::string(node.text("attr"));
        bool reachable = false;
        for (const auto& r : analysis.resolve(node))
          if (r.kind != Resolved::Kind::object) reachable = true;
        if (!reachable)
          analysis.report(node, "import-not-allowed",
                          dotted + " is reached through the package " + base.name +
                              ", which the policy does not allow");
      }
    }
  } else if (node.is("ImportFrom")) {
    std::string module = canonical_module_name(node.text("module"));
    if (!import_allowed(analysis.policy(), module)) return;
    for (const auto& alias : node.children("names")) {
      auto name = alias.text("name");
      if (name == "*") continue;
      check_member(alias, module, name, analysis, "from " + module + " import " + std::string(name));
    }
  }
}

}  // namespace airlock::validate::rules
