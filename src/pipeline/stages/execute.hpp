// Runs the tool in the local sandbox (backend::run_local) and reads its JSON result.
#pragma once

#include <map>
#include <memory>

#include "backend/local.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/stages/check_input.hpp"

namespace airlock::pipeline {

struct ExecuteOptions {
  std::string runner_dir;  // holds airlock_runner.py (bound read-only at /airlock)
  // The daemon's own endpoints, filled in once it has bound them (before it serves).
  std::shared_ptr<std::vector<egress::Endpoint>> forbidden = std::make_shared<std::vector<egress::Endpoint>>();
  backend::RunningSandboxes* registry = nullptr;
  std::size_t max_log_bytes = 64 * 1024;
};

class ExecuteStage : public Stage {
 public:
  static Result<std::unique_ptr<ExecuteStage>> create(const policy::Config& config, ExecuteOptions options);
  std::string_view name() const override { return "execute"; }
  std::optional<InvocationError> run(Invocation& inv) override;

  // The Spec a tool call runs as (exposed for tests).
  sandbox::Spec spec_for(const Invocation& inv) const;

 private:
  ExecuteOptions options_;
  std::map<std::string, std::shared_ptr<const JsonSchema>> output_schemas_;
  std::size_t max_depth_ = kDefaultMaxJsonDepth;  // of the tool's output
};

// Writes the embedded runner into `dir` (world-readable, for the sandbox user).
Status install_runner(const std::string& dir);

}  // namespace airlock::pipeline
