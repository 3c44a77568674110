"""Airlock's tools as OpenAI and Anthropic tool definitions, and their tool calls dispatched
back through Airlock (every call still goes through the whole pipeline: RBAC, schema,
validator, DLP, approval, sandbox, audit).

Both APIs want names matching `^[a-zA-Z0-9_-]{1,64}$`; Airlock's may also hold `.` (the MCP
gateway's `server.tool`). A `.` is sent as `__`; the toolbox keeps the table and refuses
(UsageError) a set of tools where two names would meet, or a name over 64 characters, rather
than guess. A name the model makes up is answered as an error result, never sent to Airlock.

A `CodeInterpreter` is one more tool for the model, `code_interpreter`, backed by an Airlock
session (docs/sessions.md, "Code"): each call runs a cell of Python in the session's persistent
interpreter (variables, imports and files kept between calls), validated, DLP'd and audited as
`Client.run_code` is. The session is created on the first call and ended by `close()`.

Works with plain dicts and with the official SDKs' objects (attribute access)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple, Type

from .errors import (AirlockError, CodeRejectedError, ConflictError, DlpBlockedError,
                     InvalidInputError, NotFoundError, PermissionDeniedError,
                     SubjectRequiredError, UsageError, WaitTimeoutError)
from .models import CellResult, Invocation, Session, Tool

if TYPE_CHECKING:
    from .client import Client

_API_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")

# Refusals of one call that the model can act on (other arguments, another tool): they go
# back to it as an error result. Anything else (a bad credential, the daemon down or
# overloaded after the retries, Airlock failing) is raised to the program.
MODEL_VISIBLE_ERRORS: Tuple[Type[AirlockError], ...] = (
    PermissionDeniedError, NotFoundError, InvalidInputError, CodeRejectedError,
    DlpBlockedError, ConflictError, SubjectRequiredError)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def api_name(name: str) -> str:
    return name.replace(".", "__")


def _parameters(tool: Tool) -> Dict[str, Any]:
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


def _description(tool: Tool) -> str:
    text = tool.description or f"The Airlock tool {tool.name}."
    if tool.risk == "critical":
        text += " (Critical: each call waits for a human approval.)"
    return text


@dataclass(frozen=True)
class ToolResult:
    """What one tool call gave: the invocation (when Airlock made one) and the text the
    model is shown."""
    call_id: str
    name: str
    content: str
    is_error: bool
    invocation: Optional[Invocation]
    # The code interpreter's: the cell's answer, and the figures it drew (PNG in base64).
    cell: Optional[CellResult] = None
    images: List[str] = field(default_factory=list)


class ToolBox:
    """A snapshot of the caller's tools with their schemas (`Client.toolbox()`)."""

    def __init__(self, client: "Client", tools: Iterable[Tool], *,
                 wait_for_approval: Optional[float] = None,
                 code_interpreter: Optional["CodeInterpreter"] = None) -> None:
        self.client = client
        self.tools: List[Tool] = list(tools)
        self.wait_for_approval = wait_for_approval
        self.code_interpreter = code_interpreter
        self._by_api_name: Dict[str, Tool] = {}
        if code_interpreter is not None:
            if any(api_name(t.name) == code_interpreter.name for t in self.tools):
                raise UsageError(f"the code interpreter and an Airlock tool would both be {code_interpreter.name!r} "
                                 "for the model: name the interpreter otherwise")
        for tool in self.tools:
            exposed = api_name(tool.name)
            if not _API_NAME.fullmatch(exposed):
                raise UsageError(f"tool {tool.name!r} cannot be named for the model as {exposed!r} "
                                 "(at most 64 letters, digits, '_' and '-')")
            if exposed in self._by_api_name:
                raise UsageError(f"tools {self._by_api_name[exposed].name!r} and {tool.name!r} "
                                 f"would both be {exposed!r} for the model")
            self._by_api_name[exposed] = tool

    @classmethod
    def load(cls, client: "Client", *, wait_for_approval: Optional[float] = None,
             code_interpreter: Optional["CodeInterpreter"] = None) -> "ToolBox":
        return cls(client, [client.tool(t.name) for t in client.tools()],
                   wait_for_approval=wait_for_approval, code_interpreter=code_interpreter)

    def openai_tools(self) -> List[Dict[str, Any]]:
        """Chat Completions `tools`: `{"type": "function", "function": {name, description,
        parameters}}`."""
        tools = [{"type": "function",
                  "function": {"name": api_name(t.name), "description": _description(t),
                               "parameters": _parameters(t)}} for t in self.tools]
        if self.code_interpreter is not None:
            tools.append(self.code_interpreter.openai_tool())
        return tools

    def anthropic_tools(self) -> List[Dict[str, Any]]:
        """Messages API `tools`: `{name, description, input_schema}`."""
        tools = [{"name": api_name(t.name), "description": _description(t),
                  "input_schema": _parameters(t)} for t in self.tools]
        if self.code_interpreter is not None:
            tools.append(self.code_interpreter.anthropic_tool())
        return tools

    # --- one call ---
    def call(self, call_id: str, name: str, arguments: Any) -> ToolResult:
        """Runs one tool call the model made; the result is what the model is shown."""
        if self.code_interpreter is not None and name == self.code_interpreter.name:
            return self.code_interpreter.call(call_id, arguments)
        tool = self._by_api_name.get(name) if isinstance(name, str) else None
        if tool is None:
            return _refusal(call_id, name, "unknown_tool", f"there is no tool named {name!r}")
        if not isinstance(arguments, Mapping):
            return _refusal(call_id, name, "invalid_input", "the arguments must be a JSON object")
        try:
            inv = self.client.invoke(tool.name, arguments, wait_for_approval=self.wait_for_approval)
        except WaitTimeoutError as e:  # still waiting for its approvers: the model is told so
            if e.invocation is None:
                raise
            inv = e.invocation
        except MODEL_VISIBLE_ERRORS as e:
            return _refusal(call_id, name, e.kind, e.message, e.invocation)
        return ToolResult(call_id, name, _content(inv), inv.status != "ok", inv)

    # --- OpenAI ---
    def dispatch_openai(self, tool_calls: Iterable[Any]) -> List[Dict[str, Any]]:
        """Chat Completions `message.tool_calls` (arguments as a JSON string) to the
        `{"role": "tool", "tool_call_id", "content"}` messages that answer them, in order."""
        messages = []
        for tc in tool_calls or []:
            function = _get(tc, "function", {})
            call_id, name = str(_get(tc, "id", "")), _get(function, "name", "")
            raw = _get(function, "arguments", "{}")
            try:
                arguments = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
            except ValueError as e:
                result = _refusal(call_id, name, "invalid_input", f"the arguments are not JSON: {e}")
            else:
                result = self.call(call_id, name, arguments)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result.content})
        return messages

    # --- Anthropic ---
    def dispatch_anthropic(self, content: Iterable[Any]) -> Optional[Dict[str, Any]]:
        """The `tool_use` blocks of an assistant message's `content` to the one user message
        of `tool_result` blocks that answers them (None when there were none)."""
        results = []
        for block in content or []:
            if _get(block, "type") != "tool_use":
                continue
            result = self.call(str(_get(block, "id", "")), _get(block, "name", ""), _get(block, "input", {}))
            results.append(anthropic_tool_result(result))
        return {"role": "user", "content": results} if results else None


def anthropic_tool_result(result: ToolResult) -> Dict[str, Any]:
    """The `tool_result` block of one result: its text, then its figures as image blocks."""
    content: Any = result.content
    if result.images:
        content = [{"type": "text", "text": result.content}] + [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
            for data in result.images]
    item: Dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id, "content": content}
    if result.is_error:
        item["is_error"] = True
    return item


_CODE_DESCRIPTION = (
    "Runs Python in a sandboxed, persistent interpreter: variables, imports and files (in /work) stay "
    "between calls, as in a notebook. Answers stdout, stderr, the value of the last expression, or the "
    "exception with its traceback; figures drawn with matplotlib come back as images.")


class CodeInterpreter:
    """A code-interpreter tool backed by one Airlock session of `template`.

    The session is created on the first call (as this client's agent, and the user it acts
    for), each call is `Client.run_code` in it, and `close()` (or leaving a `with` block) ends
    it. A session that ended meanwhile (its idle timeout, its lifetime) is reported to the
    model once, and the next call starts a new one: the model is told its state is gone."""

    def __init__(self, client: "Client", template: str, *, name: str = "code_interpreter",
                 timeout: Optional[str] = None, idle_timeout: Optional[str] = None,
                 labels: Optional[Mapping[str, str]] = None) -> None:
        if not _API_NAME.fullmatch(name):
            raise UsageError(f"the code interpreter cannot be named {name!r} "
                             "(at most 64 letters, digits, '_' and '-')")
        self.client, self.template, self.name = client, template, name
        self.timeout, self.idle_timeout, self.labels = timeout, idle_timeout, labels
        self.session: Optional[Session] = None

    def _parameters(self) -> Dict[str, Any]:
        return {"type": "object",
                "properties": {"code": {"type": "string", "description": "The Python to run"}},
                "required": ["code"], "additionalProperties": False}

    def openai_tool(self) -> Dict[str, Any]:
        """Its Chat Completions function definition."""
        return {"type": "function", "function": {"name": self.name, "description": _CODE_DESCRIPTION,
                                                 "parameters": self._parameters()}}

    def anthropic_tool(self) -> Dict[str, Any]:
        """Its Messages API tool definition."""
        return {"name": self.name, "description": _CODE_DESCRIPTION, "input_schema": self._parameters()}

    def call(self, call_id: str, arguments: Any) -> ToolResult:
        """Runs the model's cell; refusals it can act on (a rejected cell, DLP, a cell still
        running) are error results, anything else is raised to the program."""
        code = _get(arguments, "code") if isinstance(arguments, Mapping) else None
        extra = sorted(set(arguments) - {"code"}) if isinstance(arguments, Mapping) else []
        if not isinstance(code, str) or extra:
            return _refusal(call_id, self.name, "invalid_input",
                            'the arguments must be {"code": "..."}' + (f", not {extra}" if extra else ""))
        if self.session is None:
            self.session = self.client.create_session(self.template, idle_timeout=self.idle_timeout,
                                                      labels=self.labels)
        try:
            cell = self.client.run_code(self.session, code, timeout=self.timeout)
        except NotFoundError as e:  # the session ended: the next call starts another
            self.session = None
            return _refusal(call_id, self.name, "session_ended",
                            f"{e.message}; its state is gone, and the next call starts a new interpreter")
        except MODEL_VISIBLE_ERRORS as e:
            return _refusal(call_id, self.name, e.kind, e.message)
        return ToolResult(call_id, self.name, _cell_content(cell), not cell.ok, None, cell,
                          [str(i.get("data", "")) for i in cell.images if i.get("type") == "image/png"])

    def close(self) -> None:
        """Ends the session (nothing when none was made, or it has ended already)."""
        session, self.session = self.session, None
        if session is not None:
            try:
                self.client.end_session(session)
            except NotFoundError:
                pass

    def __enter__(self) -> "CodeInterpreter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _cell_content(cell: CellResult) -> str:
    """The model's view of a cell: what it printed, its value or its error and traceback."""
    view: Dict[str, Any] = {"status": cell.verdict}
    for key in ("stdout", "stderr"):
        if getattr(cell, key):
            view[key] = getattr(cell, key)
    if cell.result is not None:
        view["result"] = cell.result.get("repr")
    if cell.error is not None:
        view["error"] = {"name": cell.error.get("name"), "value": cell.error.get("value"),
                         "traceback": cell.error.get("traceback")}
    if isinstance(cell.raw.get("message"), str):
        view["message"] = cell.raw["message"]
    if cell.images:
        view["images"] = f"{len(cell.images)} figure(s), PNG"
    if cell.interpreter_state == "lost":
        view["interpreter"] = "its state is gone: the next cell starts afresh"
    return json.dumps(view, ensure_ascii=False)


def _refusal(call_id: str, name: Any, kind: str, message: str,
             invocation: Optional[Invocation] = None) -> ToolResult:
    return ToolResult(call_id, str(name), json.dumps(
        {"status": "denied", "error": {"kind": kind, "message": message}}, ensure_ascii=False),
        True, invocation)


def _content(inv: Invocation) -> str:
    """The model's view of an invocation: the output, or the error, or the pending approval."""
    if inv.status == "ok":
        return json.dumps(inv.output if inv.output is not None else {}, ensure_ascii=False)
    if inv.status == "pending_approval" and inv.approval is not None:
        return json.dumps({"status": "pending_approval", "invocation_id": inv.id,
                           "approval": {"id": inv.approval.id, "expires_at": inv.approval.expires_at},
                           "message": "this call waits for a human approval; it has not run"})
    error = _model_error(inv)
    return json.dumps({"status": inv.status, "error": error}, ensure_ascii=False)


def _model_error(inv: Invocation) -> Optional[Dict[str, Any]]:
    """The error as a model can correct itself from it: a rejection's findings, a cell's
    exception and traceback, the connections the egress proxy refused."""
    if inv.error is None:
        return None
    error: Dict[str, Any] = {"kind": inv.error.kind, "message": inv.error.message}
    if inv.error.findings:
        error["findings"] = inv.error.findings
    if inv.error.details:
        error["details"] = inv.error.details
    return error
