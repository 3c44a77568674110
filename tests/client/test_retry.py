"""Retries on 429 and 503 honouring Retry-After, bounded. First against the real daemon made
to answer 429 (one worker, no queue, a slow call holding it); then the cases the daemon does
not produce on demand (an HTTP-date Retry-After, one over the bound, a 503 that carries an
invocation, a proxy's non-JSON page) against a scripted server on loopback."""
import http.server
import json
import threading
import unittest

from support import AGENT_KEY, DaemonTest

import airlock
from airlock import Client, RetryPolicy


class Recorder:
    """A RetryPolicy's sleep and on_retry that only record (the tests never wait on a clock
    they assert)."""

    def __init__(self, really_sleep=False):
        self.sleeps, self.retries = [], []
        self.really_sleep = really_sleep

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        if self.really_sleep:
            threading.Event().wait(seconds)

    def on_retry(self, attempt, status, delay):
        self.retries.append((attempt, status, delay))

    def policy(self, **options):
        return RetryPolicy(sleep=self.sleep, on_retry=self.on_retry, **options)


class FullOnTheRealDaemon(DaemonTest):
    # One worker and no queue: a second call of the same agent is past its place
    # (maxConcurrentInvocations + queueLength without a `concurrent` quota): 429 quota_exceeded.
    server = "{listen: 127.0.0.1:0, maxConcurrentInvocations: 1, queueLength: 0, drainTimeout: 5s}"

    def test_a_full_queue_is_retried_after_retry_after_until_it_runs(self):
        holder = threading.Thread(target=lambda: self.client().invoke("slow", {"seconds": 6}))
        holder.start()
        try:
            for _ in range(600):  # until the slow call holds the one worker (at most ~60 s)
                if self.client().invocations(status="running"):
                    break
                threading.Event().wait(0.1)
            else:
                self.fail("the slow call never ran")

            with self.assertRaises(airlock.QuotaExceededError) as caught:
                self.client(retry=RetryPolicy(max_retries=0)).invoke("echo", {"n": 1})
            self.assertEqual((caught.exception.status, caught.exception.kind), (429, "quota_exceeded"))
            self.assertEqual(caught.exception.quota, "concurrent")
            self.assertEqual(caught.exception.retry_after, 1.0)

            recorder = Recorder(really_sleep=True)
            inv = self.client(retry=recorder.policy(max_retries=60)).invoke("echo", {"n": 2})
            self.assertEqual(inv.output, {"echo": {"n": 2}})
            self.assertGreaterEqual(len(recorder.retries), 1)
            self.assertTrue(all(status == 429 for _, status, _ in recorder.retries))
            self.assertTrue(all(s == 1.0 for s in recorder.sleeps), "Retry-After: 1 honoured")
        finally:
            holder.join(60)

    def test_retries_are_bounded(self):
        holder = threading.Thread(target=lambda: self.client().invoke("slow", {"seconds": 6}))
        holder.start()
        try:
            for _ in range(600):
                if self.client().invocations(status="running"):
                    break
                threading.Event().wait(0.1)
            recorder = Recorder()  # does not wait: the worker stays busy through every retry
            with self.assertRaises(airlock.RateLimitedError):
                self.client(retry=recorder.policy(max_retries=3)).invoke("echo", {})
            self.assertEqual([a for a, _, _ in recorder.retries], [1, 2, 3])
        finally:
            holder.join(60)


class Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next (status, headers, body) of the server's script."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.seen.append(self.path)
        status, headers, body = self.server.script.pop(0)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST

    def log_message(self, *args):
        pass


class EdgeCases(unittest.TestCase):
    def serve(self, script):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
        server.script, server.seen = list(script), []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return server

    def client(self, server, recorder, **options):
        return Client(f"http://127.0.0.1:{server.server_address[1]}", api_key=AGENT_KEY,
                      retry=recorder.policy(**options))

    ok = (200, {}, {"id": "i-1", "tool": "echo", "status": "ok", "output": {"a": 1}, "error": None})
    full = (429, {"Retry-After": "1"}, {"error": {"kind": "queue_full", "message": "full"}})

    def test_an_http_date_retry_after_is_honoured(self):
        server = self.serve([(503, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
                              {"error": {"kind": "draining", "message": "stopping"}}), self.ok])
        recorder = Recorder()
        inv = self.client(server, recorder).invoke("echo", {})
        self.assertEqual(inv.output, {"a": 1})
        self.assertEqual(recorder.sleeps, [0.0])  # a date in the past: retry now

    def test_a_retry_after_over_the_bound_is_not_waited_for(self):
        server = self.serve([(429, {"Retry-After": "3600"}, {"error": {"kind": "queue_full", "message": "full"}})])
        recorder = Recorder()
        with self.assertRaises(airlock.RateLimitedError) as caught:
            self.client(server, recorder, max_delay=30).invoke("echo", {})
        self.assertEqual(caught.exception.retry_after, 3600.0)
        self.assertEqual(recorder.sleeps, [])

    def test_without_retry_after_the_backoff_is_bounded_and_jittered(self):
        server = self.serve([(503, {}, b"<html>bad gateway</html>")] * 3 + [self.ok])
        recorder = Recorder()
        inv = self.client(server, recorder, backoff=0.5).invoke("echo", {})
        self.assertEqual(inv.status, "ok")
        self.assertEqual(len(recorder.sleeps), 3)
        for attempt, slept in enumerate(recorder.sleeps):
            self.assertTrue(0 <= slept <= 0.5 * 2 ** attempt, recorder.sleeps)

    def test_a_503_that_made_an_invocation_is_not_sent_again(self):
        refused = {"id": "i-2", "tool": "echo", "status": "error", "output": None,
                   "error": {"kind": "credential_unavailable", "message": "the token service is down"}}
        server = self.serve([(503, {}, refused), self.ok])
        recorder = Recorder()
        with self.assertRaises(airlock.UnavailableError) as caught:
            self.client(server, recorder).invoke("echo", {})
        self.assertEqual(caught.exception.invocation.id, "i-2")
        self.assertEqual(len(server.seen), 1)

    def test_storage_unavailable_is_typed_and_not_sent_again(self):
        refused = {"id": "i-3", "tool": "echo", "status": "error", "output": None,
                   "error": {"kind": "storage_unavailable",
                             "message": "the state database: not connected"}}
        server = self.serve([(503, {"Retry-After": "1"}, refused), self.ok])
        recorder = Recorder()
        with self.assertRaises(airlock.StorageUnavailableError) as caught:
            self.client(server, recorder).invoke("echo", {})
        self.assertIsInstance(caught.exception, airlock.UnavailableError)
        self.assertEqual(caught.exception.kind, "storage_unavailable")
        self.assertEqual(caught.exception.retry_after, 1)
        self.assertEqual(len(server.seen), 1, "a call that may have run is not sent again")

    def test_a_non_json_error_page_is_classed_by_its_status(self):
        server = self.serve([(502, {}, b"<html>bad gateway</html>")])
        with self.assertRaises(airlock.ServerError) as caught:
            self.client(server, Recorder()).tools()
        self.assertEqual(caught.exception.status, 502)

    def test_429s_are_retried_after_their_retry_after(self):
        server = self.serve([self.full, self.full, self.ok])
        recorder = Recorder()
        self.assertEqual(self.client(server, recorder).invoke("echo", {}).id, "i-1")
        self.assertEqual(recorder.sleeps, [1.0, 1.0])
        self.assertEqual(server.seen, ["/v1/tools/echo/invoke"] * 3)


if __name__ == "__main__":
    unittest.main()
