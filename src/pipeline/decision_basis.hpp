// What a call's decisions rested on, kept while it waits for a human approval and compared when
// it resumes (docs/approvals.md): a reload that changed none of it (a new tool, a comment,
// another principal) lets the approved call run; one that changed any of it ends the call with
// config_changed, naming what changed.
//
// The basis is a JSON object of parts, each the SHA-256 (hex) of its RFC 8785 canonical JSON:
//   tool         the tool's entry as written (tools[] by name; an MCP server's tool: the
//                server's entry and the tool's pin)
//   tier         its risk and that tier's entry (tiers.<risk>: limits and backend)
//   access       what the access decision for (agent, user, invoke, tool) rests on: its
//                outcome and rule, the agent's principals[] entry, the roles bound to the
//                user and their entries, the user's issuer entry
//   credentials  the credentialServers[] entries the tool's credentials name
//   dlp          the dlp entry (the policy DLP scanned the input with)
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "pipeline/invocation.hpp"

namespace airlock::pipeline {

// The basis of `inv` (its tool, agent and user) under `config`.
Result<nlohmann::json> decision_basis(const policy::Config& config, const Invocation& inv);

// The parts of `kept` that differ in `now` (a part missing on either side differs), in the
// words of a message: "the tool's definition", "the access rules that let it through", ...
std::vector<std::string> changed_parts(const nlohmann::json& kept, const nlohmann::json& now);

// The SHA-256 (hex) of the whole basis's canonical JSON: one value to show and record.
Result<std::string> basis_sha256(const nlohmann::json& basis);

}  // namespace airlock::pipeline
