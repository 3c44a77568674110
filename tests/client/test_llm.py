"""tools_for_openai and tools_for_anthropic against a real daemon, and their tool calls
dispatched back through Airlock: plain dicts and SDK-like objects, a made-up tool name,
arguments that are not JSON, a call the daemon refuses, a critical tool that waits; the code
interpreter backed by a session, in both formats."""
import json
import threading
import types
import unittest

from support import LIMITED_KEY, DaemonTest

import airlock
from airlock.llm import CodeInterpreter, ToolBox


def ns(**kw):
    return types.SimpleNamespace(**kw)


class Definitions(DaemonTest):
    def test_openai_function_definitions(self):
        tools = {t["function"]["name"]: t for t in self.client().tools_for_openai()}
        echo = tools["echo"]
        self.assertEqual(set(echo), {"type", "function"})
        self.assertEqual(echo["type"], "function")
        self.assertEqual(set(echo["function"]), {"name", "description", "parameters"})
        self.assertEqual(echo["function"]["description"], "Returns its arguments.")
        self.assertEqual(echo["function"]["parameters"]["type"], "object")
        self.assertEqual(echo["function"]["parameters"]["properties"]["n"], {"type": "integer", "maximum": 10})
        self.assertIn("docs__read", tools)  # '.' is not allowed in those APIs' names
        self.assertEqual(tools["crash"]["function"]["parameters"], {"type": "object", "properties": {}})
        self.assertIn("human approval", tools["danger"]["function"]["description"])

    def test_anthropic_tool_definitions(self):
        tools = {t["name"]: t for t in self.client().tools_for_anthropic()}
        self.assertEqual(set(tools["echo"]), {"name", "description", "input_schema"})
        self.assertEqual(tools["echo"]["input_schema"]["properties"]["n"]["maximum"], 10)
        self.assertIn("docs__read", tools)
        self.assertEqual([t["name"] for t in self.client(LIMITED_KEY).tools_for_anthropic()], ["echo"])

    def test_names_that_would_meet_are_refused_not_guessed(self):
        a = airlock.Tool(name="docs.read", description="", risk="low")
        b = airlock.Tool(name="docs__read", description="", risk="low")
        with self.assertRaises(airlock.UsageError):
            ToolBox(self.client(), [a, b])
        with self.assertRaises(airlock.UsageError):
            ToolBox(self.client(), [airlock.Tool(name="x" * 65, description="", risk="low")])


class Dispatch(DaemonTest):
    def test_openai_tool_calls_round_trip(self):
        box = self.client().toolbox()
        calls = [
            {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": '{"n": 4}'}},
            ns(id="call_2", type="function", function=ns(name="docs__read", arguments='{"path": "a"}')),
            {"id": "call_3", "type": "function", "function": {"name": "echo", "arguments": '{"n": 11}'}},
            {"id": "call_4", "type": "function", "function": {"name": "rm_rf", "arguments": "{}"}},
            {"id": "call_5", "type": "function", "function": {"name": "echo", "arguments": "{not json"}},
            {"id": "call_6", "type": "function", "function": {"name": "crash", "arguments": ""}},
        ]
        messages = box.dispatch_openai(calls)
        self.assertEqual([m["tool_call_id"] for m in messages], [f"call_{i}" for i in range(1, 7)])
        self.assertTrue(all(m["role"] == "tool" and isinstance(m["content"], str) for m in messages))
        content = [json.loads(m["content"]) for m in messages]
        self.assertEqual(content[0], {"echo": {"n": 4}})
        self.assertEqual(content[1], {"echo": {"path": "a"}})  # ran as docs.read
        self.assertEqual(content[2]["error"]["kind"], "invalid_input")  # the daemon refused it
        self.assertEqual(content[3]["error"]["kind"], "unknown_tool")   # never sent to Airlock
        self.assertEqual(content[4]["error"]["kind"], "invalid_input")
        self.assertEqual(content[5]["error"]["kind"], "invalid_input")  # "" is not JSON either

    def test_anthropic_tool_use_round_trip(self):
        box = self.client().toolbox()
        content = [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"n": 2}},
            ns(type="tool_use", id="toolu_2", name="crash", input={}),
            {"type": "tool_use", "id": "toolu_3", "name": "echo", "input": {"n": 99}},
            # Not offered to an agent acting for nobody (it requires a user): never sent.
            {"type": "tool_use", "id": "toolu_4", "name": "payroll", "input": {}},
        ]
        message = box.dispatch_anthropic(content)
        self.assertEqual(message["role"], "user")
        results = message["content"]
        self.assertEqual([r["tool_use_id"] for r in results], ["toolu_1", "toolu_2", "toolu_3", "toolu_4"])
        self.assertTrue(all(r["type"] == "tool_result" for r in results))
        self.assertEqual(json.loads(results[0]["content"]), {"echo": {"n": 2}})
        self.assertNotIn("is_error", results[0])
        self.assertTrue(results[1]["is_error"])
        self.assertEqual(json.loads(results[1]["content"])["error"]["kind"], "tool_crashed")
        self.assertEqual(json.loads(results[2]["content"])["error"]["kind"], "invalid_input")
        self.assertTrue(results[2]["is_error"])
        self.assertEqual(json.loads(results[3]["content"])["error"]["kind"], "unknown_tool")
        self.assertIsNone(box.dispatch_anthropic([{"type": "text", "text": "done"}]))

    def test_a_raising_cell_tells_the_model_its_exception_and_line(self):
        """Issue #36: the model is told where the code goes and, when it raised, what and where."""
        tools = {t["name"]: t for t in self.client().tools_for_anthropic()}
        schema = tools["run-python"]["input_schema"]
        self.assertEqual(schema["required"], ["code"])
        self.assertEqual(schema["properties"]["code"]["type"], "string")
        box = self.client().toolbox()
        message = box.dispatch_anthropic([{"type": "tool_use", "id": "toolu_1", "name": "run-python",
                                           "input": {"code": "x = 1\nx.missing\n"}}])
        result = message["content"][0]
        self.assertTrue(result["is_error"])
        error = json.loads(result["content"])["error"]
        self.assertEqual(error["kind"], "code_error")
        self.assertEqual(error["details"]["name"], "AttributeError")
        self.assertEqual(error["details"]["line"], 2)
        self.assertIn('  File "<code>", line 2, in <module>', error["details"]["traceback"])
        inv = self.client().invoke("run-python", {"code": "print(1)\n1 / 0\n"})
        self.assertEqual(inv.error.kind, "code_error")
        self.assertEqual(inv.error.details["stdout"], "1\n")
        with self.assertRaises(airlock.ToolError):
            inv.raise_for_error()

    def test_a_critical_call_tells_the_model_it_waits(self):
        box = self.client().as_user(self.token("alice")).toolbox()
        [msg] = box.dispatch_openai([{"id": "c", "function": {"name": "danger", "arguments": "{}"}}])
        content = json.loads(msg["content"])
        self.assertEqual(content["status"], "pending_approval")
        self.assertTrue(content["approval"]["id"].startswith("apr-"))

    def test_a_box_that_waits_for_approvals_returns_the_approved_result(self):
        box = self.client().as_user(self.token("alice")).toolbox(wait_for_approval=120)
        out = {}
        call = {"id": "c", "function": {"name": "danger", "arguments": '{"y": 1}'}}
        worker = threading.Thread(target=lambda: out.setdefault("msgs", box.dispatch_openai([call])))
        worker.start()
        bob = airlock.Client(self.daemon.url, api_key=self.token("bob", ("approvers",)))
        for _ in range(600):  # until the call is pending (at most ~60 s)
            pending = [bob.approval(a.id) for a in bob.approvals()]
            pending = [a for a in pending if a.arguments == {"y": 1}]
            if pending:
                break
            threading.Event().wait(0.1)
        bob.approve(pending[0], "ok")
        worker.join(150)
        self.assertEqual(json.loads(out["msgs"][0]["content"]), {"echo": {"y": 1}})

    def test_a_bad_credential_is_raised_to_the_program_not_shown_to_the_model(self):
        box = self.client().toolbox()
        box.client = airlock.Client(self.daemon.url, api_key="revoked-key-0000")
        with self.assertRaises(airlock.AuthenticationError):
            box.dispatch_openai([{"id": "c", "function": {"name": "echo", "arguments": "{}"}}])



def openai_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class CodeInterpreterTool(DaemonTest):
    """Issue #36: a code-interpreter tool for OpenAI and Anthropic, backed by a session."""

    def test_openai_cells_share_their_state_in_one_session_that_close_ends(self):
        client = self.client()
        interpreter = client.code_interpreter("workspace")
        box = client.toolbox(code_interpreter=interpreter)
        tools = {t["function"]["name"]: t["function"] for t in box.openai_tools()}
        self.assertIn("echo", tools)  # beside the Airlock tools
        self.assertEqual(tools["code_interpreter"]["parameters"],
                         {"type": "object", "properties": {"code": {"type": "string", "description": "The Python to run"}},
                          "required": ["code"], "additionalProperties": False})
        self.assertIsNone(interpreter.session)  # made on the first call
        [first] = box.dispatch_openai([openai_call("c1", "code_interpreter", {"code": "x = 41\nprint('set')"})])
        self.assertEqual(json.loads(first["content"]), {"status": "ok", "stdout": "set\n"})
        session = interpreter.session
        self.assertEqual(client.session(session.id).state, "running")
        second, failing, rejected, bad = box.dispatch_openai([
            openai_call("c2", "code_interpreter", {"code": "x + 1"}),
            openai_call("c3", "code_interpreter", {"code": "def f():\n    return 1 / 0\nf()"}),
            openai_call("c4", "code_interpreter", {"code": "eval('x')"}),
            openai_call("c5", "code_interpreter", {"source": "x"}),
        ])
        self.assertEqual(json.loads(second["content"])["result"], "42")
        error = json.loads(failing["content"])
        self.assertEqual((error["status"], error["error"]["name"]), ("exception", "ZeroDivisionError"))
        self.assertIn("line 2, in f", "\n".join(error["error"]["traceback"]))
        self.assertEqual(json.loads(rejected["content"])["error"]["kind"], "code_rejected")
        self.assertEqual(json.loads(bad["content"])["error"]["kind"], "invalid_input")
        self.assertEqual(interpreter.session.id, session.id)  # one session throughout
        interpreter.close()
        with self.assertRaises(airlock.NotFoundError):
            client.session(session.id)

    def test_anthropic_gets_the_figure_as_an_image_and_the_with_block_ends_the_session(self):
        client = self.client()
        with client.code_interpreter("notebook", name="python") as interpreter:
            box = ToolBox.load(client, code_interpreter=interpreter)
            tools = {t["name"]: t for t in box.anthropic_tools()}
            self.assertEqual(tools["python"]["input_schema"]["required"], ["code"])
            message = box.dispatch_anthropic([
                {"type": "tool_use", "id": "toolu_1", "name": "python",
                 "input": {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nlen([1, 2, 3])"}},
                {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {"n": 1}},
            ])
            figure, echo = message["content"]
            self.assertNotIn("is_error", figure)
            text, image = figure["content"]
            self.assertEqual(json.loads(text["text"])["result"], "3")
            self.assertEqual((image["type"], image["source"]["media_type"]), ("image", "image/png"))
            self.assertTrue(image["source"]["data"].startswith("iVBORw0KGgo"))  # the PNG signature
            self.assertEqual(json.loads(echo["content"]), {"echo": {"n": 1}})
            session = interpreter.session
        with self.assertRaises(airlock.NotFoundError):
            client.session(session.id)

    def test_a_session_that_ended_is_told_to_the_model_and_the_next_call_starts_anew(self):
        client = self.client()
        interpreter = CodeInterpreter(client, "workspace")
        self.assertFalse(interpreter.call("c1", {"code": "x = 1"}).is_error)
        client.end_session(interpreter.session)  # as its idle timeout would
        gone = interpreter.call("c2", {"code": "x"})
        self.assertTrue(gone.is_error)
        self.assertEqual(json.loads(gone.content)["error"]["kind"], "session_ended")
        fresh = interpreter.call("c3", {"code": "x"})  # a new interpreter: x is not defined
        self.assertEqual(json.loads(fresh.content)["error"]["name"], "NameError")
        interpreter.close()

    def test_a_name_that_meets_an_airlock_tool_is_refused(self):
        client = self.client()
        with self.assertRaises(airlock.UsageError):
            client.toolbox(code_interpreter=client.code_interpreter("workspace", name="echo"))
        with self.assertRaises(airlock.UsageError):
            client.code_interpreter("workspace", name="no spaces")


if __name__ == "__main__":
    unittest.main()
