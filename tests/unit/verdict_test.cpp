// judge(): every verdict, its message, and the precedence between competing facts, with no
// sandbox. The precedence is the chain Sandbox::wait had before judge() (docs/sandbox.md).
#include <gtest/gtest.h>
#include <signal.h>

#include "sandbox/verdict.hpp"

namespace airlock::sandbox {
namespace {

using std::chrono::milliseconds;

Limits limits() {
  Limits l;
  l.wall_time = milliseconds(2000);
  l.cpu_time = milliseconds(1000);
  l.memory_bytes = 64ULL << 20;
  l.output_bytes = 1ULL << 20;
  return l;
}

RunFacts exited(int code) {
  RunFacts f;
  f.command = "prog";
  f.exit_code = code;
  return f;
}

RunFacts killed_by(int sig) {
  RunFacts f;
  f.command = "prog";
  f.signal = sig;
  return f;
}

// Every fact that decides a verdict, at once.
RunFacts everything() {
  RunFacts f = killed_by(SIGKILL);
  f.timed_out = true;
  f.violation = "ptrace";
  f.oom_kills = 1;
  f.cpu_exceeded = true;
  f.stdout_truncated = true;
  f.killed_by_caller = true;
  return f;
}

TEST(Judge, Ok) {
  Judgement j = judge(exited(0), limits());
  EXPECT_EQ(j.verdict, Verdict::ok);
  EXPECT_EQ(j.message, "prog exited with status 0");
  EXPECT_EQ(j.exit_code, 0);
  EXPECT_FALSE(j.signal);
  EXPECT_FALSE(j.syscall);
}

TEST(Judge, ExitNonzero) {
  Judgement j = judge(exited(3), limits());
  EXPECT_EQ(j.verdict, Verdict::exit_nonzero);
  EXPECT_EQ(j.message, "prog exited with status 3");
  EXPECT_EQ(j.exit_code, 3);
}

TEST(Judge, SignaledByItsOwnSignal) {
  Judgement j = judge(killed_by(SIGSEGV), limits());
  EXPECT_EQ(j.verdict, Verdict::signaled);
  EXPECT_EQ(j.message, "prog was killed by SIGSEGV");
  EXPECT_EQ(j.signal, SIGSEGV);
  EXPECT_FALSE(j.exit_code);
}

TEST(Judge, SignaledWithoutAReport) {
  RunFacts f;
  f.command = "prog";
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::signaled);
  EXPECT_EQ(j.message, "prog's sandbox ended without reporting how the program exited");
  EXPECT_FALSE(j.exit_code);
  EXPECT_FALSE(j.signal);
}

TEST(Judge, StoppedByTheCallerIsSigkillWhateverTheProgramReported) {
  RunFacts f = exited(0);
  f.killed_by_caller = true;
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::signaled);
  EXPECT_EQ(j.message, "prog was stopped by its supervisor");
  EXPECT_FALSE(j.exit_code);
  EXPECT_EQ(j.signal, SIGKILL);
}

TEST(Judge, Timeout) {
  RunFacts f = exited(0);
  f.timed_out = true;
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::timeout);
  EXPECT_EQ(j.message, "prog ran past the 2s wall-clock limit and was killed");
  EXPECT_FALSE(j.exit_code);
  EXPECT_EQ(j.signal, SIGKILL);
}

TEST(Judge, SeccompViolation) {
  RunFacts f = exited(1);
  f.violation = "ptrace";
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::seccomp_violation);
  EXPECT_EQ(j.message, "prog called ptrace, which the sandbox's syscall policy forbids, and "
                       "was killed");
  EXPECT_EQ(j.syscall, "ptrace");
  EXPECT_FALSE(j.exit_code);
  EXPECT_EQ(j.signal, SIGSYS);
}

TEST(Judge, MemoryLimitCountsTheKillsAndKeepsTheReportedExit) {
  RunFacts f = killed_by(SIGKILL);
  f.oom_kills = 1;
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::memory_limit);
  EXPECT_EQ(j.message,
            "prog reached the 64M memory limit and the kernel's OOM killer ended a process");
  EXPECT_EQ(j.signal, SIGKILL);
  f = exited(137);
  f.oom_kills = 3;
  j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::memory_limit);
  EXPECT_EQ(j.message,
            "prog reached the 64M memory limit and the kernel's OOM killer ended 3 processes");
  EXPECT_EQ(j.exit_code, 137);
  EXPECT_FALSE(j.signal);
}

TEST(Judge, CpuBudgetSpentByOurCheckIsSigkill) {
  RunFacts f = exited(0);
  f.cpu_exceeded = true;
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::cpu_time_limit);
  EXPECT_EQ(j.message, "prog used up its 1s CPU-time budget and was killed");
  EXPECT_FALSE(j.exit_code);
  EXPECT_EQ(j.signal, SIGKILL);
}

TEST(Judge, CpuRlimitDeathCountsFromHalfTheBudget) {
  for (int sig : {SIGXCPU, SIGKILL}) {
    RunFacts f = killed_by(sig);
    f.cpu_used_ns = 500'000'000;  // + the 500 ms slack reaches the 1 s budget
    Judgement j = judge(f, limits());
    EXPECT_EQ(j.verdict, Verdict::cpu_time_limit) << sig;
    EXPECT_EQ(j.message, "prog used up its 1s CPU-time budget and was killed");
    EXPECT_EQ(j.signal, sig);  // the signal that ended it, not ours
    f.cpu_used_ns = 499'999'999;
    EXPECT_EQ(judge(f, limits()).verdict, Verdict::signaled) << sig;
  }
  RunFacts f = killed_by(SIGSEGV);
  f.cpu_used_ns = 2'000'000'000;
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::signaled) << "not a CPU signal";
  Limits unbudgeted = limits();
  unbudgeted.cpu_time.reset();
  f = killed_by(SIGXCPU);
  f.cpu_used_ns = 2'000'000'000;
  EXPECT_EQ(judge(f, unbudgeted).verdict, Verdict::signaled) << "no budget to spend";
}

TEST(Judge, OutputLimitNamesTheStreams) {
  RunFacts f = exited(0);
  f.stdout_truncated = true;
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::output_limit);
  EXPECT_EQ(j.message, "prog wrote more than the 1M output limit on stdout; the rest was "
                       "discarded");
  EXPECT_EQ(j.exit_code, 0);
  f.stdout_truncated = false;
  f.stderr_truncated = true;
  EXPECT_EQ(judge(f, limits()).message,
            "prog wrote more than the 1M output limit on stderr; the rest was discarded");
  f.stdout_truncated = true;
  f.output_killed = true;
  EXPECT_EQ(judge(f, limits()).message,
            "prog wrote more than the 1M output limit on stdout and stderr; the rest was "
            "discarded and the run was stopped");
}

// The whole precedence: with every fact true, taking away the winning one each time gives
// the next verdict down the chain.
TEST(Judge, PrecedenceLadder) {
  RunFacts f = everything();
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::timeout);
  f.timed_out = false;
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::seccomp_violation);
  f.violation.reset();
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::memory_limit);
  f.oom_kills = 0;
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::cpu_time_limit);
  f.cpu_exceeded = false;
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::output_limit);
  f.stdout_truncated = false;
  EXPECT_EQ(judge(f, limits()).message, "prog was stopped by its supervisor");
  f.killed_by_caller = false;
  EXPECT_EQ(judge(f, limits()).message, "prog was killed by SIGKILL");
}

TEST(Judge, TimeoutBeatsOomAndAViolation) {
  RunFacts f = killed_by(SIGKILL);
  f.timed_out = true;
  f.oom_kills = 2;
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::timeout);
  f.violation = "mount";
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::timeout);
  EXPECT_FALSE(j.syscall);
}

TEST(Judge, ViolationBeatsOom) {
  RunFacts f = killed_by(SIGKILL);
  f.oom_kills = 1;
  f.violation = "mount";
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::seccomp_violation);
}

TEST(Judge, OomBeatsTheCpuBudget) {
  RunFacts f = killed_by(SIGKILL);
  f.oom_kills = 1;
  f.cpu_exceeded = true;
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::memory_limit);
  f.cpu_exceeded = false;
  f.cpu_used_ns = 900'000'000;  // the RLIMIT_CPU reading of the same SIGKILL
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::memory_limit);
}

TEST(Judge, CpuBudgetBeatsOutput) {
  RunFacts f = killed_by(SIGXCPU);
  f.cpu_used_ns = 1'000'000'000;
  f.stderr_truncated = true;
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::cpu_time_limit);
}

TEST(Judge, OutputBeatsTheCallersStop) {
  RunFacts f = exited(0);
  f.stdout_truncated = true;
  f.killed_by_caller = true;
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::output_limit);
  EXPECT_EQ(j.exit_code, 0);
}

TEST(Judge, TheCallersStopBeatsTheProgramsExit) {
  RunFacts f = exited(2);
  f.killed_by_caller = true;
  EXPECT_EQ(judge(f, limits()).message, "prog was stopped by its supervisor");
}

TEST(Judge, ASignalBeatsAnExitCode) {
  RunFacts f = exited(0);
  f.signal = SIGTERM;
  EXPECT_EQ(judge(f, limits()).verdict, Verdict::signaled);
}

}  // namespace
// The pids limit leaves the verdict as the program made it, and says so in the message.
TEST(Judge, APidsLimitHitKeepsTheVerdictAndIsNamed) {
  RunFacts f = exited(0);
  f.pids_refused = 3;
  Judgement j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::ok);
  EXPECT_EQ(j.message,
            "prog exited with status 0; it hit the 64-process limit (3 fork or clone calls were "
            "refused)");
  f.timed_out = true;
  f.pids_refused = 1;
  j = judge(f, limits());
  EXPECT_EQ(j.verdict, Verdict::timeout);
  EXPECT_NE(j.message.find("(1 fork or clone call was refused)"), std::string::npos) << j.message;
}

}  // namespace airlock::sandbox
