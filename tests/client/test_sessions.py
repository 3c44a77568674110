"""Sessions through the client, against a real daemon (docs/sessions.md): state kept across
execs, an exit code as a result, the output as DLP left it, another agent's 404, the end."""
import asyncio
import unittest

from support import OTHER_AGENT_KEY, DaemonTest

import airlock
from airlock import AsyncClient, Client


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
            await client.end_session(session)
            return result
        self.assertEqual(asyncio.run(run()).stdout, "hi\n")


if __name__ == "__main__":
    unittest.main()
