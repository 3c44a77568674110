// How an invocation ends when it does not succeed: a typed error. The kind's name is part of
// the API (error.kind in every answer, the audit record, the denial metric), so kinds are
// only ever added. What a protocol makes of an error (an HTTP status, an MCP error) is the
// protocol's business: see server/invocation_response.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::pipeline {

enum class ErrorKind {
  // Refusals (status "denied").
  unauthenticated,    // no credential, or one that is not valid
  subject_required,   // the tool acts only on behalf of a user, and none was given
  forbidden,          // the caller may not call this tool
  unknown_tool,       // no tool of that name
  invalid_input,      // the body or the arguments (error.pointer names the field)
  code_rejected,      // the static validator refused model-written code (error.findings)
  dlp_blocked,        // the arguments or the result hold data the DLP policy blocks
  tier_unavailable,   // the tool's risk tier cannot run here
  config_changed,     // a suspended invocation resumed under another configuration
  credential_denied,  // a credential the tool needs cannot be given for this call (scopes, no user)
  tool_disabled,      // an MCP server's tool changed since it was pinned; an admin must approve it
  approval_denied,    // a critical call an approver denied (or whose approval could not hold)
  approval_expired,   // a critical call nobody decided before its approval's timeout
  quota_exceeded,     // the caller's or the user's quota (error.quota names it; retry_after)
  // Failures of the tool's run (status "error").
  timeout,
  cpu_time_limit,
  memory_limit,
  output_limit,
  seccomp_violation,
  tool_crashed,       // exited non-zero or was killed by a signal
  invalid_output,     // its stdout was not one JSON object matching its outputSchema
  stopped,            // the daemon stopped it while shutting down
  cancelled,          // the client cancelled it (MCP notifications/cancelled)
  tool_server_failed, // the MCP server providing the tool could not start, crashed or broke protocol
  tool_error,         // the tool answered with an error of its own (an MCP result with isError)
  code_error,         // python-code raised: error.details has its name, value, line and traceback
  egress_denied,      // it failed after the egress proxy refused a connection (error.details.egress)
  // Failures of Airlock itself (status "error").
  sandbox_setup,
  audit_failed,
  storage_unavailable,     // the audit log's or the state database cannot be reached: nothing ran, or no result
  credential_unavailable,  // a credential could not be made (its server, the token service...)
  internal,
};

// The stable name: "unauthenticated", "invalid_input", ...
std::string_view kind_name(ErrorKind kind);
// The kind of a stable name (restoring a persisted invocation); nullopt for an unknown name.
std::optional<ErrorKind> kind_from_name(std::string_view name);

// "denied": a policy refused the call. "error": something broke, the tool or Airlock.
enum class ErrorClass { denied, error };

struct InvocationError {
  ErrorKind kind = ErrorKind::internal;
  std::string message;  // one sentence for a human
  ErrorClass error_class = ErrorClass::error;
  std::string pointer;  // invalid_input: the JSON pointer of the bad field
  // quota_exceeded: the quota ("concurrent", "rate", "cpuSeconds") and when to try again.
  std::string quota;
  std::uint32_t retry_after_seconds = 0;

  std::string_view kind_name() const { return pipeline::kind_name(kind); }
  std::string_view status() const { return error_class == ErrorClass::denied ? "denied" : "error"; }
};

// A policy refused the call.
inline InvocationError deny(ErrorKind kind, std::string message, std::string pointer = {}) {
  return InvocationError{kind, std::move(message), ErrorClass::denied, std::move(pointer), {}, 0};
}
// Something broke: the tool's run, or Airlock.
inline InvocationError fail(ErrorKind kind, std::string message) {
  return InvocationError{kind, std::move(message), ErrorClass::error, {}, {}, 0};
}

}  // namespace airlock::pipeline
