"""`airlock call` and `airlock tools list` against a listener that records the raw bytes it
receives: hostile tool names, --server values and API keys are refused before connecting,
so nothing reaches the wire (a --subject-token with a line break too); a valid call sends
exactly one request, with the key only in its own Authorization header. `airlock session put`
percent-encodes every segment of a hostile remote path and streams the file chunked; `session
create --from-snapshot` sends no template, `session snapshot` its retention."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

AIRLOCK = sys.argv.pop(1)
KEY = "test-key-0123"
ANSWER = b'{"id":"x","status":"ok"}'


class Recorder:
    """Accepts connections on 127.0.0.1, answers each with one canned 200, keeps the bytes."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.received = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    head, _, body = data.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value.strip())
                    while len(body) < length:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        body += chunk
                        data += chunk
                    # Whatever else arrives (a smuggled second request) is recorded too.
                    conn.settimeout(0.2)
                    try:
                        while True:
                            chunk = conn.recv(65536)
                            if not chunk:
                                break
                            data += chunk
                    except OSError:
                        pass
                    # Kept before answering: the client exits on the answer and the test
                    # reads the list at once (appended after, it was sometimes still empty).
                    self.received.append(data)
                    data = None
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(ANSWER)
                                 + ANSWER)
                except OSError:
                    pass
                if data is not None:
                    self.received.append(data)

    def close(self):
        self.sock.close()


def airlock(*args, env_key=None, stdin=None):
    env = dict(os.environ)
    env.pop("AIRLOCK_API_KEY", None)
    if env_key is not None:
        env["AIRLOCK_API_KEY"] = env_key
    return subprocess.run([AIRLOCK, *args], capture_output=True, env=env, timeout=60, input=stdin)


def dechunk(body):
    """A chunked body's content; fails on anything but chunks and the last one."""
    content = b""
    while True:
        size, _, body = body.partition(b"\r\n")
        size = int(size, 16)
        if size == 0:
            assert body == b"\r\n", body
            return content
        content += body[:size]
        assert body[size:size + 2] == b"\r\n"
        body = body[size + 2:]


class ClientInjection(unittest.TestCase):
    def setUp(self):
        self.recorder = Recorder()
        self.server = "http://127.0.0.1:%d" % self.recorder.port

    def tearDown(self):
        self.recorder.close()

    def assert_refused(self, result):
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(self.recorder.received, [], "bytes reached the listener")

    def test_crlf_in_tool_name_is_refused_before_connecting(self):
        name = "x/invoke HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET /v1/tools/steal HTTP/1.1\r\nX-A: "
        result = airlock("call", name, "--server", self.server, "--key", KEY)
        self.assert_refused(result)
        self.assertIn(b"is not a tool name", result.stderr)

    def test_header_injection_in_tool_name_is_refused(self):
        self.assert_refused(airlock("call", "x\r\nX-Injected: 1", "--server", self.server,
                                    env_key=KEY))

    def test_names_outside_the_config_rule_are_refused(self):
        for name in ["Upper", "a b", "a/b", "..%2f", "a?b", "a#b", "", "é", "a\x7f"]:
            with self.subTest(name=name):
                self.assert_refused(airlock("call", name, "--server", self.server, "--key", KEY))

    def test_hostile_server_urls_are_refused(self):
        port = self.recorder.port
        for url in ["http://127.0.0.1:%d\r\nX-Injected: 1" % port,
                    "http://127.0.0.1:%d/\r\nX: 1" % port,
                    "http://user@127.0.0.1:%d" % port,
                    "http://127.0.0.1:%d/v1/other" % port,
                    "http://127.0.0.1:%dx" % port,
                    "http://127.0.0.1:0",
                    "http://127.0.0.1:99999",
                    "ftp://127.0.0.1:%d" % port,
                    "https://user@127.0.0.1:%d" % port,
                    "http://[::1",
                    "http://"]:
            with self.subTest(url=url):
                self.assert_refused(airlock("call", "echo", "--server", url, "--key", KEY))
                self.assert_refused(airlock("tools", "list", "--server", url, "--key", KEY))

    def test_tls_options_need_an_https_server(self):
        for options in [["--cacert", "/dev/null"], ["--cert", "/dev/null"],
                        ["--cert-key", "/dev/null"]]:
            with self.subTest(options=options):
                result = airlock("tools", "list", "--server", self.server, "--key", KEY, *options)
                self.assert_refused(result)
                self.assertIn(b"need an https:// --server", result.stderr)

    def test_key_with_line_break_is_refused(self):
        self.assert_refused(airlock("call", "echo", "--server", self.server,
                                    env_key=KEY + "\r\nX-Injected: 1"))
        self.assert_refused(airlock("tools", "list", "--server", self.server,
                                    "--key", KEY + "\nX: 1"))

    def test_subject_token_with_line_break_is_refused(self):
        for token in ["a.b.c\r\nX-Injected: 1", "a.b.c\nX: 1", "a.b.c\r\n\r\nGET / HTTP/1.1", "a b.c"]:
            with self.subTest(token=token):
                result = airlock("call", "echo", "--server", self.server, "--key", KEY,
                                 "--subject-token", token)
                self.assert_refused(result)
                self.assertIn(b"subject token may only hold visible ASCII", result.stderr)

    def test_subject_token_goes_in_its_own_header(self):
        result = airlock("call", "echo", "--server", self.server, "--key", KEY,
                         "--subject-token", "aaa.bbb.ccc")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(self.recorder.received), 1)
        lines = self.recorder.received[0].partition(b"\r\n\r\n")[0].split(b"\r\n")
        self.assertIn(b"Airlock-Subject-Token: aaa.bbb.ccc", lines)
        self.assertIn(b"Authorization: Bearer " + KEY.encode(), lines)

    def test_valid_call_sends_one_clean_request(self):
        result = airlock("call", "web.fetch_v2", "--server", self.server + "/", "--key", KEY)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(self.recorder.received), 1)
        data = self.recorder.received[0]
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        self.assertEqual(lines[0], b"POST /v1/tools/web.fetch_v2/invoke HTTP/1.1")
        self.assertIn(b"Authorization: Bearer " + KEY.encode(), lines)
        self.assertIn(b"Host: 127.0.0.1:%d" % self.recorder.port, lines)
        self.assertEqual(body, b'{"arguments":{}}')
        self.assertEqual(data.count(b"HTTP/1.1"), 1)

    def test_session_put_encodes_the_path_and_streams_the_file_chunked(self):
        content = b"line\r\nX-Injected: 1\r\n\r\nGET / HTTP/1.1\r\n"
        remote = "/a b/c?d#e\r\nX: 1/../%2e"
        with tempfile.NamedTemporaryFile() as f:
            f.write(content)
            f.flush()
            for source, stdin in ((f.name, None), ("-", content)):
                with self.subTest(source=source):
                    self.recorder.received.clear()
                    result = airlock("session", "put", "--server", self.server, "--key", KEY, "ses 1", source,
                                     remote, stdin=stdin)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    self.assertEqual(len(self.recorder.received), 1)
                    head, _, body = self.recorder.received[0].partition(b"\r\n\r\n")
                    lines = head.split(b"\r\n")
                    self.assertEqual(lines[0], b"PUT /v1/sessions/ses%201/files/a%20b/c%3Fd%23e%0D%0AX%3A%201/../%252e HTTP/1.1")
                    self.assertIn(b"Transfer-Encoding: chunked", lines)
                    self.assertIn(b"Content-Type: application/octet-stream", lines)
                    self.assertEqual(dechunk(body), content)

    def test_session_create_from_a_snapshot_and_snapshot_send_what_was_given(self):
        self.assert_refused(airlock("session", "create", "--server", self.server, "--key", KEY))  # neither
        for args, line, body in (
                (("create", "--from-snapshot", "snap 1"), b"POST /v1/sessions HTTP/1.1", {"fromSnapshot": "snap 1"}),
                (("snapshot", "ses 1", "--retention", "1h"), b"POST /v1/sessions/ses%201/snapshot HTTP/1.1",
                 {"retention": "1h"})):
            with self.subTest(args=args):
                self.recorder.received.clear()
                # The canned 200 is not the 201 these expect (exit 1): only the request is checked.
                airlock("session", *args, "--server", self.server, "--key", KEY)
                self.assertEqual(len(self.recorder.received), 1)
                head, _, sent = self.recorder.received[0].partition(b"\r\n\r\n")
                self.assertEqual(head.split(b"\r\n")[0], line)
                self.assertEqual(json.loads(sent), body)


if __name__ == "__main__":
    unittest.main()
