// One tool call as data flowing through the pipeline (docs/pipeline.md). Stages read what
// earlier stages put here, add their own part, or end the invocation with a typed error.
//
// An Invocation holds no pointers into the configuration: the tool and the caller are named,
// and the configuration's version is kept, so that a suspended invocation can be persisted
// (invocation_state.hpp) and resumed later, after a reload or a restart.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "access/decide.hpp"
#include "backend/backend.hpp"
#include "creds/lease.hpp"
#include "pipeline/error.hpp"
#include "pipeline/invocation_control.hpp"
#include "pipeline/mcp_tool_caller.hpp"
#include "policy/config.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"
#include "validate/validate.hpp"

namespace airlock::pipeline {

// The most validator findings an answer lists and an audit record keeps: the code is at most
// the body limit, but a hostile blob could hold one finding per line.
inline constexpr std::size_t kMaxReportedFindings = 100;

class QuotaHold;  // quota_book.hpp

struct Redaction {
  std::string detector;  // "email", "aws_access_key_id", ...
  std::string where;     // "input" or "output"
};

// A DLP finding in model-written code that ran as written (spec.code.onFinding: report).
struct CodeFinding {
  std::string detector;
  std::size_t line = 0;  // 1-based, in the code
};

// Who makes the call (the agent: a principal of the configuration, by name) and on whose
// behalf (the user of a verified token), as the access decision sees them.
using Actor = access::Actor;
using Subject = access::Subject;

// Why an invocation waits (a human approval, say) and what the suspending stage needs to
// go on; it resumes at the stage after the one that suspended.
struct Suspension {
  std::string stage;
  std::string reason;                          // one sentence for a human
  nlohmann::json data = nlohmann::json::object();  // the stage's own, persisted with it
};

struct Invocation {
  // The request.
  std::string id;
  std::string tool_name;
  // Lower-case names. They carry credentials: never persisted, logged or recorded.
  std::map<std::string, std::string> headers;
  std::optional<policy::ClientCertificate> client_certificate;  // verified by TLS; not persisted
  std::string raw_body;  // {"arguments": {...}} as received
  std::string peer;      // the client's address ("" when unknown)
  // Set by a transport that can cancel the call or follow its progress (MCP); not persisted.
  std::shared_ptr<InvocationControl> control;
  nlohmann::json arguments = nlohmann::json::object();  // parsed by check_input
  // The agent's stated reason for the call ("reason" beside "arguments", MCP's
  // _meta["airlock/reason"]): shown to approvers, DLP-redacted like the arguments. "": none.
  std::string reason;
  std::chrono::system_clock::time_point received = std::chrono::system_clock::now();

  // Where it is in the pipeline.
  std::string config_version;  // of the configuration it started under
  // What its decisions rested on, part by part (pipeline/decision_basis.hpp), set when it is
  // suspended and compared when it resumes; empty: compare config_version (older state).
  nlohmann::json decision_basis = nlohmann::json::object();
  std::size_t cursor = 0;      // the next stage to run
  std::optional<Suspension> suspended;

  // What the stages work out.
  std::optional<Actor> actor;      // set by authenticate
  std::optional<Subject> subject;  // the user it acts for, when one is given
  std::string subject_jti_sha256;  // of the user token's jti: the audit record's, never the token
  std::vector<std::string> token_scope;  // an Airlock token's scope ([]: not restricted)
  std::string access_rule;         // what allowed it (authorize): "principal agent tools", ...
  // The user's token as received, for a credential exchanged on their behalf. Like the
  // headers: never persisted, logged or recorded.
  std::string user_token;
  sandbox::Limits limits;
  // At most kMaxReportedFindings of validator_findings_total, each message bounded: a
  // code_rejected answer lists them (error.findings) and the audit record keeps them.
  std::vector<validate::Finding> validator_findings;
  std::size_t validator_findings_total = 0;
  std::vector<Redaction> redactions;
  std::vector<CodeFinding> code_findings;  // answered as dlp_findings
  std::optional<std::string> redacted_input;
  // The call's credentials (the credentials stage). Values live in memory for the run only:
  // never persisted, recorded, logged or answered; wiped when the leases are revoked.
  struct CredentialLease {
    creds::Lease lease;
    std::string hmac_sha256;  // of the value (the audit log's credential key)
  };
  std::vector<CredentialLease> credential_leases;
  std::vector<backend::Credential> credentials;    // the variables the run gets
  std::vector<egress::HeaderInjection> injections;  // headers the egress proxy sets
  // A tool of an MCP server with credentials: leases them for this call's owner should its
  // instance start now (the credentials stage sets it); and the values of the instance's
  // credentials the call ran with, redacted from what leaves like the call's own.
  McpCredentialLeaser lease_server_credentials;
  std::vector<std::string> server_credential_values;
  std::optional<backend::RunRequest> request;  // what the execute stage ran
  std::optional<backend::RunResult> outcome;
  // A tool of an MCP server: what the call used of its server's sandbox (McpToolCall::usage).
  std::optional<sandbox::Usage> server_usage;
  std::optional<nlohmann::json> output;
  std::optional<std::string> redacted_output;
  // An MCP server's result as it came, before DLP (the audit record's output digest; a
  // sandbox's is its stdout's), and whether it said isError: the call then ends tool_error
  // once the result has been scanned, its output kept (Pipeline::run).
  struct ResultDigest {
    std::string sha256;  // hex
    std::uint64_t bytes = 0;
  };
  std::optional<ResultDigest> server_result;
  bool tool_reported_error = false;
  // A python-code cell that raised: the runner's report is the output until the output scan
  // has redacted it (or blocked it); the call then ends with this error, the report as its
  // details (Pipeline::end_with_reported_error).
  std::optional<InvocationError> reported_failure;
  // What error.details answers: the report above, or the egress denials of a failed run.
  nlohmann::json error_details;
  std::string tool_log;  // the tool's stderr, capped
  // Airlock's own lines about the run (each egress denial), kept apart from what the tool
  // wrote: DLP scans the tool's log, never these, and they follow it in the stored log.
  std::vector<std::string> notes;

  std::optional<InvocationError> error;
  // The quota stage's admission (pipeline/quotas/quota_book.hpp): the call counts against its
  // principal's and user's `concurrent` until this is reset. Not persisted: a call suspended
  // for a human approval holds no place meanwhile.
  std::shared_ptr<QuotaHold> quota_hold;
  struct StageTime {
    std::string stage;
    double ms;
  };
  std::vector<StageTime> stage_times;
  struct AuditRef {
    std::uint64_t index = 0;
    std::string leaf_hash;
  };
  std::optional<AuditRef> audit;

  // "ok" | "error" | "denied" | "suspended"
  std::string status() const {
    if (error) return std::string(error->status());
    return suspended ? "suspended" : "ok";
  }
  std::string principal_name() const { return actor ? actor->principal : std::string(); }
  // What the call used: its sandbox run's, or its MCP server's during the call; null if neither.
  const sandbox::Usage* usage() const {
    if (outcome) return &outcome->usage;
    return server_usage ? &*server_usage : nullptr;
  }
};

// The log kept with the invocation: the tool's stderr as DLP left it, then Airlock's notes.
std::string log_with_notes(const Invocation& inv);

}  // namespace airlock::pipeline
