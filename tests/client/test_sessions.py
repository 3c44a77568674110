"""Sessions through the client, against a real daemon (docs/sessions.md): state kept across
execs, an exit code as a result, the output as DLP left it, another agent's 404, the end; the
files of a session's workspace written, listed, read (whole and streamed) and removed; a
snapshot of them, a fork from it, only for their owner; `airlock session shell` from a real
terminal (a pty of the test's plays it)."""
import asyncio
import hashlib
import json
import os
import pty
import select
import signal
import subprocess
import tempfile
import time
import unittest

from support import AGENT_KEY, AIRLOCK, OTHER_AGENT_KEY, DaemonTest

import airlock
from airlock import AsyncClient, Client


# Every byte with its high bit set: binary, and no ASCII that a DLP detector could take for a
# secret or PII (they all need some), so the file comes back as it went.
HIGH_BIT = bytes(b | 0x80 for b in range(256))


class Sessions(DaemonTest):
    def test_a_session_keeps_its_files_across_execs_and_ends(self):
        client = self.client()
        session = client.create_session("workspace", labels={"task": "t-1"})
        self.assertEqual(session.state, "running")
        self.assertEqual(session.labels, {"task": "t-1"})
        first = client.exec(session, "echo kept > /work/note")
        self.assertTrue(first.ok, first.raw)
        read = client.exec(session, ["cat", "/work/note"])
        self.assertEqual(read.stdout, "kept\n")
        self.assertEqual(read.exit_code, 0)
        self.assertIsNotNone(read.audit)
        failed = client.exec(session, "echo no >&2; exit 4", stdin="ignored")
        self.assertEqual((failed.verdict, failed.exit_code, failed.stderr), ("exit_nonzero", 4, "no\n"))
        leaked = client.exec(session, "echo AKIAZ7Q3PLDX4RS6TB2V")
        self.assertNotIn("AKIAZ7Q3PLDX4RS6TB2V", leaked.stdout)
        self.assertTrue(leaked.redactions)
        self.assertIn(session.id, [s.id for s in client.sessions()])
        self.assertEqual(client.pause_session(session).state, "paused")
        with self.assertRaises(airlock.ConflictError):
            client.exec(session, "true")
        self.assertEqual(client.resume_session(session).state, "running")
        ended = client.end_session(session)
        self.assertEqual((ended.state, ended.end_reason), ("ended", "deleted"))
        with self.assertRaises(airlock.NotFoundError):
            client.session(session.id)

    def test_code_cells_keep_their_state_and_report_their_errors(self):
        client = self.client()
        session = client.create_session("workspace")
        first = client.run_code(session, "x = 20\nx * 2 + 1 + 1")
        self.assertEqual((first.verdict, first.result["json"], first.interpreter_state), ("ok", 42, "new"), first.raw)
        failing = client.run_code(session, "x / 0")
        self.assertEqual(failing.verdict, "exception")
        self.assertEqual(failing.error["name"], "ZeroDivisionError")
        self.assertIn("line 1", "\n".join(failing.error["traceback"]))
        with self.assertRaises(airlock.CodeRejectedError):
            client.run_code(session, "eval('x')")
        self.assertFalse(client.interrupt_code(session))  # nothing running
        kept = asyncio.run(AsyncClient(self.daemon.url, api_key=AGENT_KEY).run_code(session.id, "x"))
        self.assertEqual((kept.result["json"], kept.interpreter_state), (20, "kept"))
        client.end_session(session)

    def test_another_agent_gets_not_found(self):
        session = self.client().create_session("workspace")
        other = Client(self.daemon.url, api_key=OTHER_AGENT_KEY)
        with self.assertRaises(airlock.NotFoundError):
            other.exec(session.id, "true")
        with self.assertRaises(airlock.NotFoundError):
            other.end_session(session.id)
        self.assertEqual(other.sessions(), [])
        with self.assertRaises(airlock.NotFoundError):
            self.client().create_session("no-such-template")

    def test_async_client(self):
        async def run():
            client = AsyncClient.from_client(self.client())
            session = await client.create_session("workspace")
            result = await client.exec(session, ["sh", "-c", "echo $GREETING"], env={"GREETING": "hi"})
            written = await client.write_file(session, "greeting.txt", b"hello")
            read = await client.read_file(session, "greeting.txt")
            forked = await client.fork(session, "1h")
            copied = await client.read_file(forked, "greeting.txt")
            for snapshot in await client.snapshots():  # the fork's, which it keeps
                await client.delete_snapshot(snapshot)
            left = await client.snapshots()
            await client.end_session(forked)
            await client.end_session(session)
            return result, written, read, copied, left
        result, written, read, copied, left = asyncio.run(run())
        self.assertEqual(result.stdout, "hi\n")
        self.assertEqual((written.size, read), (5, b"hello"))
        self.assertEqual((copied, left), (b"hello", []))

    def test_a_file_is_written_listed_read_and_removed(self):
        client = self.client()
        session = client.create_session("workspace")
        content = b"first line\nsecond line\n"
        info = client.write_file(session, "notes/today.txt", content)
        self.assertEqual((info.path, info.type, info.size), ("notes/today.txt", "file", len(content)))
        self.assertEqual(info.sha256, hashlib.sha256(content).hexdigest())
        self.assertEqual(info.redactions, [])
        listed = {e.name: e for e in client.list_files(session, "notes")}
        self.assertEqual(list(listed), ["today.txt"])
        self.assertEqual((listed["today.txt"].type, listed["today.txt"].size), ("file", len(content)))
        self.assertIsInstance(listed["today.txt"].modified, int)
        self.assertGreater(listed["today.txt"].modified, 1_600_000_000)  # seconds, not milliseconds
        self.assertLess(listed["today.txt"].modified, 100_000_000_000)
        workspace = {e.name: e.type for e in client.list_files(session)}
        self.assertEqual(workspace.get("notes"), "directory")
        read = client.read_file(session, "/notes/today.txt")  # a leading "/" is the workspace's
        self.assertEqual(hashlib.sha256(read).hexdigest(), info.sha256)
        self.assertEqual(client.exec(session, ["cat", "/work/notes/today.txt"]).stdout, content.decode())
        with self.assertRaises(airlock.ConflictError) as caught:
            client.read_file(session, "notes")
        self.assertEqual(caught.exception.kind, "is_a_directory")
        made = client.make_directory(session, "notes/empty")
        self.assertEqual((made.path.rstrip("/"), made.type), ("notes/empty", "directory"))
        client.remove_file(session, "notes/today.txt")
        client.remove_file(session, "notes/empty")
        self.assertEqual(client.list_files(session, "notes"), [])
        with self.assertRaises(airlock.NotFoundError) as caught:
            client.read_file(session, "notes/today.txt")
        self.assertEqual(caught.exception.kind, "file_not_found")
        client.end_session(session)

    def test_a_large_file_is_streamed_up_and_down(self):
        client = self.client()
        session = client.create_session("workspace")
        size = 5 * 1024 * 1024
        content = os.urandom(size).translate(HIGH_BIT)
        with tempfile.TemporaryFile() as source:
            source.write(content)
            source.seek(0)
            info = client.write_file(session, "data/blob.bin", source)  # chunked, from the file
        self.assertEqual((info.type, info.size), ("file", size))
        self.assertEqual(info.sha256, hashlib.sha256(content).hexdigest())
        with tempfile.TemporaryFile() as dest:
            self.assertEqual(client.download_file(session, "data/blob.bin", dest), size)
            dest.seek(0)
            self.assertEqual(hashlib.sha256(dest.read()).hexdigest(), info.sha256)
        client.end_session(session)

    def test_a_path_out_of_the_workspace_is_refused(self):
        client = self.client()
        session = client.create_session("workspace")
        refused = (airlock.PermissionDeniedError, airlock.InvalidInputError)
        with self.assertRaises(refused) as caught:
            client.read_file(session, "../../etc/passwd")
        self.assertIn(caught.exception.kind, ("outside_workspace", "invalid_path"))
        with self.assertRaises(refused) as caught:
            client.write_file(session, "../../tmp/escaped.txt", b"out")
        self.assertIn(caught.exception.kind, ("outside_workspace", "invalid_path"))
        client.end_session(session)

    def test_another_agent_cannot_reach_a_sessions_files(self):
        client = self.client()
        session = client.create_session("workspace")
        client.write_file(session, "mine.txt", b"mine")
        other = Client(self.daemon.url, api_key=OTHER_AGENT_KEY)
        for attempt in (lambda: other.read_file(session.id, "mine.txt"),
                        lambda: other.list_files(session.id),
                        lambda: other.write_file(session.id, "mine.txt", b"theirs"),
                        lambda: other.remove_file(session.id, "mine.txt")):
            with self.assertRaises(airlock.NotFoundError) as caught:
                attempt()
            self.assertEqual(caught.exception.kind, "not_found")
        self.assertEqual(client.read_file(session, "mine.txt"), b"mine")
        client.end_session(session)

    def test_a_snapshot_forks_the_workspace_for_its_owner_only(self):
        client = self.client()
        session = client.create_session("workspace")
        client.write_file(session, "notes/kept.txt", b"kept")
        snapshot = client.snapshot(session, retention="1h")
        self.assertEqual((snapshot.session_id, snapshot.template), (session.id, "workspace"))
        self.assertEqual(snapshot.owner.get("principal"), "agent")
        self.assertEqual(snapshot.expires_ms - snapshot.created_ms, 3600 * 1000)
        self.assertEqual(len(snapshot.sha256), 64)
        self.assertGreater(snapshot.size, 0)

        fork = client.fork(session)
        self.assertNotEqual(fork.id, session.id)
        self.assertEqual(fork.template, "workspace")
        self.assertEqual(client.read_file(fork, "notes/kept.txt"), b"kept")
        client.write_file(fork, "notes/kept.txt", b"changed")  # the two go separate ways
        self.assertEqual(client.read_file(session, "notes/kept.txt"), b"kept")
        again = client.create_session(from_snapshot=snapshot.id, labels={"from": "snapshot"})
        self.assertEqual(client.read_file(again, "notes/kept.txt"), b"kept")

        listed = {s.id: s for s in client.snapshots()}
        self.assertIn(snapshot.id, listed)
        self.assertEqual(len(listed), 2)  # and the one fork took
        self.assertEqual({s.session_id for s in listed.values()}, {session.id})
        self.assertEqual(client.get_snapshot(snapshot.id).sha256, snapshot.sha256)

        other = Client(self.daemon.url, api_key=OTHER_AGENT_KEY)
        self.assertEqual(other.snapshots(), [])
        for attempt in (lambda: other.get_snapshot(snapshot.id),
                        lambda: other.delete_snapshot(snapshot.id),
                        lambda: other.create_session(from_snapshot=snapshot.id),
                        lambda: other.snapshot(session.id)):
            with self.assertRaises(airlock.NotFoundError) as caught:
                attempt()
            self.assertEqual(caught.exception.kind, "not_found")
        with self.assertRaises(airlock.InvalidInputError):
            client.create_session("another-template", from_snapshot=snapshot)  # a fork keeps its template
        with self.assertRaises(airlock.InvalidInputError):
            client.snapshot(session, retention="90d")
        with self.assertRaises(airlock.UsageError):
            client.create_session()

        for taken in listed.values():
            client.delete_snapshot(taken)
        self.assertEqual(client.snapshots(), [])
        with self.assertRaises(airlock.NotFoundError):
            client.get_snapshot(snapshot)
        self.assertEqual(client.read_file(again, "notes/kept.txt"), b"kept")  # its files are its own
        for s in (session, fork, again):
            client.end_session(s)


if __name__ == "__main__":
    unittest.main()


def read_until(fd, marker, timeout=15):
    """What `fd` gives until `marker` appears (or the timeout, or its end)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other side is gone
            break
        if not chunk:
            break
        seen += chunk
    return seen


class SessionShell(DaemonTest):
    def shell(self, session_id, *extra, key=AGENT_KEY):
        """airlock session shell on a pty of ours; returns the process and our end."""
        master, slave = pty.openpty()
        proc = subprocess.Popen([AIRLOCK, "session", "shell", session_id, "--server", self.daemon.url, "--key", key,
                                 *extra], stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                                env=dict(os.environ, TERM="xterm"))
        os.close(slave)
        self.addCleanup(os.close, master)
        self.addCleanup(proc.kill)
        return proc, master

    def test_a_terminal_from_a_real_one_with_its_exit_code(self):
        session = self.client().create_session("workspace")
        proc, tty = self.shell(session.id)
        os.write(tty, b"echo $TERM; cd /work && echo MARK-$((1+1))\r")
        shown = read_until(tty, b"MARK-2")
        self.assertIn(b"xterm\r\nMARK-2", shown)
        os.write(tty, b"sleep 1000\r")
        read_until(tty, b"sleep 1000\r\n", timeout=5)
        time.sleep(0.3)
        os.write(tty, b"\x03")  # raw mode: ^C goes to the session, not to the CLI
        os.write(tty, b"echo MARK-$((2+1)) $?; exit 4\r")
        shown = read_until(tty, b"MARK-3 130")
        self.assertIn(b"MARK-3 130", shown)
        self.assertEqual(proc.wait(timeout=15), 4)
        self.assertEqual(self.client().exec(session, "pgrep -x sleep || echo none").stdout, "none\n")

    def test_the_python_clients_terminal(self):
        client = self.client()
        session = client.create_session("workspace")
        with client.terminal(session, rows=30, cols=90, command="PS1='$ ' exec sh -i") as term:
            term.send("stty size; echo MARK-$((1+1))\r")
            self.assertIn(b"30 90\r\nMARK-2", term.read_until(b"MARK-2"))
            term.resize(40, 100)
            term.send("stty size; echo AKIAZ7Q3PLDX4RS6TB2V; echo MARK-$((2+1))\r")
            shown = term.read_until(b"MARK-3")
            self.assertIn(b"40 100\r\n", shown)
            self.assertNotIn(b"AKIAZ7Q3PLDX4RS6TB2V\r\n", shown)  # only its echo as typed
            term.send("sleep 1000\r")
            term.read_until(b"sleep 1000\r\n", timeout=5)
            time.sleep(0.3)
            term.signal("INT")  # to the shell's group: sh ignores it, the foreground's is its own
            term.send(b"\x03")
            term.send("exit 5\r")
            ended = term.wait()
            self.assertEqual((ended["verdict"], ended["exit_code"]), ("exit_nonzero", 5), ended)
            self.assertTrue(ended["redactions"])
        with self.assertRaises(airlock.NotFoundError):
            Client(self.daemon.url, api_key=OTHER_AGENT_KEY).terminal(session)

    def test_another_agent_is_refused(self):
        session = self.client().create_session("workspace")
        proc, tty = self.shell(session.id, key=OTHER_AGENT_KEY)
        shown = read_until(tty, b"not_found")
        self.assertEqual(proc.wait(timeout=15), 1)
        self.assertIn(b"HTTP 404", shown)



class SessionCode(DaemonTest):
    """`airlock session code`: cells from the command line, their output where a terminal user
    expects it, the exit status a script can test, ^C as an interrupt that keeps the state."""

    def code(self, session_id, *args, stdin=None, key=AGENT_KEY):
        return subprocess.run([AIRLOCK, "session", "code", session_id, "--server", self.daemon.url, "--key", key, *args],
                              input=stdin, capture_output=True, text=True, timeout=60)

    def test_cells_from_the_command_line(self):
        session = self.client().create_session("workspace")
        first = self.code(session.id, "-c", "x = 41\nprint('hi')\nx + 1")
        self.assertEqual((first.returncode, first.stdout), (0, "hi\n42\n"), first.stderr)
        raised = self.code(session.id, "-", stdin="x = x + 1\nx / 0\n")  # the code from stdin
        self.assertEqual(raised.returncode, 1, raised.stderr)
        self.assertIn("ZeroDivisionError", raised.stderr)
        self.assertIn("line 2", raised.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".py") as cell:
            cell.write("x\n")
            cell.flush()
            kept = self.code(session.id, cell.name, "--json")
        self.assertEqual(kept.returncode, 0, kept.stderr)
        self.assertEqual(json.loads(kept.stdout)["result"]["json"], 42)  # the cell that raised still ran its first line
        refused = self.code(session.id, "-c", "eval('1')")
        self.assertEqual(refused.returncode, 125)
        self.assertIn("code_rejected", refused.stderr)
        timed_out = self.code(session.id, "-c", "while True: pass", "--timeout", "1s")
        self.assertEqual(timed_out.returncode, 124, timed_out.stderr)
        self.assertIn("state is gone", timed_out.stderr)
        self.assertEqual(self.code(session.id, "-c", "1", key=OTHER_AGENT_KEY).returncode, 125)  # 404: not its session

    def test_a_figure_is_written_where_asked(self):
        session = self.client().create_session("workspace")
        with tempfile.TemporaryDirectory() as out:
            drawn = self.code(session.id, "-c", "import matplotlib.pyplot as plt\nplt.plot([1, 2])", "--images", out)
            self.assertEqual(drawn.returncode, 0, drawn.stderr)
            files = os.listdir(out)
            self.assertEqual(len(files), 1, drawn.stderr)
            with open(os.path.join(out, files[0]), "rb") as png:
                self.assertEqual(png.read(8), b"\x89PNG\r\n\x1a\n")

    def test_control_c_interrupts_the_cell_and_keeps_the_state(self):
        session = self.client().create_session("workspace")
        self.assertEqual(self.code(session.id, "-c", "y = 5").returncode, 0)
        proc = subprocess.Popen([AIRLOCK, "session", "code", session.id, "--server", self.daemon.url, "--key", AGENT_KEY,
                                 "-c", "import time\nwhile True: time.sleep(0.05)"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.kill)
        for _ in range(100):  # until the cell runs: a second cell is refused meanwhile
            time.sleep(0.1)
            try:
                self.client().run_code(session, "None")
            except airlock.ConflictError:
                break
        else:
            self.fail("the cell never ran")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 1, err)  # the cell ended with KeyboardInterrupt
        self.assertIn("KeyboardInterrupt", err)
        self.assertEqual(self.code(session.id, "-c", "y").stdout, "5\n")
