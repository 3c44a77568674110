// One exec in a session (POST /v1/sessions/{id}/exec): an invocation of its own. The caller's
// quota admits it (`concurrent`, `rate`; its CPU is charged to `cpuSeconds`), DLP scans what
// goes in (the command, stdin, the environment) and, as it streams, what comes out (a secret
// split across two chunks is still caught: one stream scan per output), and one
// airlock.invocation/v1 record naming the session is written before the exit is told.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "pipeline/authenticator.hpp"
#include "pipeline/quotas/quota_book.hpp"
#include "server/core/generation.hpp"
#include "server/sessions/session_service.hpp"

namespace airlock::server {

struct ExecRequest {
  std::vector<std::string> argv;  // a "shell line" is ["/bin/sh", "-c", line]
  std::string stdin_bytes;
  std::map<std::string, std::string> env;
  std::string cwd;  // absolute inside the session; "": its work dir
  std::optional<std::chrono::milliseconds> timeout;
};

// A session request's argument that is not valid: invalid_input saying what.
Error invalid_input(const std::string& message);

// Admits one exec (or terminal) of the session's owner under `config`'s quotas (`concurrent`,
// `rate`): the hold is its place until dropped. Codes: quota_exceeded:<quota>,
// storage_unavailable. Null `quotas`: no quotas (a null hold).
Result<std::shared_ptr<pipeline::QuotaHold>> admit_session_work(pipeline::QuotaBook* quotas, const policy::Config& config,
                                                                const SessionOwner& owner);

// {command: [argv] | "shell line", stdin?, env?, cwd?, timeout?: "30s" | ms}; an error names
// the field (code invalid_input).
Result<ExecRequest> parse_exec_request(const std::string& body);

// Where an exec's output goes as it comes: Server-Sent Events, or one JSON answer.
class ExecSink {
 public:
  virtual ~ExecSink() = default;
  // DLP-final text of "stdout" or "stderr".
  virtual void output(std::string_view stream, const std::string& text) = 0;
  virtual void finished(const nlohmann::json& exit) = 0;
};

class ExecRun {
 public:
  struct Context {
    std::shared_ptr<LiveSession> session;
    pipeline::Caller caller;
    std::shared_ptr<const Generation> generation;  // its config's quotas and DLP policy
    std::shared_ptr<pipeline::QuotaBook> quotas;   // null: no quotas
    audit::AuditLog* audit = nullptr;
    std::string invocation_id;
  };
  // Admits and starts the exec, or says why nothing ran (codes: quota_exceeded:<quota>,
  // dlp_blocked, invalid_input, exec_failed,
  // session_ended, storage_unavailable).
  static Result<std::unique_ptr<ExecRun>> start(Context context, ExecRequest request);
  ~ExecRun();
  // Reads its output to its end (or its timeout, or its output limit), writes its audit record,
  // and returns its exit, also given to `sink`.
  nlohmann::json pump(ExecSink& sink);

  struct State;

 private:
  explicit ExecRun(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// An exec run to its end as one answer: its exit with "stdout" and "stderr" (each as DLP left
// it) beside it. For a caller that takes no stream (Accept: application/json, the MCP server's
// session_exec). Blocks. Refusals before anything ran are ExecRun::start's.
Result<nlohmann::json> run_exec_whole(ExecRun::Context context, ExecRequest request);

}  // namespace airlock::server
