// The contract between the pipeline and its stages (docs/pipeline.md).
//
// A stage reads the invocation, adds its part, and answers one of: go on to the next stage,
// end the invocation with a typed error, or suspend it until something outside (a human
// approval) lets it go on. A stage may also register a finalizer: work that runs when the
// pipeline run ends, however it ends (credentials revoked even when the tool timed out).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/result.hpp"
#include "pipeline/invocation.hpp"
#include "policy/config.hpp"

namespace airlock::pipeline {

class StageResult {
 public:
  static StageResult next() { return StageResult(); }
  static StageResult suspend(std::string reason, nlohmann::json data = nlohmann::json::object()) {
    StageResult r;
    r.outcome_ = Suspend{std::move(reason), std::move(data)};
    return r;
  }
  StageResult(InvocationError error) : outcome_(std::move(error)) {}  // NOLINT: `return deny(...)`

  bool proceeds() const { return std::holds_alternative<std::monostate>(outcome_); }
  const InvocationError* error() const { return std::get_if<InvocationError>(&outcome_); }
  struct Suspend {
    std::string reason;
    nlohmann::json data;
  };
  const Suspend* suspension() const { return std::get_if<Suspend>(&outcome_); }

 private:
  StageResult() = default;
  std::variant<std::monostate, InvocationError, Suspend> outcome_;
};

// Work registered by a stage, run when the pipeline run ends (in reverse order of
// registration, before the final audit stage). A failure fails the invocation.
struct Finalizer {
  std::string name;  // "revoke credentials"
  std::function<Status(Invocation&)> run;
};

// What a stage sees besides the invocation during one run: the configuration the run is
// under, its tool and caller looked up there, and where finalizers are registered. Valid
// for the run only; nothing from it may be kept in the Invocation.
class StageContext {
 public:
  explicit StageContext(const policy::Config& config) : config_(config) {}
  const policy::Config& config() const { return config_; }
  // The invocation's tool in this configuration, or null (unknown tool).
  const policy::ToolConfig* tool(const Invocation& inv) const { return config_.find_tool(inv.tool_name); }
  // The invocation's caller in this configuration, or null (not authenticated yet).
  const policy::Principal* principal(const Invocation& inv) const {
    return inv.actor ? config_.find_principal(inv.actor->principal) : nullptr;
  }
  void defer(std::string name, std::function<Status(Invocation&)> work) {
    finalizers_.push_back({std::move(name), std::move(work)});
  }
  std::vector<Finalizer> take_finalizers() { return std::exchange(finalizers_, {}); }

 private:
  const policy::Config& config_;
  std::vector<Finalizer> finalizers_;
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual std::string_view name() const = 0;
  virtual StageResult run(Invocation& inv, StageContext& ctx) = 0;
};

}  // namespace airlock::pipeline
