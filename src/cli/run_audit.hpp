// `airlock run --audit PATH`: one audit record per run. The log is opened (and created) before
// the command runs, so a log that cannot be written stops the run instead of leaving it
// unrecorded; the record is appended, durably, before run reports anything.
#pragma once

#include <memory>
#include <string>

#include "audit/audit_log.hpp"
#include "backend/backend.hpp"
#include "common/result.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::cli {

class RunAuditor {
 public:
  // An empty path gives an auditor that records nothing.
  static Result<RunAuditor> open(const std::string& path);
  // Appends the run's record and closes the log (signing a checkpoint over it).
  Status record(const sandbox::Spec& spec, const backend::RunResult& outcome);

 private:
  std::shared_ptr<audit::AuditLog> log_;
};

}  // namespace airlock::cli
