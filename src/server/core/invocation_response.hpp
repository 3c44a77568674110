// What the HTTP API makes of an invocation: its JSON answer and its status code. The
// pipeline's outcome is protocol-free; another front (MCP) maps the same outcome its own way.
#pragma once

#include <nlohmann/json.hpp>

#include "pipeline/invocation.hpp"

namespace airlock::server {

// {"id","tool","status","actor":{"principal"}|null,"subject":{"issuer","sub"}|null,"output","error":{"kind","message","pointer"?,"findings"?,
//  "findings_total"?},"verdict","usage","redactions","egress","audit":{"index","leaf_hash"}}
nlohmann::json to_response(const pipeline::Invocation& inv);

// The status an answer with this error has: 4xx for refusals, 500 when Airlock failed, and
// 200 when the tool's run failed (the call itself was carried out; status says "error").
int http_status(const pipeline::InvocationError& error);

// An invocation's status code: 200, or its error's; 202 while it is suspended.
int http_status(const pipeline::Invocation& inv);

}  // namespace airlock::server
