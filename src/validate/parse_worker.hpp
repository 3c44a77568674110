// The warm parse worker: one sandboxed interpreter running `ast_dump.py serve`, answering
// parse requests one after another. It is started on first use, restarted after a crash or a
// timeout (the client kills it), and safe to call from any thread (one request at a time).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/spec.hpp"
#include "validate/engine.hpp"

namespace airlock::validate {

struct ParseWorkerConfig {
  std::string interpreter = "/usr/bin/python3";  // path inside the sandbox
  std::string script;                            // host path of ast_dump.py
  // Host path of the C tree walk (_airlock_ast.cpython-*.so), bound next to the script; the
  // worker uses it when it was built for the interpreter, else walks in Python. "" for none.
  std::string native_walker;
  std::chrono::milliseconds request_timeout{2'000};
  std::chrono::milliseconds lifetime{600'000};  // the sandbox's wall clock
  std::uint64_t memory_bytes = 256ULL << 20;
};

// Where the script appears inside every validator sandbox.
inline constexpr const char* kParserDirInSandbox = "/opt/airlock";
inline constexpr const char* kParserScriptInSandbox = "/opt/airlock/ast_dump.py";

// The sandbox spec that runs `interpreter script args...` with the script bound read-only,
// no network and small limits. Shared by the worker and the one-shot introspection runs.
sandbox::Spec parser_sandbox_spec(const ParseWorkerConfig& config,
                                  const std::vector<std::string>& args);

class ParseWorker {
 public:
  explicit ParseWorker(ParseWorkerConfig config);
  ~ParseWorker();
  ParseWorker(const ParseWorker&) = delete;
  ParseWorker& operator=(const ParseWorker&) = delete;

  // The worker's reply for `source`. Errors: "parse_timeout" (the worker was killed and will
  // be restarted), "parse_failed" (it could not start, crashed or sent something malformed).
  Result<ParsedSource> parse(std::string_view source);
  Result<ParsedSource> parse(std::string_view source, std::chrono::milliseconds timeout);
  // Starts the process now rather than on the first request.
  Status start();

  unsigned starts() const;
  unsigned requests() const;

 private:
  struct Process;
  Status start_locked();
  void stop_locked();
  Result<ParsedSource> exchange_locked(std::string_view source, std::chrono::milliseconds timeout);

  ParseWorkerConfig config_;
  mutable std::mutex mutex_;
  std::unique_ptr<Process> process_;
  std::chrono::steady_clock::time_point started_at_;
  unsigned starts_ = 0;
  unsigned requests_ = 0;
};

}  // namespace airlock::validate
