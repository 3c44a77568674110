"""What the daemon answers, as typed objects (src/server/api/openapi.json). Each keeps the whole
answer in `.raw`, so a member added by a later daemon is not lost."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from .errors import TOOL_FAILURE_KINDS, AirlockError, ToolError, error_class

JsonObject = Dict[str, Any]

# Statuses of an invocation that has not ended (GET /v1/invocations/{id}).
UNFINISHED_STATUSES = frozenset({"running", "pending_approval", "suspended"})


def _object(value: Any) -> JsonObject:
    return dict(value) if isinstance(value, Mapping) else {}


def _objects(value: Any) -> List[JsonObject]:
    """The objects of a JSON array (`redactions`), anything else left out."""
    return [dict(v) for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


@dataclass(frozen=True)
class ErrorInfo:
    """`error` of an invocation: `{kind, message, pointer?, rule?, findings?, details?}`.
    `details`: a python-code cell's exception (`code_error`: `name`, `value`, `line`,
    `traceback` lines, `stdout`) and the connections the egress proxy refused
    (`egress_denied`: `egress` [{host, port, address, rule, rule_set}])."""
    kind: str
    message: str
    pointer: str = ""
    rule: str = ""
    findings: List[JsonObject] = field(default_factory=list)
    details: JsonObject = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Optional["ErrorInfo"]:
        if not isinstance(value, Mapping):
            return None
        findings = value.get("findings")
        return cls(kind=str(value.get("kind", "")), message=str(value.get("message", "")),
                   pointer=str(value.get("pointer", "")), rule=str(value.get("rule", "")),
                   findings=[_object(f) for f in findings] if isinstance(findings, list) else [],
                   details=_object(value.get("details")))


@dataclass(frozen=True)
class AuditRef:
    """Where the invocation's record is in the audit log."""
    index: int
    leaf_hash: str


def _audit_ref(audit: Any) -> Optional[AuditRef]:
    if isinstance(audit, Mapping) and isinstance(audit.get("index"), int):
        return AuditRef(int(audit["index"]), str(audit.get("leaf_hash", "")))
    return None


@dataclass(frozen=True)
class PendingApproval:
    """`approval` of a call that waits for approvers (status `pending_approval`)."""
    id: str
    expires_at: str
    url: str
    approvers: int


@dataclass(frozen=True)
class Invocation:
    """One tool call as the daemon answered or stored it."""
    id: str
    tool: str
    status: str  # ok | error | denied | pending_approval | running | suspended
    output: Optional[JsonObject]
    error: Optional[ErrorInfo]
    verdict: Optional[str]
    audit: Optional[AuditRef]
    approval: Optional[PendingApproval]
    actor: Optional[JsonObject]
    subject: Optional[JsonObject]
    raw: JsonObject

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Invocation":
        audit = body.get("audit")
        approval = body.get("approval")
        output = body.get("output")
        return cls(
            id=str(body.get("id", "")), tool=str(body.get("tool", "")),
            status=str(body.get("status", "")),
            output=dict(output) if isinstance(output, Mapping) else None,
            error=ErrorInfo.from_json(body.get("error")),
            verdict=body.get("verdict") if isinstance(body.get("verdict"), str) else None,
            audit=_audit_ref(audit),
            approval=(PendingApproval(str(approval.get("id", "")), str(approval.get("expires_at", "")),
                                      str(approval.get("url", "")), int(approval.get("approvers", 1)))
                      if isinstance(approval, Mapping) and approval else None),
            actor=dict(body["actor"]) if isinstance(body.get("actor"), Mapping) else None,
            subject=dict(body["subject"]) if isinstance(body.get("subject"), Mapping) else None,
            raw=dict(body))

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def finished(self) -> bool:
        return self.status not in UNFINISHED_STATUSES

    @property
    def log(self) -> str:
        """The tool's stderr (GET /v1/invocations/{id} only), capped and DLP-redacted."""
        return str(self.raw.get("log", ""))

    def raise_for_error(self) -> "Invocation":
        """Returns self when the tool succeeded (or has not finished); raises the typed
        exception of its error otherwise (`ToolError` for the tool's own failures)."""
        if self.error is None:
            return self
        cls = error_class(self.error.kind, 0)
        if self.error.kind in TOOL_FAILURE_KINDS:
            cls = ToolError
        raise cls(self.error.kind, self.error.message, body={"error": self.raw.get("error")},
                  invocation=self)


@dataclass(frozen=True)
class Tool:
    """A tool the caller may invoke (GET /v1/tools; the schemas from GET /v1/tools/{name})."""
    name: str
    description: str
    risk: str
    input_schema: Optional[JsonObject] = None
    output_schema: Optional[JsonObject] = None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Tool":
        inp, out = body.get("inputSchema"), body.get("outputSchema")
        return cls(name=str(body.get("name", "")), description=str(body.get("description", "")),
                   risk=str(body.get("risk", "")),
                   input_schema=dict(inp) if isinstance(inp, Mapping) else None,
                   output_schema=dict(out) if isinstance(out, Mapping) else None)


@dataclass(frozen=True)
class Approval:
    """A pending or decided approval (GET /v1/approvals, /v1/approvals/{id})."""
    id: str
    invocation_id: str
    tool: str
    status: str  # pending | approved | denied | expired
    arguments_sha256: str
    approvers_required: int
    approvals: int
    arguments: Optional[JsonObject]
    may_decide: Optional[bool]
    raw: JsonObject
    # The agent's reason for the call (GET /v1/approvals/{id}; None: none given).
    reason: Optional[str] = None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Approval":
        args = body.get("arguments")
        may = body.get("may_decide")
        why = body.get("reason")
        return cls(id=str(body.get("id", "")), invocation_id=str(body.get("invocation_id", "")),
                   tool=str(body.get("tool", "")), status=str(body.get("status", "")),
                   arguments_sha256=str(body.get("arguments_sha256", "")),
                   approvers_required=int(body.get("approvers_required", 0)),
                   approvals=int(body.get("approvals", 0)),
                   arguments=dict(args) if isinstance(args, Mapping) else None,
                   may_decide=may if isinstance(may, bool) else None, raw=dict(body),
                   reason=why if isinstance(why, str) else None)


@dataclass(frozen=True)
class ExchangedToken:
    """An Airlock token from the token exchange (POST /v1/token, RFC 8693)."""
    access_token: str
    issued_token_type: str
    expires_in: int
    scope: Optional[str]

    def __repr__(self) -> str:  # never print the token itself
        return f"ExchangedToken(expires_in={self.expires_in}, scope={self.scope!r})"


@dataclass(frozen=True)
class Session:
    """A session (POST /v1/sessions, GET /v1/sessions/{id}; docs/sessions.md): one long-lived
    sandbox of a template, owned by the agent and user that created it."""
    id: str
    template: str
    state: str  # running | ending | ended
    created_ms: int
    expires_ms: int
    idle_timeout_ms: int
    labels: Dict[str, str]
    execs: int
    end_reason: Optional[str]
    raw: JsonObject
    start: str = "cold"  # warm: taken from the template's warmPool, started ahead of demand

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Session":
        labels = body.get("labels")
        reason = body.get("end_reason")
        return cls(id=str(body.get("id", "")), template=str(body.get("template", "")),
                   state=str(body.get("state", "")), created_ms=int(body.get("created", 0)),
                   expires_ms=int(body.get("expires", 0)),
                   idle_timeout_ms=int(body.get("idle_timeout_ms", 0)),
                   labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {},
                   execs=int(body.get("execs", 0)),
                   end_reason=reason if isinstance(reason, str) else None, raw=dict(body),
                   start=str(body.get("start", "cold")))


@dataclass(frozen=True)
class ExecResult:
    """One command run in a session: its output as DLP left it, how it ended, what it used,
    and its audit record. `verdict`: ok, exit_nonzero, signaled, timeout, output_limit,
    dlp_blocked, session_ended or audit_failed."""
    invocation_id: str
    verdict: str
    exit_code: Optional[int]
    signal: Optional[str]
    stdout: str
    stderr: str
    usage: JsonObject
    redactions: List[JsonObject]
    audit: Optional["AuditRef"]
    raw: JsonObject

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "ExecResult":
        code = body.get("exit_code")
        sig = body.get("signal")
        usage = body.get("usage")
        return cls(invocation_id=str(body.get("invocation_id", "")), verdict=str(body.get("verdict", "")),
                   exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                   signal=sig if isinstance(sig, str) else None,
                   stdout=str(body.get("stdout", "")), stderr=str(body.get("stderr", "")),
                   usage=dict(usage) if isinstance(usage, Mapping) else {},
                   redactions=_objects(body.get("redactions")),
                   audit=_audit_ref(body.get("audit")), raw=dict(body))


@dataclass(frozen=True)
class CellResult:
    """One code cell run by a session's interpreter (POST /v1/sessions/{id}/code): its output
    and the value of its last expression (`result`: {repr, json?}) or its error ({name, value,
    traceback}), figures it drew (`images`: [{type, data}], PNG in base64), whether the
    interpreter's state was kept (`interpreter_state`: new, kept or lost). `verdict`: ok,
    exception, timeout, interpreter_exited, interpreter_failed, output_limit or dlp_blocked."""
    invocation_id: str
    verdict: str
    stdout: str
    stderr: str
    result: Optional[JsonObject]
    error: Optional[JsonObject]
    images: List[JsonObject]
    interpreter_state: str
    dlp_findings: List[JsonObject]
    redactions: List[JsonObject]
    audit: Optional["AuditRef"]
    raw: JsonObject

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "CellResult":
        result, error, interpreter = body.get("result"), body.get("error"), body.get("interpreter")
        return cls(invocation_id=str(body.get("invocation_id", "")), verdict=str(body.get("verdict", "")),
                   stdout=str(body.get("stdout", "")), stderr=str(body.get("stderr", "")),
                   result=dict(result) if isinstance(result, Mapping) else None,
                   error=dict(error) if isinstance(error, Mapping) else None,
                   images=_objects(body.get("images")),
                   interpreter_state=str(interpreter.get("state", "")) if isinstance(interpreter, Mapping) else "",
                   dlp_findings=_objects(body.get("dlp_findings")),
                   redactions=_objects(body.get("redactions")),
                   audit=_audit_ref(body.get("audit")), raw=dict(body))


@dataclass(frozen=True)
class FileInfo:
    """A file or directory written in a session's workspace (PUT /v1/sessions/{id}/files/{path}):
    its path relative to the workspace, `type` (file | directory), its size, the SHA-256 of
    what was stored (files only) and what DLP redacted on the way in."""
    path: str
    type: str
    size: int
    sha256: Optional[str]
    redactions: List[JsonObject]
    raw: JsonObject

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "FileInfo":
        digest = body.get("sha256")
        return cls(path=str(body.get("path", "")), type=str(body.get("type", "")),
                   size=int(body.get("size", 0)), sha256=digest if isinstance(digest, str) else None,
                   redactions=_objects(body.get("redactions")), raw=dict(body))


@dataclass(frozen=True)
class FileEntry:
    """One entry of a directory listing (GET on a directory of a session's workspace): `type`
    file | directory | symlink | other, `modified` in seconds since the epoch."""
    name: str
    type: str
    size: int
    modified: int
    raw: JsonObject

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "FileEntry":
        return cls(name=str(body.get("name", "")), type=str(body.get("type", "")),
                   size=int(body.get("size", 0)), modified=int(body.get("modified", 0)), raw=dict(body))


@dataclass(frozen=True)
class Snapshot:
    """A snapshot of a session's workspace (POST /v1/sessions/{id}/snapshot, GET
    /v1/snapshots/{id}; docs/sessions.md): its work dir's files as an archive the daemon keeps,
    with its `sha256`, until `expires_ms`; owned by the session's owner (`owner`: principal,
    user?). A session started from it (`create_session(from_snapshot=...)`) is of `template`."""
    id: str
    session_id: str  # the session it was taken of
    template: str
    owner: JsonObject
    created_ms: int
    expires_ms: int
    size: int  # the archive's bytes (`bytes`)
    sha256: str
    raw: JsonObject

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Snapshot":
        return cls(id=str(body.get("id", "")), session_id=str(body.get("session_id", "")),
                   template=str(body.get("template", "")), owner=_object(body.get("owner")),
                   created_ms=int(body.get("created", 0)), expires_ms=int(body.get("expires", 0)),
                   size=int(body.get("bytes", 0)), sha256=str(body.get("sha256", "")), raw=dict(body))


def raise_if_refused(invocation: Invocation, status: int) -> Invocation:
    """A call Airlock refused (status `denied`) or failed itself (an error that is not the
    tool's) becomes its typed exception; the tool's own failures are returned as they are."""
    err = invocation.error
    if err is None or (invocation.status == "error" and err.kind in TOOL_FAILURE_KINDS):
        return invocation
    cls = error_class(err.kind, status)
    raise cls(err.kind, err.message, status=status, body={"error": invocation.raw.get("error")},
              invocation=invocation)


__all__ = ["Invocation", "ErrorInfo", "AuditRef", "PendingApproval", "Tool", "Approval",
           "ExchangedToken", "Session", "ExecResult", "FileInfo", "FileEntry", "Snapshot", "AirlockError",
           "raise_if_refused", "UNFINISHED_STATUSES"]
