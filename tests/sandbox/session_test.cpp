// Session sandboxes (sandbox/session/session.hpp) as an executable threat model: one sandbox
// that lives across execs, each exec started by the session's init inside every layer. The
// attacks: an exec that goes for the init or its control socket, one session reaching another,
// a forbidden syscall, a session that outlives its end, and file operations that try to
// leave the workspace (`..`, symlinks planted by the session, a symlink swapped between check
// and use, a FIFO to hang the init, a write past the disk limit), and a terminal that would show
// the host's ptys or ignore ^C.
#include "sandbox/session/session.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "common/no_sigpipe.hpp"
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

// Writes `content` into a new file at `path` through the files API; the copier's result.
Status write_through(SessionSandbox& s, const std::string& path, const std::string& content) {
  auto t = s.write_file(path);
  if (!t) return t.error();
  for (std::size_t off = 0; off < content.size();) {
    const ssize_t n = write_without_sigpipe(t->pipe.get(), content.data() + off, content.size() - off);
    if (n <= 0) break;  // the copier stopped: its end says why
    off += static_cast<std::size_t>(n);
  }
  t->pipe.reset();
  auto end = s.wait(t->id, 30s);
  if (!end) return Error::make("test", "the copier did not end");
  if (!end->exited || end->code != 0) return file_error(end->exited ? end->code : EINTR, path);
  return {};
}

// A file's content or a directory's listing through the files API.
Result<std::string> read_through(SessionSandbox& s, const std::string& path) {
  auto t = s.read_file(path);
  if (!t) return t.error();
  std::string out = read_all(t->pipe.get());
  auto end = s.wait(t->id, 30s);
  if (!end || !end->exited || end->code != 0) return Error::make("test", "the copier failed");
  return out;
}

TEST(Session, FilesAreWrittenReadListedMovedAndRemovedInTheWorkspace) {
  auto s = start_session();
  ASSERT_TRUE(s);
  ASSERT_TRUE(write_through(*s, "dir/sub/a.txt", "hello"));  // parents are made
  EXPECT_EQ(sh(*s, "cat /work/dir/sub/a.txt").out, "hello");
  auto read = read_through(*s, "dir/sub/a.txt");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(*read, "hello");
  auto listing = read_through(*s, "dir");
  ASSERT_TRUE(listing);
  EXPECT_EQ(listing->substr(0, 2), "d ");
  EXPECT_NE(listing->find(" sub", 0), std::string::npos);
  EXPECT_EQ(listing->back(), '\0');
  auto again = s->write_file("dir/sub/a.txt");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "file_exists");
  ASSERT_TRUE(s->move_file("dir/sub/a.txt", "b.txt"));
  EXPECT_EQ(sh(*s, "cat /work/b.txt; test -e /work/dir/sub/a.txt || echo moved").out, "hellomoved\n");
  ASSERT_TRUE(s->make_directory("x/y/z"));
  ASSERT_TRUE(s->make_directory("x/y"));  // there already: fine
  EXPECT_EQ(sh(*s, "test -d /work/x/y/z && echo dir").out, "dir\n");
  auto not_empty = s->remove_file("x");
  ASSERT_FALSE(not_empty);
  EXPECT_EQ(not_empty.error().code, "directory_not_empty");
  ASSERT_TRUE(s->remove_file("b.txt"));
  auto gone = s->read_file("b.txt");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, "file_not_found");
  // What is written belongs to the session's user, as if the session had written it.
  ASSERT_TRUE(write_through(*s, "owned", "x"));
  EXPECT_EQ(sh(*s, "test -O /work/owned && echo mine").out, "mine\n");
}

TEST(Session, FilesCannotLeaveTheWorkspace) {
  auto s = start_session();
  ASSERT_TRUE(s);
  // Outside the workspace but inside the session: /tmp. Links planted by the session lead there.
  auto planted = sh(*s, "echo outside-secret > /tmp/secret && echo inside > /work/real && "
                        "ln -s /tmp /work/up && ln -s / /work/root && ln -s ../tmp/secret /work/rel && "
                        "mkdir /work/d && ln -s ../../tmp /work/d/deep && mkfifo /work/fifo && echo ok");
  ASSERT_EQ(planted.out, "ok\n") << planted.err;
  for (const std::string path : {"up/secret", "root/tmp/secret", "root/etc/passwd", "rel", "d/deep/secret"}) {
    auto escaped = s->read_file(path);
    ASSERT_FALSE(escaped) << path << " was read";
    EXPECT_EQ(escaped.error().code, "outside_workspace") << path << ": " << escaped.error().message;
  }
  auto written = s->write_file("up/planted");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().code, "outside_workspace");
  auto moved = s->move_file("real", "up/real");
  ASSERT_FALSE(moved);
  EXPECT_EQ(moved.error().code, "outside_workspace");
  auto removed = s->remove_file("up/secret");
  ASSERT_FALSE(removed);
  EXPECT_EQ(removed.error().code, "outside_workspace");
  EXPECT_EQ(sh(*s, "cat /tmp/secret; ls /tmp").out, "outside-secret\nsecret\n");
  // `..` is refused before it reaches the init, and by the kernel if it did.
  EXPECT_EQ(workspace_path("../../etc/shadow").error().code, "invalid_path");
  EXPECT_EQ(workspace_path("a/../../b").error().code, "invalid_path");
  EXPECT_EQ(*workspace_path("/a//./b/"), "a/b");
  auto raw = s->read_file("../tmp/secret");  // as if the check were skipped
  ASSERT_FALSE(raw);
  EXPECT_EQ(raw.error().code, "outside_workspace");
  // A FIFO does not hang the init: it is not a regular file, and the session goes on.
  auto fifo = s->read_file("fifo");
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code, "not_a_regular_file");
  EXPECT_EQ(sh(*s, "echo alive").out, "alive\n");
}

TEST(Session, ASymlinkSwappedBetweenCheckAndUseNeverLeadsOut) {
  auto s = start_session();
  ASSERT_TRUE(s);
  // In the background, for as long as the test reads: `link` and `dir` flip between a
  // target inside the workspace and one outside, as fast as the session can flip them.
  auto flipping = s->exec({{"/bin/sh", "-c",
                            "echo outside-secret > /tmp/secret; echo inside > /work/real; mkdir /work/in; "
                            "echo inside > /work/in/secret; echo started; "
                            "while :; do ln -sfn /tmp/secret /work/link; ln -sfn real /work/link; "
                            "ln -sfn /tmp /work/dir; ln -sfn in /work/dir; done"},
                           {},
                           ""});
  ASSERT_TRUE(flipping);
  char started[8] = {};
  ASSERT_EQ(::read(flipping->stdout_r.get(), started, sizeof started), 8);
  // Until both outcomes have been seen (the race was run, not avoided), for at most 30 s: a
  // count of reads was not enough on a loaded host, where 20000 reads fit in one stall of the
  // flipping shell and every one of them saw the same side.
  int inside = 0, refused = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((inside < 20 || refused < 20) && std::chrono::steady_clock::now() < deadline) {
    for (const std::string path : {"link", "dir/secret"}) {
      auto got = read_through(*s, path);
      if (got) {
        ASSERT_EQ(*got, "inside\n") << path << " led out of the workspace";
        ++inside;
      } else {
        ASSERT_TRUE(got.error().code == "outside_workspace" || got.error().code == "file_not_found")
            << got.error().code << ": " << got.error().message;
        ++refused;
      }
    }
  }
  ASSERT_TRUE(s->signal(flipping->id, SIGKILL));
  EXPECT_GT(inside, 0);
  EXPECT_GT(refused, 0);
}

TEST(Session, AWritePastTheDiskLimitIsRefused) {
  Spec spec = session_spec();
  spec.limits.disk_bytes = 8u << 20;
  auto s = start_session(spec);
  ASSERT_TRUE(s);
  auto refused = write_through(*s, "big", std::string(32u << 20, 'x'));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "disk_limit") << refused.error().message;
  // The session's own writes hit the same limit: the copier wrote on the session's disk.
  EXPECT_EQ(sh(*s, "rm /work/big; head -c 1048576 /dev/zero > /work/small && echo fits").out, "fits\n");
}

// What a terminal shows until `marker` appears (or `timeout` passes: then what it showed).
std::string read_until(int master, const std::string& marker, std::chrono::milliseconds timeout) {
  std::string shown;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (shown.find(marker) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: nothing holds the terminal any more
    shown.append(buf, static_cast<std::size_t>(n));
  }
  return shown;
}

void type(int master, const std::string& keys) {
  ASSERT_EQ(::write(master, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
}

// A shell for a person: its own pty (the host's, one of which this test holds open, are not
// there), the window size it was given, a resize that reaches it, ^C that stops what runs in
// the foreground (and not the shell), and its end once it exits. "$((1+1))": the marker is in
// the output, not in the echo of what was typed.
TEST(Session, ATerminalExecGetsAPtyOfTheSessionsOwnThatResizesAndTakesCtrlC) {
  UniqueFd host_pty(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  ASSERT_TRUE(host_pty) << "posix_openpt on the host";
  auto s = start_session();
  ASSERT_TRUE(s);
  auto started = s->exec_on_terminal({{"/bin/sh", "-i"}, {{"PS1", "$ "}}, ""}, WindowSize{30, 100});
  ASSERT_TRUE(started) << started.error().message;
  ASSERT_TRUE(started->terminal);
  EXPECT_FALSE(started->stdout_r);
  const int tty = started->terminal.get();
  type(tty, "tty; stty size; ls -1 /dev/pts; echo MARK-$((1+1))\n");
  auto shown = read_until(tty, "MARK-2", 10s);
  EXPECT_NE(shown.find("/dev/pts/0\r\n30 100\r\n0\r\nptmx\r\nMARK-2"), std::string::npos) << shown;

  winsize size{};
  size.ws_row = 50;
  size.ws_col = 120;
  ASSERT_EQ(::ioctl(tty, TIOCSWINSZ, &size), 0);
  type(tty, "stty size; echo MARK-$((2+1))\n");
  shown = read_until(tty, "MARK-3", 10s);
  EXPECT_NE(shown.find("50 120\r\nMARK-3"), std::string::npos) << shown;

  type(tty, "sleep 1000\n");
  (void)read_until(tty, "sleep 1000\r\n", 5s);  // its echo: the sleep has been typed
  std::this_thread::sleep_for(300ms);
  type(tty, "\x03");
  type(tty, "echo MARK-$((3+1)) $?\n");
  shown = read_until(tty, "MARK-4", 10s);
  EXPECT_NE(shown.find("MARK-4 130"), std::string::npos) << "^C did not stop the sleep: " << shown;

  type(tty, "exit 7\n");
  auto end = s->wait(started->id, 10s);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->exited);
  EXPECT_EQ(end->code, 7);
  EXPECT_EQ(sh(*s, "pgrep -x sleep || echo none").out, "none\n");
}

TEST(Session, ATerminalNeedsAWindow) {
  auto s = start_session();
  ASSERT_TRUE(s);
  auto refused = s->exec_on_terminal({{"/bin/sh"}, {}, ""}, WindowSize{0, 80});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "invalid_argument");
  EXPECT_EQ(sh(*s, "echo alive").out, "alive\n");
}

}  // namespace
}  // namespace airlock::sandbox
