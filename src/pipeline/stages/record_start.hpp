// Marks an authenticated invocation as started, right after authentication: the daemon keeps
// a row per invocation for recovery and `GET /v1/invocations/{id}`. Requests without a valid
// key never reach it, so they cannot grow the daemon's state (issue #13); their failed
// authentication is audited in aggregate (pipeline/failed_auth.hpp).
#pragma once

#include <functional>
#include <utility>

#include "pipeline/pipeline.hpp"

namespace airlock::pipeline {

class RecordStartStage : public Stage {
 public:
  explicit RecordStartStage(std::function<void(const Invocation&)> record)
      : record_(std::move(record)) {}
  std::string_view name() const override { return "record_start"; }
  StageResult run(Invocation& inv, StageContext&) override {
    record_(inv);
    return StageResult::next();
  }

 private:
  std::function<void(const Invocation&)> record_;
};

}  // namespace airlock::pipeline
