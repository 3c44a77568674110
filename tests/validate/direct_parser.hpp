// For the engine's unit tests: the syntax tree and module exports made by running
// ast_dump.py with the host's python3 directly (no sandbox; the tests of the sandboxed worker
// are in tests/validate/). The engine never sees a process: it gets the JSON.
#pragma once

#include <set>
#include <string>

#include "validate/engine.hpp"
#include "validate/module_exports.hpp"

namespace airlock::validate::test {

// ast_dump.py's reply to `source`.
Json parse_directly(const std::string& source);
// The exports of `modules`, imported together (cached per set).
const ExportTable& exports_directly(const std::set<std::string>& modules);
// The full engine path without the worker: byte checks, parse, exports, rules.
Report check_directly(const std::string& source, const Policy& policy);

}  // namespace airlock::validate::test
