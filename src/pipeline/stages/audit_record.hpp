// The last stage, run for every invocation: one record in the tamper-evident audit log,
// written before the response is sent. If it cannot be written, the invocation fails.
// Failed authentications are the exception: with a FailedAuthLog they are aggregated there
// (one record per source address and interval), so that no key is needed to grow the log.
#pragma once

#include "pipeline/failed_auth.hpp"
#include "pipeline/pipeline.hpp"

namespace airlock::audit {
class AuditLog;
}

namespace airlock::pipeline {

class AuditStage : public Stage {
 public:
  explicit AuditStage(audit::AuditLog& log, FailedAuthLog* failed_auth = nullptr)
      : log_(log), failed_auth_(failed_auth) {}
  std::string_view name() const override { return "audit"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

 private:
  audit::AuditLog& log_;
  FailedAuthLog* failed_auth_;
};

// The record of an invocation a killed daemon left running (written when the daemon starts).
Status record_aborted(audit::AuditLog& log, const std::string& id, const std::string& tool);

}  // namespace airlock::pipeline
