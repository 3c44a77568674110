// What a failed run tells the caller beyond its kind: a python-code cell's exception as the
// runner reported it, and the connections the egress proxy refused during the run.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"

namespace airlock::pipeline {

// The exit status with which Airlock's runner says a cell raised (airlock_runner.py,
// CODE_ERROR_STATUS); its report is then the one JSON object on the protocol channel.
inline constexpr int kCodeErrorStatus = 1;

// The report of a python-code run that ended with kCodeErrorStatus, as
// {name, value, line, traceback: [lines], stdout}, each field of the type it should be and
// bounded; nullopt for any other run or a report not of that shape. The verdict decides
// whether a run failed; the report only describes a failure, so output that imitates one
// cannot turn a success into a failure, and the runner keeps the channel from the code's
// prints and children (docs/validate.md, "Errors").
std::optional<nlohmann::json> code_error_report(const backend::RunResult& run, std::size_t max_depth);

// The connections the egress proxy refused: [{host, port, address, rule, rule_set}], at most
// kMaxReportedDenials; empty when there were none.
nlohmann::json egress_denials(const backend::RunResult& run, const std::string& rule_set);

inline constexpr std::size_t kMaxReportedDenials = 20;

}  // namespace airlock::pipeline
