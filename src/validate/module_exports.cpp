#include "validate/module_exports.hpp"

#include <array>
#include <utility>

namespace airlock::validate {

Result<ExportTable> parse_exports(const Json& reply) {
  if (!reply.is_object() || !reply.contains("modules") || !reply["modules"].is_object())
    return Error::make("parse_failed", "the exports reply has no \"modules\" object");
  ExportTable table;
  for (const auto& [module, entry] : reply["modules"].items()) {
    ModuleExports exports;
    exports.importable = entry.value("importable", false);
    exports.error = entry.value("error", "");
    if (entry.contains("attributes") && entry["attributes"].is_object()) {
      for (const auto& [name, described] : entry["attributes"].items()) {
        ExportedAttribute attribute;
        std::string kind = described.value("kind", "value");
        if (kind == "module") attribute.kind = ExportedAttribute::Kind::module;
        else if (kind == "callable") attribute.kind = ExportedAttribute::Kind::callable;
        else if (kind == "class") attribute.kind = ExportedAttribute::Kind::class_type;
        attribute.origin = described.value("origin", "");
        attribute.name = described.value("name", "");
        exports.attributes.emplace(name, std::move(attribute));
      }
    }
    table.emplace(module, std::move(exports));
  }
  return table;
}

std::string canonical_module_name(std::string_view module) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kAliases = {{
      {"posix", "os"}, {"nt", "os"}, {"posixpath", "os.path"}, {"ntpath", "os.path"},
      {"_io", "io"}, {"_socket", "socket"}, {"_pickle", "pickle"}, {"cPickle", "pickle"},
      {"_posixsubprocess", "subprocess"}, {"_ctypes", "ctypes"}, {"_thread", "threading"},
      {"_imp", "importlib"}, {"_frozen_importlib", "importlib"},
      {"_frozen_importlib_external", "importlib"},
  }};
  for (const auto& [from, to] : kAliases) {
    if (module == from) return std::string(to);
    if (module.size() > from.size() && module.substr(0, from.size()) == from &&
        module[from.size()] == '.')
      return std::string(to) + std::string(module.substr(from.size()));
  }
  return std::string(module);
}

std::string canonical_callable_name(const ExportedAttribute& attribute) {
  std::string module = canonical_module_name(attribute.origin);
  if (module == "io" && attribute.name == "open") return "builtins.open";
  if (module.empty()) return attribute.name;
  return module + "." + attribute.name;
}

}  // namespace airlock::validate
