// A call that waits for a person, under revision 2026-07-28, which has no tasks: it answers
// `resultType: "input_required"` (the revision's multi-round-trip requests) with a
// requestState naming the invocation. The client retries tools/call with it; each retry
// waits up to kApprovalRetryWait for the call's end and answers its result, or input_required
// again. A client that opens URLs for its user (clientCapabilities.elicitation.url) is asked
// first, as a URL-mode elicitation, to show where an approver decides: the console's page of
// the approval (docs/mcp-server.md, "Approvals under 2026-07-28").
//
// The requestState is not a credential: a retry is answered only to the caller that owns the
// invocation (as GET /v1/invocations/{id}), so a forged or altered state reaches nothing the
// caller could not read anyway; it is refused (-32602) unless it names one of theirs.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/config.hpp"

namespace airlock::server {

inline constexpr std::chrono::seconds kApprovalRetryWait{20};
inline constexpr const char* kApprovalInputKey = "approval";  // its key in inputRequests

// The requestState of invocation `id`, and the invocation a requestState names (nullopt: not
// one this server gives).
std::string approval_request_state(const std::string& invocation_id);
std::optional<std::string> invocation_of_request_state(const nlohmann::json& state);

// Whether client capabilities declare URL-mode elicitation (`elicitation.url`).
bool declares_url_elicitation(const nlohmann::json& capabilities);
// Whether the request's client declared URL-mode elicitation (2026-07-28 carries the client's
// capabilities in every request's _meta).
bool elicits_urls(const nlohmann::json& params);
// Whether a retry's inputResponses say the user declined (or dismissed) the elicitation.
bool declined_elicitation(const nlohmann::json& params);

// The console's page of approval `approval_id`, under server.mcp.resource's origin when set,
// else the request's Host (else the listen address).
std::string approval_page_url(const policy::Config& config, const std::map<std::string, std::string>& headers,
                              const std::string& approval_id);

// The params of a URL-mode elicitation/create showing `page_url`, where an approver decides on
// the call of the stored row: mode, message and url (a revision adds what it wants: 2025-11-25
// an elicitationId).
nlohmann::json approval_page_elicitation(const nlohmann::json& stored, const std::string& page_url);

// The input_required result for an invocation's stored row that waits (its approval, when it
// has one, named in the elicitation). `page_url` empty: the requestState alone.
nlohmann::json approval_input_required(const nlohmann::json& stored, const std::string& page_url);

}  // namespace airlock::server
