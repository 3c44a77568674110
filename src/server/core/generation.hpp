// One generation of the daemon's configuration: the config and the complete pipeline built
// from it. A reload (SIGHUP) builds a new generation and publishes it whole; each invocation
// holds the one it started with until it ends, so it finishes under the config it began with.
#pragma once

#include <atomic>
#include <memory>

#include "common/result.hpp"
#include "pipeline/build_default.hpp"
#include "policy/config.hpp"

namespace airlock::server {

struct Generation {
  std::shared_ptr<const policy::Config> config;
  std::unique_ptr<const pipeline::Pipeline> pipeline;  // runs under `config`
  std::shared_ptr<const pipeline::Authenticator> authenticator;  // the pipeline's, for the API
};

// The current generation: one atomic load per request.
using GenerationSlot = std::atomic<std::shared_ptr<const Generation>>;

// The default pipeline (pipeline/build_default.hpp) for `config`.
Result<std::shared_ptr<const Generation>> build_generation(
    std::shared_ptr<const policy::Config> config, const pipeline::PipelineDeps& deps);

}  // namespace airlock::server
