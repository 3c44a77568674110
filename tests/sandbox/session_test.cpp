// Session sandboxes (sandbox/session/session.hpp) as an executable threat model: one sandbox
// that lives across execs, each exec started by the session's init inside every layer. The
// attacks: an exec that goes for the init or its control socket, one session reaching another,
// a forbidden syscall, a session that outlives its end.
#include "sandbox/session/session.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "test_support.hpp"

namespace airlock::sandbox {
namespace {

using namespace std::chrono_literals;
using test::host_processes_with;
using test::unique;

Spec session_spec() {
  Spec spec;
  spec.limits.wall_time = std::chrono::seconds(60);
  spec.limits.pids = 64;
  return spec;
}

std::unique_ptr<SessionSandbox> start_session(Spec spec = session_spec()) {
  auto s = SessionSandbox::start(std::move(spec));
  EXPECT_TRUE(s) << s.error().message;
  return s ? std::move(*s) : nullptr;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

struct Ran {
  std::string out, err;
  std::optional<ExecEnd> end;
};

// Runs `argv` in the session to its end: its stdin closed, its output read to EOF.
Ran run_in(SessionSandbox& s, std::vector<std::string> argv, std::string cwd = "") {
  auto started = s.exec({std::move(argv), {}, std::move(cwd)});
  EXPECT_TRUE(started) << started.error().message;
  if (!started) return {};
  started->stdin_w.reset();
  Ran r;
  r.out = read_all(started->stdout_r.get());
  r.err = read_all(started->stderr_r.get());
  r.end = s.wait(started->id, 30s);
  return r;
}

Ran sh(SessionSandbox& s, const std::string& line) { return run_in(s, {"/bin/sh", "-c", line}); }

TEST(Session, ExecsShareTheWorkspaceAndWhatRunsInTheBackground) {
  auto s = start_session();
  ASSERT_TRUE(s);
  const std::string marker = "31." + std::to_string(::getpid() % 1000);
  auto first = sh(*s, "echo kept > /work/note && (sleep " + marker + " >/dev/null 2>&1 &) && echo started");
  EXPECT_EQ(first.out, "started\n") << first.err;
  ASSERT_TRUE(first.end);
  EXPECT_TRUE(first.end->exited);
  EXPECT_EQ(first.end->code, 0);
  auto second = sh(*s, "cat /work/note; pgrep -f '[s]leep " + marker + "' >/dev/null && echo alive; pwd");
  EXPECT_EQ(second.out, "kept\nalive\n/work\n") << second.err;
  auto third = run_in(*s, {"pwd"}, "/tmp");
  EXPECT_EQ(third.out, "/tmp\n");
  auto failing = sh(*s, "exit 7");
  ASSERT_TRUE(failing.end);
  EXPECT_EQ(failing.end->code, 7);
  EXPECT_EQ(s->end().verdict, Verdict::ok);
  EXPECT_EQ(host_processes_with("sleep " + marker), 0) << "the background process outlived its session";
}

TEST(Session, WhatCannotRunIsRefusedAndTheSessionGoesOn) {
  auto s = start_session();
  ASSERT_TRUE(s);
  auto missing = s->exec({{"no-such-program-" + unique()}, {}, ""});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "exec_failed");
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos) << missing.error().message;
  auto bad_dir = s->exec({{"/bin/true"}, {}, "/no/such/dir"});
  ASSERT_FALSE(bad_dir);
  EXPECT_EQ(bad_dir.error().code, "exec_failed");
  auto relative = s->exec({{"/bin/true"}, {}, "work"});
  ASSERT_FALSE(relative);
  EXPECT_EQ(relative.error().code, "invalid_argument");
  auto nul = s->exec({{"/bin/echo", std::string("a\0b", 3)}, {}, ""});
  ASSERT_FALSE(nul);
  EXPECT_EQ(nul.error().code, "invalid_argument");
  EXPECT_EQ(sh(*s, "echo still").out, "still\n");
}

TEST(Session, AnExecCannotKillTheInitNorReachItsControlSocket) {
  auto s = start_session();
  ASSERT_TRUE(s);
  // pid 1 of a pid namespace ignores signals it has no handler for, SIGKILL from inside too.
  auto kill = sh(*s, "kill -9 1; kill -TERM 1; echo tried");
  EXPECT_EQ(kill.out, "tried\n") << kill.err;
  // Only 0-2 reach an exec (and ls's own directory descriptor): the control socket does not.
  auto fds = sh(*s, "ls /proc/self/fd | tr '\\n' ' '");
  EXPECT_EQ(fds.out, "0 1 2 3 ") << fds.err;
  // The init's descriptors are not readable from inside (it is not dumpable).
  auto init_fds = sh(*s, "ls /proc/1/fd 2>&1 >/dev/null | head -c 200; echo; readlink /proc/1/fd/7 || echo unreadable");
  EXPECT_NE(init_fds.out.find("unreadable"), std::string::npos) << init_fds.out;
  EXPECT_EQ(sh(*s, "echo alive").out, "alive\n");
  EXPECT_FALSE(s->ended());
}

TEST(Session, ExecsRunWithoutCapabilitiesAndUnderSeccomp) {
  auto s = start_session();
  ASSERT_TRUE(s);
  auto caps = sh(*s, "grep -E '^Cap(Eff|Prm|Bnd)|^NoNewPrivs|^Seccomp:' /proc/self/status | tr -s '\\t ' ' '");
  EXPECT_NE(caps.out.find("CapEff: 0000000000000000"), std::string::npos) << caps.out;
  EXPECT_NE(caps.out.find("CapBnd: 0000000000000000"), std::string::npos) << caps.out;
  EXPECT_NE(caps.out.find("NoNewPrivs: 1"), std::string::npos) << caps.out;
  EXPECT_NE(caps.out.find("Seccomp: 2"), std::string::npos) << caps.out;
  // A forbidden syscall (a new user namespace) ends the session, as it ends a tool call.
  (void)run_in(*s, {"python3", "-c", "import ctypes; ctypes.CDLL(None).unshare(0x10000000)"});
  Outcome outcome = s->end();
  EXPECT_EQ(outcome.verdict, Verdict::seccomp_violation) << test::describe(outcome);
  EXPECT_EQ(outcome.syscall.value_or(""), "unshare");
  EXPECT_FALSE(s->exec({{"/bin/true"}, {}, ""}));
}

TEST(Session, OneSessionCannotReachAnother) {
  auto a = start_session();
  auto b = start_session();
  ASSERT_TRUE(a && b);
  const std::string marker = "32." + std::to_string(::getpid() % 1000);
  const std::string name = "airlock-session-" + unique();
  // In A: a process to find and an abstract socket to connect to.
  auto in_a = sh(*a, "(sleep " + marker + " >/dev/null 2>&1 &); python3 -c \"" +
                         "import socket, os, sys\n"
                         "s = socket.socket(socket.AF_UNIX); s.bind('\\\\0" + name + "'); s.listen()\n"
                         "if os.fork(): sys.exit(0)\n"
                         "os.setsid(); [os.close(f) for f in (0, 1, 2)]; s.accept(); open('/tmp/reached', 'w')\n\" && echo ready");
  EXPECT_EQ(in_a.out, "ready\n") << in_a.err;
  // From B: not in B's process list, no signal reaches it, the socket is not there, A's /tmp
  // is not B's. ("[s]leep": the pattern must not match the shell that runs pgrep.)
  auto from_b = sh(*b, "pgrep -f '[s]leep " + marker + "' || echo no-process; "
                       "pkill -f '[s]leep " + marker + "' || echo no-signal; "
                       "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX)\n"
                       "try: s.connect('\\\\0" + name + "'); print('CONNECTED')\n"
                       "except OSError as e: print('refused')\"; "
                       "echo b > /tmp/from-b; ls /tmp");
  EXPECT_EQ(from_b.out, "no-process\nno-signal\nrefused\nfrom-b\n") << from_b.err;
  auto check_a = sh(*a, "pgrep -f '[s]leep " + marker + "' >/dev/null && echo alive; ls /tmp");
  EXPECT_EQ(check_a.out, "alive\n") << check_a.err;
}

TEST(Session, ASignalReachesTheExecAndWhatItStarted) {
  auto s = start_session();
  ASSERT_TRUE(s);
  auto started = s->exec({{"/bin/sh", "-c", "sleep 30 & sleep 30; echo not-reached"}, {}, ""});
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_FALSE(s->wait(started->id, 200ms)) << "ended before it was signalled";
  ASSERT_TRUE(s->signal(started->id, SIGTERM));
  auto end = s->wait(started->id, 10s);
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->exited);
  EXPECT_EQ(end->code, SIGTERM);
  EXPECT_EQ(read_all(started->stdout_r.get()), "");  // EOF: both sleeps are gone too
  EXPECT_EQ(sh(*s, "pgrep -x sleep || echo none").out, "none\n");
}

TEST(Session, ItsWallClockEndsIt) {
  Spec spec = session_spec();
  spec.limits.wall_time = std::chrono::seconds(1);
  auto s = start_session(spec);
  ASSERT_TRUE(s);
  auto started = s->exec({{"sleep", "30"}, {}, ""});
  ASSERT_TRUE(started) << started.error().message;
  auto end = s->wait(started->id, 20s);
  EXPECT_FALSE(end) << "the exec reported an end of its own";
  EXPECT_TRUE(s->ended());
  auto refused = s->exec({{"/bin/true"}, {}, ""});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "session_ended");
  EXPECT_EQ(s->end().verdict, Verdict::timeout);
}

}  // namespace
}  // namespace airlock::sandbox
