// Marks an authenticated invocation as started, right after authentication: the daemon keeps
// a row per invocation for recovery and `GET /v1/invocations/{id}`. Requests without a valid
// key never reach it, so they cannot grow the daemon's state (issue #13); their failed
// authentication is audited in aggregate (pipeline/failed_auth.hpp). A row that cannot be
// written ends the call (storage_unavailable): nothing runs unrecorded.
#pragma once

#include <functional>
#include <utility>

#include "pipeline/pipeline.hpp"

namespace airlock::pipeline {

class RecordStartStage : public Stage {
 public:
  explicit RecordStartStage(std::function<Status(const Invocation&)> record)
      : record_(std::move(record)) {}
  std::string_view name() const override { return "record_start"; }
  StageResult run(Invocation& inv, StageContext&) override {
    if (Status recorded = record_(inv); !recorded)
      return fail(ErrorKind::storage_unavailable,
                  "the invocation could not be recorded in the state database, so it did not run: " +
                      recorded.error().message);
    return StageResult::next();
  }

 private:
  std::function<Status(const Invocation&)> record_;
};

}  // namespace airlock::pipeline
