// A suspended invocation as JSON, to be kept while it waits (a human approval may take
// hours, and the daemon may restart meanwhile) and resumed from its cursor.
//
// What is kept: the request (not its headers: they carry credentials), where it is, and
// what the stages before the cursor decided. An invocation is persisted only before it runs:
// one with a sandbox request or outcome is refused, since a run cannot be resumed.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "pipeline/invocation.hpp"

namespace airlock::pipeline {

Result<nlohmann::json> persist(const Invocation& inv);
// Refuses a document that is not one persist() wrote (a field missing or of the wrong type).
Result<Invocation> restore(const nlohmann::json& state);

}  // namespace airlock::pipeline
