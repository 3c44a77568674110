// Who may do what, decided in one place: the authenticate and authorize stages and the API's
// other endpoints (GET /v1/tools, ...) call the same Authenticator and access::decide. Then the
// risk tier (its limits; high and critical are not available yet).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "pipeline/authenticator.hpp"
#include "pipeline/stage.hpp"

namespace airlock::pipeline {

// Whether `actor` (acting for `subject`; either may be null, not both) may call the tool `tool`
// (access::decide): the decision, and when it refuses, the error (unknown_tool, forbidden,
// subject_required) whose message names the rule that decided.
struct InvokeDecision {
  access::Decision decision;
  std::optional<InvocationError> refusal;
};
// `scope`: an Airlock token's (none: no narrowing); a tool outside it is refused, rule "token scope".
InvokeDecision may_invoke(const policy::Config& config, const Actor* actor, const Subject* subject,
                          const std::string& tool, const std::vector<std::string>& scope = {});

// Who calls and for whom (pipeline/authenticator.hpp).
class AuthenticateStage : public Stage {
 public:
  explicit AuthenticateStage(std::shared_ptr<const Authenticator> authenticator)
      : authenticator_(std::move(authenticator)) {}
  std::string_view name() const override { return "authenticate"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

 private:
  std::shared_ptr<const Authenticator> authenticator_;
};

class AuthorizeStage : public Stage {
 public:
  std::string_view name() const override { return "authorize"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;
};

class TierStage : public Stage {
 public:
  std::string_view name() const override { return "tier"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;
};

}  // namespace airlock::pipeline
