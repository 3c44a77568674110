"""The client against a real daemon: tools, invocations, typed errors, calls on behalf of a
user (subject token and token exchange), and the asyncio client."""
import asyncio
import os
import re
import subprocess
import unittest

from support import AGENT_KEY, HERE, LIMITED_KEY, DaemonTest

import airlock
from airlock import AsyncClient, Client


class ErrorKinds(unittest.TestCase):
    """Every error kind the daemon has (src/pipeline/error.cpp, and the kinds its HTTP layer
    answers with) has its class here: a kind added to the daemon fails this until the client
    knows it."""

    def test_every_kind_of_the_daemon_is_known(self):
        from airlock.errors import ERROR_CLASSES, TOOL_FAILURE_KINDS
        root = os.path.join(HERE, "..", "..", "src")
        with open(os.path.join(root, "pipeline", "error.cpp")) as f:
            kinds = set(re.findall(r'\{ErrorKind::\w+, "(\w+)"\}', f.read()))
        self.assertGreater(len(kinds), 20)
        for folder, _, names in os.walk(os.path.join(root, "server")):
            for name in names:
                if name.endswith(".cpp"):
                    with open(os.path.join(folder, name)) as f:
                        kinds |= set(re.findall(r'(?:error_response|answer_error)\(\d+, "(\w+)"', f.read()))
        unknown = kinds - set(ERROR_CLASSES) - TOOL_FAILURE_KINDS
        self.assertEqual(unknown, set())


class Tools(DaemonTest):
    def test_lists_the_tools_the_caller_may_invoke(self):
        names = {t.name for t in self.client().tools()}
        self.assertTrue({"echo", "docs.read", "crash", "danger"} <= names, names)
        self.assertNotIn("payroll", names, "it requires a user, and this call has none")
        self.assertIn("payroll", {t.name for t in self.client().as_user(self.token("alice")).tools()})
        self.assertEqual([t.name for t in self.client(LIMITED_KEY).tools()], ["echo"])

    def test_one_tool_has_its_schemas(self):
        echo = self.client().tool("echo")
        self.assertEqual(echo.description, "Returns its arguments.")
        self.assertEqual(echo.risk, "low")
        self.assertEqual(echo.input_schema["properties"]["n"]["maximum"], 10)


class Invoke(DaemonTest):
    def test_an_allowed_call_returns_its_output_and_audit_record(self):
        inv = self.client().invoke("echo", {"n": 3})
        self.assertEqual(inv.status, "ok")
        self.assertTrue(inv.ok)
        self.assertEqual(inv.output, {"echo": {"n": 3}})
        self.assertIsNone(inv.error)
        self.assertEqual(inv.verdict, "ok")
        self.assertIsNotNone(inv.audit)
        self.assertEqual(len(inv.audit.leaf_hash), 64)
        self.assertEqual(inv.actor, {"principal": "agent"})
        stored = self.client().invocation(inv.id)
        self.assertEqual(stored.output, inv.output)
        self.assertIn("to the log", stored.log)

    def test_a_tool_error_is_returned_not_raised_and_raise_for_error_types_it(self):
        inv = self.client().invoke("crash", {})
        self.assertEqual(inv.status, "error")
        self.assertEqual(inv.error.kind, "tool_crashed")
        self.assertIsNone(inv.output)
        with self.assertRaises(airlock.ToolError) as caught:
            inv.raise_for_error()
        self.assertEqual(caught.exception.kind, "tool_crashed")
        self.assertIs(caught.exception.invocation, inv)

    def test_a_denied_call_raises_its_typed_exception_with_the_rule(self):
        with self.assertRaises(airlock.PermissionDeniedError) as caught:
            self.client(LIMITED_KEY).invoke("crash", {})
        e = caught.exception
        self.assertEqual((e.kind, e.status), ("forbidden", 403))
        self.assertEqual(e.rule, "principal limited tools")
        self.assertIn("may not call tool 'crash'", e.message)
        self.assertIsNotNone(e.invocation)  # a refused call is audited like any other
        self.assertEqual(e.invocation.status, "denied")
        self.assertIsNotNone(e.invocation.audit)

    def test_each_error_kind_has_its_class(self):
        with self.assertRaises(airlock.InvalidInputError) as caught:
            self.client().invoke("echo", {"n": 11})
        self.assertEqual(caught.exception.pointer, "/arguments/n")
        with self.assertRaises(airlock.UnknownToolError):
            self.client().invoke("no-such-tool", {})
        with self.assertRaises(airlock.AuthenticationError) as caught:
            self.client("wrong-key-000").invoke("echo", {})
        self.assertEqual(caught.exception.status, 401)
        with self.assertRaises(airlock.SubjectRequiredError):
            self.client().invoke("payroll", {})
        with self.assertRaises(airlock.NotFoundError):
            self.client().invocation("no-such-invocation")

    def test_hostile_names_and_credentials_are_refused_before_connecting(self):
        for name in ("../approvals", "ECHO", "echo/invoke", "echo?x=1", "", "a b"):
            with self.assertRaises(airlock.UsageError, msg=name):
                self.client().invoke(name, {})
        with self.assertRaises(airlock.UsageError):
            Client(self.daemon.url, api_key="key\r\nX-Injected: 1")
        with self.assertRaises(airlock.UsageError):
            self.client().invoke("echo", {}, subject_token="tok\nen")
        for url in ("ftp://127.0.0.1", "http://user@127.0.0.1:1", "http://127.0.0.1:1/v1",
                    "http://127.0.0.1:0", "127.0.0.1:8750"):
            with self.assertRaises(airlock.UsageError, msg=url):
                Client(url, api_key=AGENT_KEY)
        with self.assertRaises(airlock.UsageError):
            self.client().invoke("echo", ["not", "an", "object"])

    def test_a_daemon_that_is_not_there_is_a_transport_error(self):
        client = Client("http://127.0.0.1:1", api_key=AGENT_KEY, timeout=5)
        with self.assertRaises(airlock.TransportError):
            client.tools()

    def test_the_history_lists_the_callers_invocations(self):
        inv = self.client().invoke("echo", {"n": 1})
        ids = [i["id"] for i in self.client().invocations(tool="echo", limit=500)]
        self.assertIn(inv.id, ids)


class OnBehalfOfAUser(DaemonTest):
    def test_a_subject_token_makes_the_call_for_that_user(self):
        alice = self.token("alice")
        inv = self.client().invoke("payroll", {"n": 1}, subject_token=alice)
        self.assertEqual(inv.status, "ok")
        self.assertEqual(inv.subject, {"issuer": "corp", "sub": "alice"})
        inv = self.client().as_user(alice).invoke("payroll", {"n": 2})
        self.assertEqual(inv.subject["sub"], "alice")

    def test_a_user_without_a_role_is_refused_even_when_the_agent_may(self):
        mallory = self.token("mallory", groups=("guests",))
        with self.assertRaises(airlock.PermissionDeniedError) as caught:
            self.client().invoke("echo", {}, subject_token=mallory)
        self.assertIn("mallory", caught.exception.message)

    def test_the_token_exchange_gives_a_scoped_airlock_token(self):
        alice = self.token("alice")
        exchanged = self.client().exchange_token(alice, scope=["payroll"])
        self.assertEqual(exchanged.scope, "payroll")
        self.assertGreater(exchanged.expires_in, 0)
        self.assertNotIn(exchanged.access_token, repr(exchanged))
        as_alice = self.client().as_user(alice, exchange=True, scope=["payroll"])
        inv = as_alice.invoke("payroll", {"n": 3})
        self.assertEqual((inv.status, inv.subject["sub"], inv.actor["principal"]), ("ok", "alice", "agent"))
        with self.assertRaises(airlock.PermissionDeniedError) as caught:
            as_alice.invoke("echo", {})
        self.assertEqual(caught.exception.rule, "token scope")

    def test_a_refused_exchange_is_a_token_exchange_error(self):
        with self.assertRaises(airlock.TokenExchangeError) as caught:
            self.client().exchange_token("not.a.token")
        self.assertEqual(caught.exception.kind, "invalid_grant")
        with self.assertRaises(airlock.TokenExchangeError) as caught:
            self.client().exchange_token(self.token("alice"), scope=["no-such-tool"])
        self.assertEqual(caught.exception.kind, "invalid_scope")


class Tls(DaemonTest):
    """The daemon over TLS: the client checks its certificate and its name."""
    server = "{listen: 127.0.0.1:0, tls: {certFile: cert.pem, keyFile: key.pem}}"

    @classmethod
    def prepare(cls, directory):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "1",
                        "-subj", "/CN=airlock-test", "-addext", "subjectAltName=IP:127.0.0.1"],
                       cwd=directory, check=True, capture_output=True)
        cls.cert = os.path.join(directory, "cert.pem")

    def test_a_trusted_certificate_works_and_others_are_refused(self):
        self.assertTrue(self.daemon.url.startswith("https://"))
        trusted = Client(self.daemon.url, api_key=AGENT_KEY, cafile=self.cert)
        self.assertEqual(trusted.invoke("echo", {"n": 1}).output, {"echo": {"n": 1}})
        with self.assertRaises(airlock.TransportError) as caught:  # the system's CAs only
            Client(self.daemon.url, api_key=AGENT_KEY).tools()
        self.assertIn("CERTIFICATE_VERIFY_FAILED", caught.exception.message)
        wrong_name = self.daemon.url.replace("127.0.0.1", "localhost")
        with self.assertRaises(airlock.TransportError) as caught:  # the certificate is for 127.0.0.1 only
            Client(wrong_name, api_key=AGENT_KEY, cafile=self.cert).tools()
        self.assertIn("mismatch", caught.exception.message)
        with self.assertRaises(airlock.UsageError):
            Client(self.daemon.url.replace("https", "http"), api_key=AGENT_KEY, cafile=self.cert)


class Async(DaemonTest):
    def test_async_invoke_runs_calls_concurrently_and_raises_typed_errors(self):
        async def main():
            client = AsyncClient(self.daemon.url, api_key=AGENT_KEY)
            tools = await client.tools()
            results = await asyncio.gather(*(client.invoke("echo", {"n": i}) for i in range(4)))
            with self.assertRaises(airlock.UnknownToolError):
                await client.invoke("no-such-tool", {})
            as_alice = await client.as_user(self.token("alice"), exchange=True)
            mine = await as_alice.invoke("payroll", {})
            self.assertEqual((await client.healthz())["status"], "ok")
            self.assertTrue((await client.audit_verify())["intact"])
            return tools, results, mine

        tools, results, mine = asyncio.run(main())
        self.assertIn("echo", {t.name for t in tools})
        self.assertEqual([r.output["echo"]["n"] for r in results], [0, 1, 2, 3])
        self.assertEqual(len({r.id for r in results}), 4)
        self.assertEqual(mine.subject["sub"], "alice")


if __name__ == "__main__":
    unittest.main()
