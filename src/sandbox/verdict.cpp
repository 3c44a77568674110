#include "sandbox/verdict.hpp"

#include <signal.h>

#include "common/units.hpp"

namespace airlock::sandbox {
namespace {

// How far below the budget a SIGXCPU death may measure and still count as the budget.
// Without cgroup CPU accounting the budget is RLIMIT_CPU, which the kernel checks against the
// scheduler's runtime, while the usage we report comes from rusage; on a busy host the two
// disagree by up to 15% (853 ms measured for a 1 s limit with 6 test binaries on 2 cores).
// SIGXCPU has no other sender but the program itself, so half the budget is the bar.
std::uint64_t cpu_slack_ns(std::chrono::milliseconds budget) {
  return static_cast<std::uint64_t>(budget.count()) * 500'000;
}

// Our budget check killed it, or (RLIMIT_CPU) it died of SIGXCPU/SIGKILL near the budget.
bool cpu_budget_spent(const RunFacts& f, const Limits& lim) {
  if (!lim.cpu_time) return false;
  if (f.cpu_exceeded) return true;
  const bool cpu_signal = f.signal && (*f.signal == SIGXCPU || *f.signal == SIGKILL);
  const auto budget_ns = static_cast<std::uint64_t>(lim.cpu_time->count()) * 1'000'000;
  return cpu_signal && f.cpu_used_ns + cpu_slack_ns(*lim.cpu_time) >= budget_ns;
}

// A verdict whose cause was our SIGKILL (or the kernel's SIGSYS), whatever init reported.
Judgement killed(Verdict v, int signal, std::string message) {
  return {v, std::move(message), std::nullopt, signal, std::nullopt};
}

// A verdict that keeps the exit the program reported.
Judgement as_reported(const RunFacts& f, Verdict v, std::string message) {
  return {v, std::move(message), f.exit_code, f.signal, std::nullopt};
}

Judgement timeout(const RunFacts& f, const Limits& lim) {
  return killed(Verdict::timeout, SIGKILL,
                std::string(f.command) + " ran past the " + format_duration(lim.wall_time) +
                    " wall-clock limit and was killed");
}

Judgement seccomp_violation(const RunFacts& f) {
  Judgement j = killed(Verdict::seccomp_violation, SIGSYS,
                       std::string(f.command) + " called " + *f.violation +
                           ", which the sandbox's syscall policy forbids, and was killed");
  j.syscall = f.violation;
  return j;
}

Judgement memory_limit(const RunFacts& f, const Limits& lim) {
  return as_reported(f, Verdict::memory_limit,
                     std::string(f.command) + " reached the " + format_size(lim.memory_bytes) +
                         " memory limit and the kernel's OOM killer ended " +
                         (f.oom_kills == 1 ? std::string("a process")
                                           : std::to_string(f.oom_kills) + " processes"));
}

Judgement cpu_time_limit(const RunFacts& f, const Limits& lim) {
  std::string message = std::string(f.command) + " used up its " +
                        format_duration(*lim.cpu_time) + " CPU-time budget and was killed";
  if (f.cpu_exceeded) return killed(Verdict::cpu_time_limit, SIGKILL, std::move(message));
  return as_reported(f, Verdict::cpu_time_limit, std::move(message));
}

Judgement output_limit(const RunFacts& f, const Limits& lim) {
  const char* which = f.stdout_truncated && f.stderr_truncated ? "stdout and stderr"
                      : f.stdout_truncated                     ? "stdout"
                                                               : "stderr";
  return as_reported(f, Verdict::output_limit,
                     std::string(f.command) + " wrote more than the " +
                         format_size(lim.output_bytes) + " output limit on " + which +
                         "; the rest was discarded" +
                         (f.output_killed ? " and the run was stopped" : ""));
}

// No limit was hit: how the program itself ended.
Judgement program_exit(const RunFacts& f) {
  const std::string cmd(f.command);
  if (f.signal)
    return as_reported(f, Verdict::signaled, cmd + " was killed by " + signal_name(*f.signal));
  if (f.exit_code && *f.exit_code != 0)
    return as_reported(f, Verdict::exit_nonzero,
                       cmd + " exited with status " + std::to_string(*f.exit_code));
  if (f.exit_code) return as_reported(f, Verdict::ok, cmd + " exited with status 0");
  return as_reported(f, Verdict::signaled,
                     cmd + "'s sandbox ended without reporting how the program exited");
}

Judgement decide(const RunFacts& f, const Limits& lim) {
  if (f.timed_out) return timeout(f, lim);
  if (f.violation) return seccomp_violation(f);
  if (f.oom_kills > 0) return memory_limit(f, lim);
  if (cpu_budget_spent(f, lim)) return cpu_time_limit(f, lim);
  if (f.stdout_truncated || f.stderr_truncated) return output_limit(f, lim);
  if (f.killed_by_caller)
    return killed(Verdict::signaled, SIGKILL,
                  std::string(f.command) + " was stopped by its supervisor");
  return program_exit(f);
}

}  // namespace

Judgement judge(const RunFacts& f, const Limits& lim) {
  Judgement j = decide(f, lim);
  if (f.pids_refused > 0)
    j.message += "; it hit the " + std::to_string(lim.pids) + "-process limit (" +
                 std::to_string(f.pids_refused) + " fork or clone call" +
                 (f.pids_refused == 1 ? " was" : "s were") + " refused)";
  return j;
}

}  // namespace airlock::sandbox
