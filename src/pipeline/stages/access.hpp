// Who may do what, decided in one place: the authenticate and authorize stages and the API's
// other endpoints (GET /v1/tools, ...) call the same functions. Then the risk tier (its
// limits; high and critical are not available yet).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>

#include "pipeline/stage.hpp"

namespace airlock::pipeline {

using Headers = std::map<std::string, std::string>;  // lower-case names

// The token of an `Authorization: Bearer <token>` header, if there is one.
std::optional<std::string> bearer_token(const Headers& headers);

// The caller the request's credential names, or why it names no one (unauthenticated).
std::variant<Actor, InvocationError> authenticate(const policy::Config& config, const Headers& headers);

// Whether `actor` (acting for `subject`, if not null) may call the tool `tool`
// (access::decide): the decision, and when it refuses, the error (unknown_tool, forbidden,
// subject_required) whose message names the rule that decided.
struct InvokeDecision {
  access::Decision decision;
  std::optional<InvocationError> refusal;
};
InvokeDecision may_invoke(const policy::Config& config, const Actor& actor, const Subject* subject,
                          const std::string& tool);

class AuthenticateStage : public Stage {
 public:
  std::string_view name() const override { return "authenticate"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;
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
