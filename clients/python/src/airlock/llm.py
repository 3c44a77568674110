"""Airlock's tools as OpenAI and Anthropic tool definitions, and their tool calls dispatched
back through Airlock (every call still goes through the whole pipeline: RBAC, schema,
validator, DLP, approval, sandbox, audit).

Both APIs want names matching `^[a-zA-Z0-9_-]{1,64}$`; Airlock's may also hold `.` (the MCP
gateway's `server.tool`). A `.` is sent as `__`; the toolbox keeps the table and refuses
(UsageError) a set of tools where two names would meet, or a name over 64 characters, rather
than guess. A name the model makes up is answered as an error result, never sent to Airlock.

Works with plain dicts and with the official SDKs' objects (attribute access)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple, Type

from .errors import (AirlockError, CodeRejectedError, ConflictError, DlpBlockedError,
                     InvalidInputError, NotFoundError, PermissionDeniedError,
                     SubjectRequiredError, UsageError, WaitTimeoutError)
from .models import Invocation, Tool

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


class ToolBox:
    """A snapshot of the caller's tools with their schemas (`Client.toolbox()`)."""

    def __init__(self, client: "Client", tools: Iterable[Tool], *,
                 wait_for_approval: Optional[float] = None) -> None:
        self.client = client
        self.tools: List[Tool] = list(tools)
        self.wait_for_approval = wait_for_approval
        self._by_api_name: Dict[str, Tool] = {}
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
    def load(cls, client: "Client", *, wait_for_approval: Optional[float] = None) -> "ToolBox":
        return cls(client, [client.tool(t.name) for t in client.tools()],
                   wait_for_approval=wait_for_approval)

    def openai_tools(self) -> List[Dict[str, Any]]:
        """Chat Completions `tools`: `{"type": "function", "function": {name, description,
        parameters}}`."""
        return [{"type": "function",
                 "function": {"name": api_name(t.name), "description": _description(t),
                              "parameters": _parameters(t)}} for t in self.tools]

    def anthropic_tools(self) -> List[Dict[str, Any]]:
        """Messages API `tools`: `{name, description, input_schema}`."""
        return [{"name": api_name(t.name), "description": _description(t),
                 "input_schema": _parameters(t)} for t in self.tools]

    # --- one call ---
    def call(self, call_id: str, name: str, arguments: Any) -> ToolResult:
        """Runs one tool call the model made; the result is what the model is shown."""
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
            item: Dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id,
                                    "content": result.content}
            if result.is_error:
                item["is_error"] = True
            results.append(item)
        return {"role": "user", "content": results} if results else None


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
