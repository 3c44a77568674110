// One generation of the daemon's configuration: the config and the complete pipeline built
// from it. Stages hold references into their config and compiled state per tool, so a reload
// (SIGHUP) builds a new generation and publishes it whole; each invocation holds the one it
// started with until it ends, so it finishes under the config it began with.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/local.hpp"
#include "common/result.hpp"
#include "pipeline/failed_auth.hpp"
#include "pipeline/pipeline.hpp"
#include "policy/config.hpp"

namespace airlock::audit {
class AuditLog;
}

namespace airlock::server {

struct Generation {
  std::shared_ptr<const policy::Config> config;
  pipeline::Pipeline pipeline;
};

// The current generation: one atomic load per request.
using GenerationSlot = std::atomic<std::shared_ptr<const Generation>>;

// What every generation's pipeline shares with the daemon.
struct PipelineServices {
  audit::AuditLog* audit = nullptr;  // null: no audit stage (`airlock serve --check`)
  pipeline::FailedAuthLog* failed_auth = nullptr;
  backend::Backend* backend = nullptr;  // runs low and medium tools; null: `serve --check`
  std::string runner_dir;
  pipeline::StageObserver* observer = nullptr;
  // Called for each invocation once it is authenticated (the daemon's invocation store).
  std::function<void(const pipeline::Invocation&)> record_start;
};

// Builds every stage from `config` (compiling schemas, the DLP scanner, the code validator).
Result<std::shared_ptr<const Generation>> build_generation(
    std::shared_ptr<const policy::Config> config, const PipelineServices& services);

}  // namespace airlock::server
