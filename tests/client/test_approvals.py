"""A critical tool through the client, against a real daemon: the call answers
pending_approval, an approver (another person, their own token or relayed by another agent)
approves or denies it from the client, and the agent gets the outcome by long poll."""
import asyncio
import threading
import unittest

from support import AGENT_KEY, OTHER_AGENT_KEY, DaemonTest

import airlock
from airlock import AsyncClient, Client


class Approvals(DaemonTest):
    def request(self, arguments, user="alice"):
        # alice may approve too: separation of duties must still keep her from her own call.
        return self.client().invoke("danger", arguments,
                                    subject_token=self.token(user, ("staff", "approvers")))

    def approver(self, sub="bob"):
        """A person calling directly: their own token as the bearer."""
        return Client(self.daemon.url, api_key=self.token(sub, ("staff", "approvers")))

    def test_pending_then_approved_by_another_person_then_the_long_poll_has_the_result(self):
        pending = self.request({"x": 1})
        self.assertEqual(pending.status, "pending_approval")
        self.assertFalse(pending.finished)
        self.assertIsNone(pending.output)
        self.assertTrue(pending.approval.id.startswith("apr-"))

        bob = self.approver()
        listed = [a.id for a in bob.approvals()]
        self.assertIn(pending.approval.id, listed)
        shown = bob.approval(pending.approval.id)
        self.assertEqual(shown.arguments, {"x": 1})
        self.assertEqual(shown.invocation_id, pending.id)
        self.assertTrue(shown.may_decide)
        self.assertEqual(len(shown.arguments_sha256), 64)

        # Nothing ran yet: a short long-poll answers what is stored.
        self.assertEqual(self.client().invocation(pending.id, wait=1).status, "pending_approval")
        decided = bob.approve(shown, "looked at it")  # bound to the arguments it showed
        self.assertEqual(decided.status, "approved")
        done = self.client().wait(pending, timeout=120, poll=10)
        self.assertEqual(done.status, "ok")
        self.assertEqual(done.output, {"echo": {"x": 1}})

    def test_the_agents_reason_reaches_the_approver_and_the_outcome_names_who_approved(self):
        pending = self.client().invoke("danger", {"x": 3}, reason="paying invoice 7",
                                       subject_token=self.token("alice", ("staff",)))
        bob = self.approver()
        shown = bob.approval(pending.approval.id)
        self.assertEqual(shown.reason, "paying invoice 7")
        bob.approve(shown, "invoice checked")
        done = self.client().wait(pending, timeout=120, poll=10)
        decision = done.raw["approval"]["decisions"][0]
        self.assertEqual((decision["approver"]["sub"], decision["reason"]), ("bob", "invoice checked"))
        with self.assertRaises(airlock.UsageError):
            self.client().invoke("danger", {"x": 3}, reason=7)  # type: ignore[arg-type]

    def test_separation_of_duties_and_a_decision_for_other_arguments_are_refused(self):
        pending = self.request({"x": 2})
        alice = self.token("alice", ("staff", "approvers"))
        with self.assertRaises(airlock.PermissionDeniedError):
            Client(self.daemon.url, api_key=alice).approve(pending.approval.id, "mine")
        with self.assertRaises(airlock.PermissionDeniedError):  # the asking agent relaying carol
            self.client().approve(pending.approval.id, "relayed",
                                  subject_token=self.token("carol", ("approvers",)))
        with self.assertRaises(airlock.ConflictError) as caught:
            self.approver().approve(pending.approval.id, "other", arguments_sha256="0" * 64)
        self.assertEqual(caught.exception.kind, "arguments_changed")
        # Another agent relaying a person's decision is that person's decision.
        relay = Client(self.daemon.url, api_key=OTHER_AGENT_KEY)
        decided = relay.approve(pending.approval.id, "relayed by another agent",
                                subject_token=self.token("carol", ("approvers",)))
        self.assertEqual(decided.status, "approved")
        with self.assertRaises(airlock.ConflictError):
            self.approver().approve(pending.approval.id, "again")
        self.assertEqual(self.client().wait(pending.id, timeout=120).output, {"echo": {"x": 2}})

    def test_a_denied_call_raises_approval_denied_from_the_wait(self):
        pending = self.request({"x": 3})
        denied = self.approver().deny(pending.approval.id, "not today")
        self.assertEqual(denied.status, "denied")
        with self.assertRaises(airlock.ApprovalDeniedError) as caught:
            self.client().wait(pending.id, timeout=120)
        self.assertIn("not today", caught.exception.message)
        self.assertEqual(caught.exception.invocation.status, "denied")
        self.assertEqual(self.client().invocation(pending.id).error.kind, "approval_denied")

    def test_invoke_can_wait_for_the_approval_itself(self):
        outcome = {}

        def agent():
            outcome["inv"] = self.client().invoke("danger", {"x": 4},
                                                  subject_token=self.token("alice"),
                                                  wait_for_approval=120)

        thread = threading.Thread(target=agent)
        thread.start()
        bob = self.approver()
        approval = self._find_pending(bob, {"x": 4})
        bob.approve(approval, "fine")
        thread.join(150)
        self.assertEqual(outcome["inv"].output, {"echo": {"x": 4}})

    def test_the_async_client_waits_while_another_task_approves(self):
        async def main():
            agent = AsyncClient(self.daemon.url, api_key=AGENT_KEY)
            bob = AsyncClient(self.daemon.url, api_key=self.token("bob", ("approvers",)))
            pending = await agent.invoke("danger", {"x": 5}, self.token("alice"))
            waiting = asyncio.create_task(agent.wait(pending, timeout=120, poll=10))
            shown = await bob.approval(pending.approval.id)
            await bob.approve(shown, "async")
            return await waiting

        self.assertEqual(asyncio.run(main()).output, {"echo": {"x": 5}})

    def test_a_wait_that_runs_out_raises_with_the_pending_invocation(self):
        pending = self.request({"x": 6})
        with self.assertRaises(airlock.WaitTimeoutError) as caught:
            self.client().wait(pending, timeout=1, poll=1)
        self.assertEqual(caught.exception.invocation.status, "pending_approval")
        self.approver().deny(pending.approval.id, "cleanup")

    def _find_pending(self, client, arguments):
        for _ in range(600):  # the agent's call is on its way; at most ~60 s
            for a in client.approvals():
                full = client.approval(a.id)
                if full.arguments == arguments:
                    return full
            threading.Event().wait(0.1)
        self.fail(f"no pending approval for {arguments}")


if __name__ == "__main__":
    unittest.main()
