// Outcome: what happened to one sandbox run, as plain data with a stable JSON form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace airlock::sandbox {

// Exact verdicts, in precedence order (the first that applies wins):
// setup_error > timeout > seccomp_violation > memory_limit > cpu_time_limit > output_limit >
// signaled > exit_nonzero > ok. See docs/sandbox.md.
enum class Verdict {
  ok,
  exit_nonzero,
  signaled,
  timeout,
  cpu_time_limit,
  memory_limit,
  output_limit,
  seccomp_violation,
  setup_error,
};

std::string_view verdict_name(Verdict v);

struct Usage {
  std::uint64_t wall_ms = 0;
  std::uint64_t cpu_user_ms = 0;
  std::uint64_t cpu_sys_ms = 0;
  std::optional<std::uint64_t> memory_peak_bytes;  // null when no source can tell
  std::optional<std::uint64_t> pids_peak;          // null without a pids cgroup
  // The pids limit refused a fork() or clone() (the program saw EAGAIN); null without a pids
  // cgroup. It does not change the verdict: the program may have coped (docs/sandbox.md).
  std::optional<bool> pids_limit_hit;
};

struct Outcome {
  Verdict verdict = Verdict::setup_error;
  std::optional<int> exit_code;
  std::optional<int> signal;            // signal number; printed as its name
  std::optional<std::string> syscall;   // seccomp_violation: the blocked syscall
  std::string message;                  // one sentence saying exactly what happened
  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::uint64_t stdout_discarded_bytes = 0;  // bytes past the limit, read and dropped
  std::uint64_t stderr_discarded_bytes = 0;
  Usage usage;

  // The exit status `airlock run` returns: the child's code, 128+N for signal N,
  // 124 on timeout, 125 when the sandbox could not be set up.
  int exit_status() const;
};

std::string signal_name(int sig);  // "SIGKILL"; "SIG42" for unnamed ones

nlohmann::json to_json(const Outcome& outcome);
nlohmann::json to_json(const Usage& usage);

}  // namespace airlock::sandbox
