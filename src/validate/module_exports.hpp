// What each module the code may import exposes, as the target interpreter reports it
// (ast_dump.py exports): which attributes are modules and where callables come from. The
// re-export rules and the resolution of attribute chains (`platform.os.system`) use it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "validate/syntax_tree.hpp"

namespace airlock::validate {

struct ExportedAttribute {
  enum class Kind { module, callable, class_type, value } kind = Kind::value;
  std::string origin;  // module: its __name__; callable/class: its __module__ ("" unknown)
  std::string name;    // callable/class: its __qualname__
};

struct ModuleExports {
  bool importable = false;
  std::string error;  // why it could not be imported
  std::map<std::string, ExportedAttribute, std::less<>> attributes;
};

// Module name -> what it exposes after every module of the set was imported together.
using ExportTable = std::map<std::string, ModuleExports, std::less<>>;

// Reads the JSON that `ast_dump.py exports` prints.
Result<ExportTable> parse_exports(const Json& reply);

// The name a callable is known by: origin module (C implementations mapped to the module that
// re-exports them: posix -> os, _io -> io, _socket -> socket, ...) + "." + qualname.
std::string canonical_callable_name(const ExportedAttribute& attribute);
// posix -> os, _pickle -> pickle, ...; other names unchanged.
std::string canonical_module_name(std::string_view module);

}  // namespace airlock::validate
