// Code cells in a session (POST /v1/sessions/{id}/code, docs/sessions.md "Code"): model-written
// Python run by a persistent interpreter inside the session (its variables, imports and files
// kept between cells). Each cell is an invocation of its own, as an exec is: the owner's quota
// admits it, the template's validation policy checks it before it runs, DLP looks at it (a
// finding is refused or reported, never rewritten), and what comes back (output, the last
// expression's value, the error, figures) passes the session's credential redaction and DLP
// before one airlock.invocation/v1 record is written and the answer given.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "server/sessions/session_exec.hpp"

namespace airlock::server {

struct CodeRequest {
  std::string code;
  std::optional<std::chrono::milliseconds> timeout;  // the template's exec timeout otherwise
};

// {code, timeout?: "30s" | ms}; an error names the field (invalid_input).
Result<CodeRequest> parse_code_request(const std::string& body);

// Runs one cell and returns its answer: {invocation_id, verdict (ok, exception, timeout,
// interpreter_exited, output_limit, dlp_blocked), stdout, stderr, result?, error?, images,
// interpreter: {state: new | kept | lost}, usage, redactions, findings, audit}. Refusals before
// anything ran come back as errors: code_rejected (the validator; error.findings), dlp_blocked,
// interpreter_busy (a cell is running), quota_exceeded:<quota>, session_ended, session_paused.
Result<nlohmann::json> run_code_cell(const ExecRun::Context& context, const CodeRequest& request);

// The interpreter's command: python3 with the driver (airlock_interpreter.py) and the modules
// the template preloads. Run on the session's first cell, or ahead in each ready sandbox of the
// template's warm pool (interpreter.start: ahead).
sandbox::SessionExec interpreter_command(const policy::SessionTemplate& t);

// Interrupts the running cell (KeyboardInterrupt in it; the interpreter and its state stay):
// true when a cell was running.
bool interrupt_code_cell(LiveSession& session);

}  // namespace airlock::server
