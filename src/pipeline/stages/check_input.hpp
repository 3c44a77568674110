// Checks the arguments against the tool's input JSON Schema (valijson; drafts 4, 6 and 7).
// Schemas are compiled once, when the pipeline is built.
#pragma once

#include <map>
#include <memory>

#include "pipeline/pipeline.hpp"

namespace airlock::pipeline {

class JsonSchema {
 public:
  static Result<std::shared_ptr<JsonSchema>> compile(const nlohmann::json& schema);
  // nullopt when `value` conforms; otherwise the JSON pointer of the first bad field and why.
  std::optional<std::pair<std::string, std::string>> check(const nlohmann::json& value) const;

  struct Impl;
  std::shared_ptr<Impl> impl;
};

class CheckInputStage : public Stage {
 public:
  static Result<std::unique_ptr<CheckInputStage>> create(const policy::Config& config);
  std::string_view name() const override { return "check_input"; }
  std::optional<InvocationError> run(Invocation& inv) override;

 private:
  std::map<std::string, std::shared_ptr<JsonSchema>> schemas_;  // by tool name
};

}  // namespace airlock::pipeline
