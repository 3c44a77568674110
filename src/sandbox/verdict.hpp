// The verdict of one run as a pure function of what the supervisor observed and the limits it
// enforced: judge() has no I/O, so every verdict and its precedence is unit-tested without a
// sandbox (tests/unit/verdict_test.cpp). See docs/sandbox.md, "Verdicts".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::sandbox {

// The facts of one run, each observed, none inferred.
struct RunFacts {
  std::string_view command;              // argv[0], for the message
  bool timed_out = false;                // our wall-clock timer fired and we killed the sandbox
  std::optional<std::string> violation;  // a seccomp notification named this forbidden syscall
  std::uint64_t oom_kills = 0;           // the cgroup's OOM-kill counter
  bool cpu_exceeded = false;             // our CPU-budget check found the cgroup over budget
  std::uint64_t cpu_used_ns = 0;         // user + system time, as the usage reports it
  bool stdout_truncated = false;         // a stream went past the output cap
  bool stderr_truncated = false;
  bool output_killed = false;            // kill_on_output_limit then stopped the run
  bool killed_by_caller = false;         // stop_fd or Sandbox::kill()
  std::optional<int> exit_code;          // how the program ended: init's report, else waitid
  std::optional<int> signal;
  std::uint64_t pids_refused = 0;        // forks the pids cgroup refused (pids.events "max")
};

struct Judgement {
  Verdict verdict = Verdict::signaled;
  std::string message;
  // The exit the Outcome reports: the program's own, or the signal our kill sent.
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<std::string> syscall;  // seccomp_violation: the forbidden syscall
};

// First match wins: timeout > seccomp_violation > memory_limit > cpu_time_limit >
// output_limit > signaled (by the caller) > signaled > exit_nonzero > ok. A run that hit the
// pids limit keeps its verdict; the message says so.
Judgement judge(const RunFacts& facts, const Limits& limits);

}  // namespace airlock::sandbox
