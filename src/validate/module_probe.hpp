// Computes module exports by asking the target interpreter, in a one-shot sandbox
// (`ast_dump.py exports M...`): the modules are imported together, so each one's attributes
// include what the others' imports add.
#pragma once

#include <set>
#include <string>

#include "common/result.hpp"
#include "validate/module_exports.hpp"
#include "validate/parse_worker.hpp"

namespace airlock::validate {

Result<ExportTable> probe_module_exports(const ParseWorkerConfig& config,
                                         const std::set<std::string>& modules);

}  // namespace airlock::validate
