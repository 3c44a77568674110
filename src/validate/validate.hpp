// Static validation of model-generated Python before it runs (docs/validate.md).
//
//   validate::Report report = validate::check(source, policy);
//   if (report.verdict == validate::Verdict::reject) ...
//
// The source is parsed by the target interpreter's own `ast` module in a warm, sandboxed
// worker process; the rules run in C++ over the tree. Every failure to parse or to vouch for
// the code is a rejection with its own rule id (fail closed).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "validate/policy.hpp"

namespace airlock::validate {

enum class Severity { error, warning };
enum class Verdict { accept, reject };

struct Finding {
  std::string rule;     // stable id, e.g. "dynamic-code"; docs/validate.md lists them all
  std::string message;  // one sentence: what was found and why it is refused
  int line = 0;         // 1-based; 0 when the finding concerns the whole source
  int col = 0;          // 1-based byte column; 0 when unknown
  Severity severity = Severity::error;
};

struct Report {
  Verdict verdict = Verdict::reject;  // reject when any finding is an error
  std::vector<Finding> findings;      // sorted by line, column, rule
};

std::string_view verdict_name(Verdict verdict);
std::string_view severity_name(Severity severity);

struct ValidatorOptions {
  std::chrono::milliseconds parse_timeout{2'000};   // per request; the worker is restarted
  std::chrono::milliseconds worker_lifetime{600'000};  // the sandbox's wall clock
  std::uint64_t worker_memory_bytes = 256ULL << 20;
  std::string parser_script;  // host path of ast_dump.py; empty: the installed/source copy
  // The C tree walk for the worker (native/ast_walker.c): empty for the installed or built
  // copy, "none" to walk in Python.
  std::string native_walker;
};

// Owns the warm parse workers (one per interpreter) and the cache of module exports.
// Thread-safe: any number of threads may call check() at once.
class Validator {
 public:
  explicit Validator(ValidatorOptions options = {});
  ~Validator();
  Validator(const Validator&) = delete;
  Validator& operator=(const Validator&) = delete;

  Report check(std::string_view source, const Policy& policy);
  // Starts the worker and computes the exports of the policy's modules ahead of the first
  // check (the daemon calls it when it loads a tool).
  Status prepare(const Policy& policy);

  struct Stats {
    unsigned worker_starts = 0;    // processes started (a restart counts)
    unsigned parse_requests = 0;
    unsigned exports_computed = 0;  // sandboxed introspection runs
  };
  Stats stats() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// check() on a process-wide Validator with the default options.
Report check(std::string_view source, const Policy& policy);

// The parser script the build ships (AIRLOCK_VALIDATE_PARSER_SCRIPT), or an override from the
// environment variable AIRLOCK_VALIDATE_PARSER.
std::string default_parser_script();
// The C tree walk the build made, installed or in the build tree; "" when there is none.
std::string default_native_walker();

}  // namespace airlock::validate
