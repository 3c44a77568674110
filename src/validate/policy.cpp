#include "validate/policy.hpp"

namespace airlock::validate {

std::set<std::string> Policy::default_allowed_imports() {
  return {"json",      "re",       "math",     "datetime",    "collections", "itertools",
          "functools", "statistics", "decimal", "fractions",  "random",      "string",
          "textwrap",  "typing",   "dataclasses", "enum",     "uuid",        "hashlib",
          "base64",    "csv",      "time",     "html",        "unicodedata", "difflib",
          "heapq",     "bisect",   "copy",     "pprint",      "operator",    "zoneinfo"};
}

NonLiteralDestination Policy::effective_non_literal_destination() const {
  if (non_literal_destination) return *non_literal_destination;
  return allowed_hosts.empty() ? NonLiteralDestination::reject : NonLiteralDestination::warn;
}

const std::set<std::string>& name_only_modules() {
  static const std::set<std::string> kModules = {
      // the list
      "os", "sys", "subprocess", "socket", "ctypes", "importlib", "pickle", "marshal",
      "builtins", "pty", "multiprocessing", "threading", "shutil", "pathlib", "io", "code",
      "gc", "inspect",
      // the same powers under other names
      "posix", "nt", "signal", "resource", "fcntl", "mmap", "cffi", "runpy", "pdb", "bdb",
      "codeop", "dill", "cloudpickle", "shelve", "jsonpickle", "copyreg", "tempfile",
      "asyncio", "concurrent", "posixpath", "ntpath", "sysconfig", "site", "pkgutil",
      "zipimport", "faulthandler", "tracemalloc", "sqlite3", "ssl", "select", "selectors",
      "termios", "tty", "pwd", "grp", "spwd", "crypt", "readline", "rlcompleter"};
  return kModules;
}

bool is_name_only_module(std::string_view module) {
  std::string_view top = module.substr(0, module.find('.'));
  // C modules behind the standard library (_io, _socket, _posixsubprocess, ...) and private
  // modules of any package: only by name.
  if (!top.empty() && top.front() == '_') return true;
  for (std::size_t dot = module.find('.'); dot != std::string_view::npos;
       dot = module.find('.', dot + 1))
    if (dot + 1 < module.size() && module[dot + 1] == '_') return true;
  return name_only_modules().count(std::string(top)) > 0;
}

bool import_allowed(const Policy& policy, std::string_view module) {
  if (module.empty()) return false;
  if (module == "__future__") return true;  // compiler directives, not a module the code uses
  if (policy.allowed_imports.count(std::string(module)) > 0) return true;
  if (is_name_only_module(module)) return false;
  for (const auto& entry : policy.allowed_imports) {
    if (entry == "*") return true;
    if (entry.size() > 2 && entry.substr(entry.size() - 2) == ".*") {
      std::string_view parent(entry.data(), entry.size() - 2);
      if (module.size() > parent.size() + 1 && module.substr(0, parent.size()) == parent &&
          module[parent.size()] == '.')
        return true;
    }
  }
  return false;
}

}  // namespace airlock::validate
