// Checks the request body: JSON nested at most server.maxJsonDepth deep, {"arguments": {...}}
// with an optional "reason" (the agent's words to approvers, at most kMaxReasonBytes),
// the arguments against the tool's input JSON Schema (policy/json_schema.hpp, compiled when
// the configuration was loaded).
#pragma once

#include <map>
#include <memory>

#include "pipeline/pipeline.hpp"
#include "policy/json_schema.hpp"

namespace airlock::pipeline {

using policy::JsonSchema;

inline constexpr std::size_t kMaxReasonBytes = 2048;

// The tool's compiled schema, or (a configuration built in code) compiled now.
Result<std::shared_ptr<const JsonSchema>> compiled_schema(
    const std::shared_ptr<const JsonSchema>& compiled, const nlohmann::json& schema,
    const std::string& what);

class CheckInputStage : public Stage {
 public:
  static Result<std::unique_ptr<CheckInputStage>> create(const policy::Config& config);
  std::string_view name() const override { return "check_input"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

 private:
  std::map<std::string, std::shared_ptr<const JsonSchema>> schemas_;  // by tool name
  std::size_t max_depth_ = kDefaultMaxJsonDepth;
};

}  // namespace airlock::pipeline
