// Stages that decide who may do what: authenticate (Bearer API key), authorize (principal
// may call tool), and the risk tier (limits; high and critical are not available yet).
#pragma once

#include "pipeline/pipeline.hpp"

namespace airlock::pipeline {

class AuthenticateStage : public Stage {
 public:
  explicit AuthenticateStage(const policy::Config& config) : config_(config) {}
  std::string_view name() const override { return "authenticate"; }
  std::optional<InvocationError> run(Invocation& inv) override;

 private:
  const policy::Config& config_;
};

class AuthorizeStage : public Stage {
 public:
  explicit AuthorizeStage(const policy::Config& config) : config_(config) {}
  std::string_view name() const override { return "authorize"; }
  std::optional<InvocationError> run(Invocation& inv) override;

 private:
  const policy::Config& config_;
};

class TierStage : public Stage {
 public:
  explicit TierStage(const policy::Config& config) : config_(config) {}
  std::string_view name() const override { return "tier"; }
  std::optional<InvocationError> run(Invocation& inv) override;

 private:
  const policy::Config& config_;
};

}  // namespace airlock::pipeline
