// Stages that look at content: the static validation of model-written code (python-code
// tools) and DLP on the arguments going in and the result coming out.
#pragma once

#include <optional>

#include <map>
#include <memory>

#include "dlp/scanner.hpp"
#include "pipeline/pipeline.hpp"
#include "validate/validate.hpp"

namespace airlock::pipeline {

class ValidateCodeStage : public Stage {
 public:
  // Builds each python-code tool's policy and warms the validator for it.
  static Result<std::unique_ptr<ValidateCodeStage>> create(const policy::Config& config);
  std::string_view name() const override { return "validate_code"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

 private:
  validate::Validator validator_;
  std::map<std::string, validate::Policy> policies_;  // by tool name
};

// The DLP policy's scanner, shared by the input and output stages.
Result<std::shared_ptr<const dlp::Scanner>> make_scanner(const policy::Config& config);

class ScanStage : public Stage {
 public:
  enum class Direction { input, output };
  ScanStage(std::shared_ptr<const dlp::Scanner> scanner, Direction direction)
      : scanner_(std::move(scanner)), direction_(direction) {}
  std::string_view name() const override { return direction_ == Direction::input ? "scan_input" : "scan_output"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

 private:
  std::optional<StageResult> scan_reason(Invocation& inv) const;
  std::optional<StageResult> scan_code(Invocation& inv, const std::string& code) const;
  StageResult scan(Invocation& inv, bool input) const;  // the log, the reason, then the value

  std::shared_ptr<const dlp::Scanner> scanner_;
  Direction direction_;
};

}  // namespace airlock::pipeline
