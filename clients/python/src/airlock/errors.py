"""Typed exceptions: one class per error kind of the daemon (docs/daemon.md, the `kind` of
`{"error": {"kind", "message"}}`, and src/pipeline/error.hpp), grouped by what a caller does
about them. Every exception is an `AirlockError` with `.kind`, `.message`, `.status` (the HTTP
status, 0 when no answer came) and `.invocation` (the invocation the daemon recorded, when the
answer was one: a refused call is audited like any other)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Type

if TYPE_CHECKING:
    from .models import Invocation


class AirlockError(Exception):
    """Base of every error this package raises."""

    def __init__(self, kind: str, message: str, *, status: int = 0,
                 body: Optional[Mapping[str, Any]] = None,
                 invocation: Optional["Invocation"] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(f"{kind}: {message}" if kind else message)
        self.kind = kind
        self.message = message
        self.status = status
        self.body: Mapping[str, Any] = body or {}
        self.invocation = invocation
        self.retry_after = retry_after


class UsageError(AirlockError, ValueError):
    """The client refused a request before connecting (a bad tool name, URL or credential)."""

    def __init__(self, message: str) -> None:
        super().__init__("usage", message)


class TransportError(AirlockError):
    """No usable answer: connection refused or reset, TLS failure, time-out, an answer that is
    not JSON or is larger than the client accepts."""

    def __init__(self, message: str) -> None:
        super().__init__("transport", message)


class WaitTimeoutError(AirlockError):
    """`Client.wait` gave up: the invocation was still pending or running (`.invocation`)."""


# --- Refusals: the call was not allowed; fix the call, the credential or the policy. ---
class AuthenticationError(AirlockError):
    """401 `unauthenticated`: no credential, or one (or a subject token) that is not valid."""


class SubjectRequiredError(AuthenticationError):
    """401 `subject_required`: the tool acts only on behalf of a user; send their token."""


class PermissionDeniedError(AirlockError):
    """403 `forbidden`: RBAC refused it (`.rule` names the rule that decided); a session's
    file path that leads out of its workspace (`outside_workspace`)."""

    @property
    def rule(self) -> str:
        error = self.body.get("error") if isinstance(self.body, Mapping) else None
        return str(error.get("rule", "")) if isinstance(error, Mapping) else ""


class CredentialDeniedError(PermissionDeniedError):
    """403 `credential_denied`: a credential the tool needs cannot be given for this call."""


class ToolDisabledError(PermissionDeniedError):
    """403 `tool_disabled`: an MCP server's tool changed since it was pinned."""


class TierUnavailableError(PermissionDeniedError):
    """403 `tier_unavailable`: the tool's risk tier has no backend that works here."""


class ApprovalDeniedError(PermissionDeniedError):
    """`approval_denied`: an approver denied the critical call."""


class ApprovalExpiredError(PermissionDeniedError):
    """`approval_expired`: nobody decided before the approval's timeout (a deny)."""


class NotFoundError(AirlockError):
    """404 `not_found`: no such endpoint, invocation, approval, session, snapshot or audit
    record (of yours); `file_not_found`: no such file in the session's workspace."""


class UnknownToolError(NotFoundError):
    """404 `unknown_tool`."""


class InvalidInputError(AirlockError):
    """400 `invalid_input` (`.pointer` names the bad field) or `malformed_request`; a session's
    file path that is not one (`invalid_path`)."""

    @property
    def pointer(self) -> str:
        error = self.body.get("error") if isinstance(self.body, Mapping) else None
        return str(error.get("pointer", "")) if isinstance(error, Mapping) else ""


class CodeRejectedError(AirlockError):
    """422 `code_rejected`: the static validator refused model-written code (`.findings`)."""

    @property
    def findings(self) -> List[Dict[str, Any]]:
        error = self.body.get("error") if isinstance(self.body, Mapping) else None
        found = error.get("findings") if isinstance(error, Mapping) else None
        return list(found) if isinstance(found, list) else []


class DlpBlockedError(AirlockError):
    """422 `dlp_blocked`: the arguments or the result (or a session's file, written or read)
    hold data the DLP policy blocks."""


class ConflictError(AirlockError):
    """409: `config_changed`, `arguments_changed`, `already_decided`, `not_pending`; a session's
    `session_paused`, `session_not_paused`, `session_ended`, `interpreter_busy`; a session's files:
    `is_a_directory`, `not_a_directory`, `directory_not_empty`, `not_a_regular_file`."""


class RequestRejectedError(AirlockError):
    """408 `request_timeout`, 413 `body_too_large`, 431 `headers_too_large`, 405; 413
    `disk_limit`: a file written to a session would pass its disk limit; 413
    `snapshot_too_large`: a session's workspace archives past what a snapshot may hold."""


# --- Overload and failures: retry later, or tell an operator. ---
class RateLimitedError(AirlockError):
    """429 `queue_full`, after the client's retries (`.retry_after`: what the daemon asked)."""


class QuotaExceededError(RateLimitedError):
    """429 `quota_exceeded`: a quota of the calling agent or of the user refused the call before
    anything ran (`.quota`: `concurrent`, `rate`, `cpuSeconds` or `cluster`; `.retry_after`), or
    a session's owner holds the most sessions or snapshots there may be (`sessions`, `snapshots`)."""

    @property
    def quota(self) -> str:
        error = self.body.get("error") if isinstance(self.body, Mapping) else None
        return str(error.get("quota", "")) if isinstance(error, Mapping) else ""


class UnavailableError(AirlockError):
    """503 `draining`, `credential_unavailable`, `temporarily_unavailable`, `sealed_other_key`
    (this replica holds another sealing key than the one that sealed the approval),
    `replica_unavailable` (the replica that holds a session cannot be reached now)."""


class StorageUnavailableError(UnavailableError):
    """503 `storage_unavailable`: the daemon's state database or audit log cannot be reached
    (`storage.postgres` down), so the call failed closed: it did not run, or it ran and has no
    result. Not sent again by the client (it may have run); `.retry_after` is what the daemon
    asked (1 s)."""


class ServerError(AirlockError):
    """500: `audit_failed`, `sandbox_setup`, `internal`, `audit`, `storage`; a snapshot's
    `snapshot_failed` (tar in the session failed: its words) and `snapshot_corrupt` (its archive
    no longer matches its SHA-256: nothing is restored)."""


class TokenExchangeError(AirlockError):
    """POST /v1/token refused (RFC 6749 section 5.2): `.kind` is its `error` code
    (`invalid_grant`, `invalid_scope`, `invalid_client`, ...)."""


# --- The tool's own failure, raised only by `Invocation.raise_for_error()`. ---
class ToolError(AirlockError):
    """The tool ran and failed (status `error`): `timeout`, `memory_limit`, `cpu_time_limit`,
    `output_limit`, `seccomp_violation`, `tool_crashed`, `invalid_output`, `stopped`,
    `cancelled`, `tool_server_failed`, `tool_error` (an MCP server's result with `isError`,
    still the invocation's `output`), `code_error` (python-code raised: `error.details` has its
    name, value, line and traceback), `egress_denied` (it failed after the egress proxy refused
    a connection: `error.details.egress`). `Client.invoke` returns these as an `Invocation` (the
    model should see them); `raise_for_error()` turns them into this exception."""


ERROR_CLASSES: Dict[str, Type[AirlockError]] = {
    "unauthenticated": AuthenticationError,
    "subject_required": SubjectRequiredError,
    "forbidden": PermissionDeniedError,
    "csrf": PermissionDeniedError,
    "cross_site": PermissionDeniedError,
    "credential_denied": CredentialDeniedError,
    "tool_disabled": ToolDisabledError,
    "tier_unavailable": TierUnavailableError,
    "approval_denied": ApprovalDeniedError,
    "approval_expired": ApprovalExpiredError,
    "not_found": NotFoundError,
    "unknown_tool": UnknownToolError,
    "invalid_input": InvalidInputError,
    "malformed_request": InvalidInputError,
    "code_rejected": CodeRejectedError,
    "dlp_blocked": DlpBlockedError,
    "config_changed": ConflictError,
    "arguments_changed": ConflictError,
    "already_decided": ConflictError,
    "not_pending": ConflictError,
    "session_paused": ConflictError,
    "session_not_paused": ConflictError,
    "session_ended": ConflictError,
    "interpreter_busy": ConflictError,  # a cell is running in the session's interpreter
    "invalid_path": InvalidInputError,
    "outside_workspace": PermissionDeniedError,
    "file_not_found": NotFoundError,
    "is_a_directory": ConflictError,
    "not_a_directory": ConflictError,
    "directory_not_empty": ConflictError,
    "not_a_regular_file": ConflictError,
    "disk_limit": RequestRejectedError,
    "snapshot_too_large": RequestRejectedError,
    "snapshot_failed": ServerError,
    "snapshot_corrupt": ServerError,
    "unknown_template": NotFoundError,
    "exec_failed": InvalidInputError,
    "invalid_argument": InvalidInputError,
    "method_not_allowed": RequestRejectedError,
    "request_timeout": RequestRejectedError,
    "body_too_large": RequestRejectedError,
    "headers_too_large": RequestRejectedError,
    "upgrade_required": RequestRejectedError,  # a terminal asked for without a WebSocket upgrade
    "websocket_unavailable": RequestRejectedError,
    # Replicas (docs/sessions.md, "Replicas"): a session held by another replica.
    "session_elsewhere": RequestRejectedError,  # its terminal, or a client-certificate caller: not forwarded
    "forward_loop": RequestRejectedError,
    "queue_full": RateLimitedError,
    "quota_exceeded": QuotaExceededError,
    "draining": UnavailableError,
    "credential_unavailable": UnavailableError,
    "temporarily_unavailable": UnavailableError,
    "sealed_other_key": UnavailableError,
    "storage_unavailable": StorageUnavailableError,
    "replica_unavailable": UnavailableError,  # the replica holding the session cannot be reached (Retry-After)
    "replica_failed": ServerError,  # it broke off once the request was forwarded: it may have run
    "audit_failed": ServerError,
    "sandbox_setup": ServerError,
    "internal": ServerError,
    "audit": ServerError,
    "storage": ServerError,
    "setup_error": ServerError,
    "freezer_unavailable": ServerError,
    "dlp_unavailable": ServerError,
    "not_implemented": ServerError,
}

# The kinds of a tool's own failure (status "error", HTTP 200): src/pipeline/error.hpp.
TOOL_FAILURE_KINDS = frozenset({
    "timeout", "cpu_time_limit", "memory_limit", "output_limit", "seccomp_violation",
    "tool_crashed", "invalid_output", "stopped", "cancelled", "tool_server_failed", "tool_error",
    "code_error", "egress_denied"})

# A kind this client does not know yet is still an error: classed by its HTTP status.
_BY_STATUS: Dict[int, Type[AirlockError]] = {
    400: InvalidInputError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 409: ConflictError, 422: InvalidInputError, 429: RateLimitedError,
    503: UnavailableError,
}


def error_class(kind: str, status: int) -> Type[AirlockError]:
    """The exception class of an error kind (falling back on the HTTP status)."""
    if kind in ERROR_CLASSES:
        return ERROR_CLASSES[kind]
    if kind in TOOL_FAILURE_KINDS:
        return ToolError
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, AirlockError)
