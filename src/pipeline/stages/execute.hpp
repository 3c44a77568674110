// Runs the tool on the backend of its tier and reads its JSON result.
#pragma once

#include <map>
#include <memory>

#include "backend/backend.hpp"
#include "pipeline/mcp_tool_caller.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/stages/check_input.hpp"

namespace airlock::pipeline {

struct ExecuteOptions {
  std::string runner_dir;  // holds airlock_runner.py (mounted read-only at /airlock)
  std::map<policy::Risk, backend::Backend*> backends;  // the backend each tier runs on
  std::map<policy::Risk, std::string> unavailable;     // why a tier without one has none
  std::size_t max_log_bytes = 64 * 1024;
  McpToolCaller* mcp = nullptr;  // for tools an MCP server provides (ToolConfig::mcp)
};

// The local tiers (low, medium) on `backend`; high and critical run where the config says
// (PipelineDeps::tier_backends).
std::map<policy::Risk, backend::Backend*> runnable_tiers_on(backend::Backend& backend);

// Where a backend that chooses among nodes (Kubernetes) runs a tool's pod, or an MCP server's
// (tools[].kubernetes, mcpServers[].kubernetes).
backend::Placement placement_for(const policy::ToolPlacement& placement);

class ExecuteStage : public Stage {
 public:
  static Result<std::unique_ptr<ExecuteStage>> create(const policy::Config& config, ExecuteOptions options);
  std::string_view name() const override { return "execute"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

  // The request a call of `tool` runs as (exposed for tests).
  backend::RunRequest request_for(const Invocation& inv, const policy::ToolConfig& tool) const;

 private:
  StageResult call_mcp_server(Invocation& inv, const policy::ToolConfig& tool) const;
  std::string mcp_tier_refusal(const policy::ToolConfig& tool, policy::Risk server_risk) const;
  StageResult failed_run(Invocation& inv, const policy::ToolConfig& tool, const std::string& rule_set,
                         bool stopping) const;

  ExecuteOptions options_;
  std::map<std::string, std::shared_ptr<const JsonSchema>> output_schemas_;
  std::size_t max_depth_ = kDefaultMaxJsonDepth;  // of the tool's output
};

// Writes the embedded runner into `dir` (world-readable, for the sandbox user).
Status install_runner(const std::string& dir);

}  // namespace airlock::pipeline
