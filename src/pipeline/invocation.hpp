// One tool call as data flowing through the pipeline (docs/pipeline.md). Stages read what
// earlier stages put here, add their own part, or end the invocation with a typed error.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "policy/config.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::pipeline {

// Why an invocation ended early (or failed). `status` is "denied" when a policy refused it,
// "error" when something broke; `http_status` is what the API answers.
struct InvocationError {
  std::string kind;     // stable: "unauthenticated", "forbidden", "invalid_input", ...
  std::string message;  // one sentence for a human
  std::string status = "denied";
  int http_status = 403;
  std::string pointer;  // invalid_input: the JSON pointer of the bad field
};

// The most validator findings an answer lists and an audit record keeps: the code is at most
// the body limit, but a hostile blob could hold one finding per line.
inline constexpr std::size_t kMaxReportedFindings = 100;

struct Redaction {
  std::string detector;  // "email", "aws_access_key_id", ...
  std::string where;     // "input" or "output", with the JSON pointer ("output/summary")
};

struct Invocation {
  // The request.
  std::string id;
  std::string tool_name;
  std::optional<std::string> bearer_key;  // never logged or recorded
  std::string raw_body;                   // {"arguments": {...}} as received
  std::string peer;                       // the client's address ("" when unknown)
  nlohmann::json arguments = nlohmann::json::object();  // parsed by check_input
  std::chrono::system_clock::time_point received = std::chrono::system_clock::now();

  // What the stages work out.
  const policy::Principal* principal = nullptr;
  const policy::ToolConfig* tool = nullptr;
  sandbox::Limits limits;
  // The validator's findings, at most kMaxReportedFindings of validator_findings_total: a
  // code_rejected answer lists them (error.findings) and the audit record keeps them.
  nlohmann::json validator_findings = nlohmann::json::array();
  std::size_t validator_findings_total = 0;
  std::vector<Redaction> redactions;
  std::string input_sha256;            // of the arguments as received (canonical JSON)
  std::optional<std::string> redacted_input;
  std::optional<backend::RunRequest> request;  // what the execute stage ran (has credentials)
  std::optional<backend::RunResult> outcome;
  std::optional<nlohmann::json> output;
  std::string output_sha256;
  std::optional<std::string> redacted_output;
  std::string tool_log;                // the tool's stderr, capped
  // Airlock's own lines about the run (each egress denial), kept apart from what the tool
  // wrote: DLP scans the tool's log, never these, and they follow it in the stored log.
  std::vector<std::string> notes;
  std::vector<std::string> credentials_hmac;  // HMAC-SHA256 of each injected credential

  std::optional<InvocationError> error;
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

  // "ok" | "error" | "denied"
  std::string status() const { return error ? error->status : "ok"; }
};

// The API's answer for an invocation:
// {"id","tool","status","output","error":{"kind","message","pointer"?,"findings"?},"verdict","usage","redactions",
//  "egress","audit":{"index","leaf_hash"}}
nlohmann::json to_response(const Invocation& inv);

// The log kept with the invocation: the tool's stderr as DLP left it, then Airlock's notes.
std::string log_with_notes(const Invocation& inv);

}  // namespace airlock::pipeline
