"""The synchronous client of Airlock's HTTP API (docs/daemon.md, src/server/api/openapi.json)."""
from __future__ import annotations

import io
import json
import ssl
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, BinaryIO, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import audit as _audit
from ._http import (OCTET_STREAM, Body, Endpoint, Response, RetryPolicy, Transport, check_credential,
                    check_segment, check_tool_name, send_with_retries)
from .errors import AirlockError, NotFoundError, TransportError, UsageError, WaitTimeoutError, error_class
from .models import (Approval, CellResult, ExchangedToken, ExecResult, FileEntry, FileInfo, Invocation, Session, Snapshot,
                     Tool, raise_if_refused)
from .terminal import Terminal, open_terminal

if TYPE_CHECKING:
    from .llm import CodeInterpreter, ToolBox

SUBJECT_HEADER = "Airlock-Subject-Token"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
MAX_SERVER_WAIT = 60  # seconds: the most GET /v1/invocations/{id}?wait= holds an answer
# GET .../files/{path} answers a file's content or, for a directory, its listing in JSON.
FILE_ACCEPT = f"{OCTET_STREAM}, application/json"


class Client:
    """`Client("http://127.0.0.1:8750", api_key=KEY)`.

    `api_key` is the bearer credential: an agent's API key, an agent's JWT, or a person's own
    token. `subject_token`, when given, is sent as `Airlock-Subject-Token` on every request:
    the user the agent acts for (a user's token, or an Airlock token from the token exchange,
    which is bound to the agent it was issued to and is no bearer), or, on approvals, the
    person who decides. Each request opens its own connection, so one client
    may be shared by threads."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, *,
                 subject_token: Optional[str] = None, timeout: float = 60.0,
                 retry: Optional[RetryPolicy] = None, cafile: Optional[str] = None,
                 certfile: Optional[str] = None, keyfile: Optional[str] = None,
                 ssl_context: Optional[ssl.SSLContext] = None,
                 max_response_bytes: int = 64 * 1024 * 1024) -> None:
        self.base_url = base_url
        endpoint = Endpoint.parse(base_url)
        self._api_key = check_credential("api_key", api_key)
        self._subject_token = check_credential("subject_token", subject_token)
        if endpoint.scheme == "http" and (cafile or certfile or ssl_context):
            raise UsageError("cafile, certfile and ssl_context need an https:// base_url")
        if ssl_context is None and endpoint.scheme == "https":
            ssl_context = ssl.create_default_context(cafile=cafile)
            ssl_context.minimum_version = ssl.TLSVersion.TLSv1_2
            if certfile:
                ssl_context.load_cert_chain(certfile, keyfile)
        self.retry = retry or RetryPolicy()
        self._transport = Transport(endpoint, timeout=timeout, ssl_context=ssl_context,
                                    max_response_bytes=max_response_bytes)

    def __repr__(self) -> str:  # never the credentials
        return f"Client({self.base_url!r})"

    # --- requests ---
    def _headers(self, subject_token: Optional[str]) -> Dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "airlock-python"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        subject = check_credential("subject_token", subject_token) or self._subject_token
        if subject:
            headers[SUBJECT_HEADER] = subject
        return headers

    def _call(self, method: str, target: str, *, json_body: Any = None,
              form: Optional[Mapping[str, str]] = None, subject_token: Optional[str] = None,
              timeout: Optional[float] = None) -> Any:
        return self._send(method, target, json_body=json_body, form=form,
                          subject_token=subject_token, timeout=timeout)[1]

    def _send(self, method: str, target: str, *, json_body: Any = None,
              form: Optional[Mapping[str, str]] = None, content: Optional[Body] = None,
              accept: Optional[str] = None, sink: Optional[BinaryIO] = None,
              subject_token: Optional[str] = None, timeout: Optional[float] = None) -> Tuple[Response, Any]:
        """`content`: a body of bytes or a binary file (application/octet-stream); `sink`: where
        a file's content goes as it arrives (the answer's `.streamed` says how much)."""
        headers = self._headers(subject_token)
        if accept is not None:
            headers["Accept"] = accept
        body: Optional[Body] = None
        if json_body is not None:
            body = json.dumps(json_body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif form is not None:
            body = urllib.parse.urlencode(dict(form)).encode("ascii")
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif content is not None:
            body = content
            headers["Content-Type"] = OCTET_STREAM
        elif method == "POST":
            body = b""
        return send_with_retries(self._transport, self.retry, method, target, body, headers, timeout,
                                 sink=sink)

    # --- tools and invocations ---
    def tools(self) -> List[Tool]:
        """The tools this caller may invoke (names, descriptions, risks; no schemas)."""
        body = self._call("GET", "/v1/tools")
        return [Tool.from_json(t) for t in body.get("tools", []) if isinstance(t, Mapping)]

    def tool(self, name: str) -> Tool:
        """One tool with its input and output schemas."""
        return Tool.from_json(self._call("GET", f"/v1/tools/{check_tool_name(name)}"))

    def invoke(self, name: str, arguments: Optional[Mapping[str, Any]] = None,
               subject_token: Optional[str] = None, *,
               wait_for_approval: Optional[float] = None,
               reason: Optional[str] = None) -> Invocation:
        """Runs a tool. Returns the `Invocation` when it ran (`status` ok, or `error` for the
        tool's own failure: see `raise_for_error()`), or `pending_approval` for a critical
        tool (then `wait()`, or pass `wait_for_approval=SECONDS` to long-poll here). Raises
        the typed `AirlockError` when Airlock refused the call or failed itself. `reason`:
        why the agent makes the call (at most 2048 bytes), shown to a critical tool's approvers."""
        if arguments is not None and not isinstance(arguments, Mapping):
            raise UsageError("arguments must be a JSON object (a mapping)")
        if reason is not None and not isinstance(reason, str):
            raise UsageError("reason must be a string")
        json_body: Dict[str, Any] = {"arguments": dict(arguments or {})}
        if reason is not None:
            json_body["reason"] = reason
        resp, body = self._send("POST", f"/v1/tools/{check_tool_name(name)}/invoke",
                                json_body=json_body, subject_token=subject_token)
        invocation = raise_if_refused(Invocation.from_json(body), resp.status)
        if invocation.status == "pending_approval" and wait_for_approval is not None:
            return self.wait(invocation.id, timeout=wait_for_approval)
        return invocation

    def invocation(self, invocation_id: str, *, wait: Optional[float] = None) -> Invocation:
        """GET /v1/invocations/{id} as stored (a refused one is returned, not raised).
        `wait` (seconds, at most 60) holds the answer until it ends or the wait passes."""
        target = f"/v1/invocations/{check_segment('invocation id', invocation_id)}"
        timeout = None
        if wait is not None and wait > 0:
            seconds = max(1, min(MAX_SERVER_WAIT, int(wait)))
            target += f"?wait={seconds}s"
            timeout = self._transport.timeout + seconds
        return Invocation.from_json(self._call("GET", target, timeout=timeout))

    def wait(self, invocation: Union[str, Invocation], *, timeout: float = 300.0,
             poll: float = 30.0) -> Invocation:
        """Long-polls an invocation until it ends (each poll held by the daemon up to `poll`
        seconds). Returns or raises as `invoke` would have for the finished call (a denied
        approval raises `ApprovalDeniedError`); `WaitTimeoutError` after `timeout`."""
        invocation_id = invocation.id if isinstance(invocation, Invocation) else invocation
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            current = self.invocation(invocation_id, wait=max(1.0, min(poll, remaining)))
            if current.finished:
                return raise_if_refused(current, 200)
            if time.monotonic() >= deadline:
                raise WaitTimeoutError("wait_timeout", f"invocation {invocation_id} is still "
                                       f"{current.status} after {timeout:g}s", invocation=current)

    def invocations(self, *, tool: Optional[str] = None, user: Optional[str] = None,
                    agent: Optional[str] = None, status: Optional[str] = None,
                    since: Optional[str] = None, until: Optional[str] = None,
                    limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The invocation history, newest first, as summaries (GET /v1/invocations)."""
        query = {k: str(v) for k, v in dict(tool=tool, user=user, agent=agent, status=status,
                                            since=since, until=until, limit=limit).items()
                 if v is not None}
        target = "/v1/invocations" + (("?" + urllib.parse.urlencode(query)) if query else "")
        body = self._call("GET", target)
        items = body.get("invocations", []) if isinstance(body, Mapping) else []
        return [dict(i) for i in items if isinstance(i, Mapping)]

    # --- on behalf of a user ---
    def exchange_token(self, subject_token: str, *, scope: Optional[Sequence[str]] = None,
                       subject_token_type: str = JWT_TOKEN_TYPE) -> ExchangedToken:
        """RFC 8693 token exchange (POST /v1/token): the user's token for an Airlock token
        naming this agent and the user (at most 15 minutes, optionally limited to `scope`)."""
        form = {"grant_type": TOKEN_EXCHANGE, "subject_token_type": subject_token_type,
                "subject_token": check_credential("subject_token", subject_token) or ""}
        if scope:
            for name in scope:
                check_tool_name(name)
            form["scope"] = " ".join(scope)
        body = self._call("POST", "/v1/token", form=form)
        token = body.get("access_token") if isinstance(body, Mapping) else None
        if not isinstance(token, str) or not token:
            raise TransportError("the token endpoint answered without an access_token")
        return ExchangedToken(access_token=token, issued_token_type=str(body.get("issued_token_type", "")),
                              expires_in=int(body.get("expires_in", 0)),
                              scope=body.get("scope") if isinstance(body.get("scope"), str) else None)

    def as_user(self, subject_token: str, *, exchange: bool = False,
                scope: Optional[Sequence[str]] = None) -> "Client":
        """A client acting for the user of `subject_token`: it sends the token with every
        call, or (`exchange=True`) trades it once for an Airlock token and sends that instead,
        beside the agent's own credential."""
        if not exchange:
            return self._clone(api_key=self._api_key, subject_token=subject_token)
        token = self.exchange_token(subject_token, scope=scope)
        return self._clone(api_key=self._api_key, subject_token=token.access_token)

    def _clone(self, *, api_key: Optional[str], subject_token: Optional[str]) -> "Client":
        clone = Client.__new__(Client)
        clone.__dict__.update(self.__dict__)
        clone._api_key = check_credential("api_key", api_key)
        clone._subject_token = check_credential("subject_token", subject_token)
        return clone

    # --- approvals ---
    def approvals(self, *, subject_token: Optional[str] = None) -> List[Approval]:
        """The pending approvals this person may decide (never their own requests)."""
        body = self._call("GET", "/v1/approvals", subject_token=subject_token)
        return [Approval.from_json(a) for a in body.get("approvals", []) if isinstance(a, Mapping)]

    def approval(self, approval_id: str, *, subject_token: Optional[str] = None) -> Approval:
        """One approval with its arguments, their SHA-256 and `may_decide`."""
        target = f"/v1/approvals/{check_segment('approval id', approval_id)}"
        return Approval.from_json(self._call("GET", target, subject_token=subject_token))

    def approve(self, approval: Union[str, Approval], reason: str = "", *,
                arguments_sha256: Optional[str] = None,
                subject_token: Optional[str] = None) -> Approval:
        """Approves as the person whose token is the bearer or `subject_token`. Given an
        `Approval` (from `approval()`), the decision is bound to the arguments it showed:
        the daemon refuses it (409 `arguments_changed`) if they are not the ones waiting."""
        return self._decide(approval, "approve", reason, arguments_sha256, subject_token)

    def deny(self, approval: Union[str, Approval], reason: str = "", *,
             arguments_sha256: Optional[str] = None,
             subject_token: Optional[str] = None) -> Approval:
        """Denies: a deny by any approver ends the call (`approval_denied`)."""
        return self._decide(approval, "deny", reason, arguments_sha256, subject_token)

    def _decide(self, approval: Union[str, Approval], verdict: str, reason: str,
                arguments_sha256: Optional[str], subject_token: Optional[str]) -> Approval:
        approval_id = approval.id if isinstance(approval, Approval) else approval
        if arguments_sha256 is None and isinstance(approval, Approval) and approval.arguments_sha256:
            arguments_sha256 = approval.arguments_sha256
        body: Dict[str, str] = {"reason": reason}
        if arguments_sha256 is not None:
            body["arguments_sha256"] = arguments_sha256
        target = f"/v1/approvals/{check_segment('approval id', approval_id)}/{verdict}"
        return Approval.from_json(self._call("POST", target, json_body=body, subject_token=subject_token))

    # --- sessions (docs/sessions.md) ---
    def create_session(self, template: Optional[str] = None, *, idle_timeout: Optional[str] = None,
                       labels: Optional[Mapping[str, str]] = None,
                       from_snapshot: Union[str, Snapshot, None] = None,
                       subject_token: Optional[str] = None) -> Session:
        """A new session of `template`, owned by this agent and the user it acts for (only
        they reach it). `idle_timeout`: "10m", at most the template's. `from_snapshot`: one of
        this caller's snapshots, whose files the session starts with; it is of the snapshot's
        template (`template` may be left out, and is refused if it is another)."""
        if template is None and from_snapshot is None:
            raise UsageError("create_session needs a template, or a snapshot to start from")
        body: Dict[str, Any] = {}
        if template is not None:
            body["template"] = template
        if from_snapshot is not None:
            body["fromSnapshot"] = from_snapshot.id if isinstance(from_snapshot, Snapshot) else from_snapshot
        if idle_timeout is not None:
            body["idleTimeout"] = idle_timeout
        if labels:
            body["labels"] = {str(k): str(v) for k, v in labels.items()}
        return Session.from_json(self._call("POST", "/v1/sessions", json_body=body, subject_token=subject_token))

    def sessions(self, *, subject_token: Optional[str] = None) -> List[Session]:
        """This caller's sessions (every owner's with manage_sessions)."""
        body = self._call("GET", "/v1/sessions", subject_token=subject_token)
        return [Session.from_json(s) for s in body.get("sessions", []) if isinstance(s, Mapping)]

    def session(self, session: Union[str, Session], *, subject_token: Optional[str] = None) -> Session:
        return Session.from_json(self._call("GET", self._session_path(session), subject_token=subject_token))

    def pause_session(self, session: Union[str, Session], *, subject_token: Optional[str] = None) -> Session:
        """Freezes every process of it (no CPU, memory kept; the idle clock stops)."""
        return Session.from_json(self._call("POST", self._session_path(session) + "/pause",
                                            subject_token=subject_token))

    def resume_session(self, session: Union[str, Session], *, subject_token: Optional[str] = None) -> Session:
        return Session.from_json(self._call("POST", self._session_path(session) + "/resume",
                                            subject_token=subject_token))

    def end_session(self, session: Union[str, Session], *, subject_token: Optional[str] = None) -> Session:
        """Ends it: every process in it, its files, its sandbox."""
        return Session.from_json(self._call("DELETE", self._session_path(session), subject_token=subject_token))

    def terminal(self, session: Union[str, Session], *, rows: int = 24, cols: int = 80,
                 command: Optional[str] = None, term: Optional[str] = None,
                 subject_token: Optional[str] = None) -> Terminal:
        """A terminal on the session: a login shell (or ``command``, a shell line) on a pty of the
        session's own, over a WebSocket. Needs the optional websocket-client package."""
        e = self._transport.endpoint
        host = f"[{e.host}]" if ":" in e.host else e.host
        query = {"rows": str(rows), "cols": str(cols)}
        if command is not None:
            query["command"] = command
        if term is not None:
            query["term"] = term
        url = (f"{'wss' if e.scheme == 'https' else 'ws'}://{host}:{e.port}{self._session_path(session)}"
               f"/terminal?{urllib.parse.urlencode(query)}")
        headers = self._headers(subject_token)
        headers.pop("Accept", None)
        return open_terminal(url, headers, self._transport.ssl_context, self._transport.timeout)

    def exec(self, session: Union[str, Session], command: Union[str, Sequence[str]], *,
             stdin: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
             cwd: Optional[str] = None, timeout: Optional[str] = None,
             subject_token: Optional[str] = None) -> ExecResult:
        """Runs `command` (a list of arguments, or a shell line) in the session and returns
        its output (DLP applied) and exit. A non-zero exit is a result, not an exception."""
        if isinstance(command, str):
            cmd: Any = command
        elif isinstance(command, Sequence) and command and all(isinstance(a, str) for a in command):
            cmd = list(command)
        else:
            raise UsageError("command must be a shell line or a non-empty list of strings")
        body: Dict[str, Any] = {"command": cmd}
        if stdin is not None:
            body["stdin"] = stdin
        if env:
            body["env"] = {str(k): str(v) for k, v in env.items()}
        if cwd is not None:
            body["cwd"] = cwd
        if timeout is not None:
            body["timeout"] = timeout
        return ExecResult.from_json(self._call("POST", self._session_path(session) + "/exec", json_body=body,
                                               subject_token=subject_token, timeout=None))

    def run_code(self, session: Union[str, Session], code: str, *, timeout: Optional[str] = None,
                 subject_token: Optional[str] = None) -> CellResult:
        """Runs a cell of Python in the session's interpreter, which keeps its variables
        between cells. A cell that raises is a result (`error`), not an exception; a cell the
        validator refuses raises CodeRejectedError."""
        if not isinstance(code, str):
            raise UsageError("code must be a string")
        body: Dict[str, Any] = {"code": code}
        if timeout is not None:
            body["timeout"] = timeout
        return CellResult.from_json(self._call("POST", self._session_path(session) + "/code", json_body=body,
                                               subject_token=subject_token, timeout=None))

    def interrupt_code(self, session: Union[str, Session], *, subject_token: Optional[str] = None) -> bool:
        """Interrupts the running cell (KeyboardInterrupt; the interpreter keeps its state):
        True when a cell was running."""
        body = self._call("POST", self._session_path(session) + "/code/interrupt", subject_token=subject_token)
        return bool(body.get("interrupted")) if isinstance(body, Mapping) else False

    @staticmethod
    def _session_path(session: Union[str, Session]) -> str:
        session_id = session.id if isinstance(session, Session) else session
        return f"/v1/sessions/{check_segment('session id', session_id)}"

    # --- snapshots of a session's workspace, and forks from them (docs/sessions.md) ---
    def snapshot(self, session: Union[str, Session], retention: Optional[str] = None, *,
                 subject_token: Optional[str] = None) -> Snapshot:
        """Archives the session's work dir (its files, links and modes; not its processes'
        memory, not /tmp) into a snapshot of the session's owner, kept for `retention` ("7d"
        by default, from "1m" to "30d"). The owner's act only: `NotFoundError` for anyone else."""
        body = {"retention": retention} if retention is not None else None
        return Snapshot.from_json(self._call("POST", self._session_path(session) + "/snapshot", json_body=body,
                                             subject_token=subject_token))

    def snapshots(self, *, subject_token: Optional[str] = None) -> List[Snapshot]:
        """This caller's snapshots that have not expired (every owner's with manage_sessions)."""
        body = self._call("GET", "/v1/snapshots", subject_token=subject_token)
        return [Snapshot.from_json(s) for s in body.get("snapshots", []) if isinstance(s, Mapping)]

    def get_snapshot(self, snapshot: Union[str, Snapshot], *, subject_token: Optional[str] = None) -> Snapshot:
        return Snapshot.from_json(self._call("GET", self._snapshot_path(snapshot), subject_token=subject_token))

    def delete_snapshot(self, snapshot: Union[str, Snapshot], *, subject_token: Optional[str] = None) -> None:
        """Deletes it, its archive with it (sessions started from it keep their files)."""
        self._call("DELETE", self._snapshot_path(snapshot), subject_token=subject_token)

    def fork(self, session: Union[str, Session], retention: Optional[str] = None, *,
             idle_timeout: Optional[str] = None, labels: Optional[Mapping[str, str]] = None,
             subject_token: Optional[str] = None) -> Session:
        """A new session of the same template starting with a copy of this one's workspace:
        `snapshot()` then `create_session(from_snapshot=...)`. The snapshot is kept for
        `retention` (`snapshots()` lists it, by `session_id`); deleted again if the creation
        fails, so a failed fork leaves nothing behind."""
        taken = self.snapshot(session, retention, subject_token=subject_token)
        try:
            return self.create_session(from_snapshot=taken, idle_timeout=idle_timeout, labels=labels,
                                       subject_token=subject_token)
        except AirlockError:
            try:
                self.delete_snapshot(taken, subject_token=subject_token)
            except AirlockError:
                pass  # the creation's error is the one to raise; the snapshot expires anyway
            raise

    @staticmethod
    def _snapshot_path(snapshot: Union[str, Snapshot]) -> str:
        snapshot_id = snapshot.id if isinstance(snapshot, Snapshot) else snapshot
        return f"/v1/snapshots/{check_segment('snapshot id', snapshot_id)}"

    # --- a session's files: paths relative to its workspace, its work dir /work ---
    def write_file(self, session: Union[str, Session], path: str,
                   data: Union[bytes, bytearray, memoryview, BinaryIO], *,
                   subject_token: Optional[str] = None) -> FileInfo:
        """Writes `data` to `path` (its parent directories are created) and returns what was
        stored: its size, its SHA-256 and what DLP redacted. `data` is bytes, or a binary file
        object streamed from where it stands in chunks (chunked transfer encoding), never read
        whole (after a 429 or 503 it is sent again only if it can seek back)."""
        if isinstance(data, (str, io.TextIOBase)) or not (
                isinstance(data, (bytes, bytearray, memoryview)) or hasattr(data, "read")):
            raise UsageError("data must be bytes or a binary file object (open(name, 'rb'))")
        target = self._file_path(session, path)
        if target.endswith("/"):
            raise UsageError(f"{path!r} names a directory: use make_directory")
        resp, body = self._send("PUT", target, content=data, subject_token=subject_token)
        return FileInfo.from_json(self._json_object(resp, body))

    def make_directory(self, session: Union[str, Session], path: str, *,
                       subject_token: Optional[str] = None) -> FileInfo:
        """Creates the directory `path` and its parents (PUT with a trailing "/" and no body)."""
        target = self._file_path(session, path).rstrip("/") + "/"
        resp, body = self._send("PUT", target, content=b"", subject_token=subject_token)
        return FileInfo.from_json(self._json_object(resp, body))

    def read_file(self, session: Union[str, Session], path: str, *,
                  subject_token: Optional[str] = None) -> bytes:
        """The content of a regular file as DLP left it, whole in memory (at most the client's
        `max_response_bytes`; `download_file` streams a larger one)."""
        resp, listing = self._send("GET", self._file_path(session, path), accept=FILE_ACCEPT,
                                   subject_token=subject_token)
        if resp.media_type != OCTET_STREAM:
            raise self._wrong_type("is_a_directory", f"{path!r} is a directory", resp, listing)
        return resp.body

    def download_file(self, session: Union[str, Session], path: str, dest: BinaryIO, *,
                      subject_token: Optional[str] = None) -> int:
        """Writes the content of a regular file into `dest` (a binary file object) chunk by
        chunk as it arrives; returns the number of bytes written. After a failure part of it
        may have been written."""
        resp, listing = self._send("GET", self._file_path(session, path), accept=FILE_ACCEPT, sink=dest,
                                   subject_token=subject_token)
        if resp.media_type != OCTET_STREAM:
            raise self._wrong_type("is_a_directory", f"{path!r} is a directory", resp, listing)
        return resp.streamed

    def list_files(self, session: Union[str, Session], path: str = "", *,
                   subject_token: Optional[str] = None) -> List[FileEntry]:
        """The entries of a directory ("": the workspace itself)."""
        resp, body = self._send("GET", self._file_path(session, path, workspace_allowed=True),
                                accept=FILE_ACCEPT, subject_token=subject_token)
        if resp.media_type == OCTET_STREAM:
            raise self._wrong_type("not_a_directory", f"{path!r} is not a directory", resp, None)
        entries = self._json_object(resp, body).get("entries")
        if not isinstance(entries, list):
            return []
        return [FileEntry.from_json(e) for e in entries if isinstance(e, Mapping)]

    def remove_file(self, session: Union[str, Session], path: str, *,
                    subject_token: Optional[str] = None) -> None:
        """Removes a file, or an empty directory (409 `directory_not_empty` otherwise)."""
        self._send("DELETE", self._file_path(session, path), subject_token=subject_token)

    def _file_path(self, session: Union[str, Session], path: str, *, workspace_allowed: bool = False) -> str:
        """/v1/sessions/{id}/files/{path}, each segment of `path` percent-encoded; a leading "/"
        is the workspace's root. The daemon decides what a path may name (`invalid_path`,
        `outside_workspace`)."""
        if not isinstance(path, str):
            raise UsageError("a file's path is a string, relative to the session's workspace")
        relative = path.lstrip("/")
        if not relative and not workspace_allowed:
            raise UsageError("name a file or directory in the session's workspace (the path is empty)")
        return self._session_path(session) + "/files/" + urllib.parse.quote(relative, safe="/")

    @staticmethod
    def _json_object(resp: Response, body: Any) -> Mapping[str, Any]:
        if not isinstance(body, Mapping):
            raise TransportError(f"the answer ({resp.status}) is not a JSON object")
        return body

    @staticmethod
    def _wrong_type(kind: str, message: str, resp: Response, body: Any) -> AirlockError:
        """A GET answered with a listing where a file was asked for, or the reverse: the error
        the daemon gives a write or delete of the wrong type, raised here."""
        return error_class(kind, 409)(kind, message, status=resp.status,
                                      body=body if isinstance(body, Mapping) else {})

    # --- audit ---
    def audit_checkpoint(self) -> Dict[str, Any]:
        """The latest signed checkpoint (the daemon signs anew if records are unsigned)."""
        return dict(self._call("GET", "/v1/audit/checkpoint"))

    def audit_proof(self, index: int, *, sign_if_needed: bool = True) -> Dict[str, Any]:
        """A record, its inclusion proof and the checkpoint (GET /v1/audit/proof/{index}).
        A record not yet under a signed checkpoint is answered 404: with `sign_if_needed` the
        client asks for a checkpoint (which signs) and tries once more."""
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise UsageError("an audit index is a whole number")
        try:
            return dict(self._call("GET", f"/v1/audit/proof/{index}"))
        except NotFoundError:
            if not sign_if_needed:
                raise
        self.audit_checkpoint()
        return dict(self._call("GET", f"/v1/audit/proof/{index}"))

    def audit_verify(self) -> Dict[str, Any]:
        """The daemon's own verification of its whole log (not offline: see verify_proof)."""
        return dict(self._call("GET", "/v1/audit/verify"))

    def verify_invocation(self, invocation: Invocation,
                          public_key: _audit.PublicKeyLike) -> _audit.VerifiedRecord:
        """Fetches the proof of an invocation's audit record and verifies it offline under the
        key you trust; also that the record is this invocation's and has its leaf hash."""
        if invocation.audit is None:
            raise _audit.ProofInvalid(f"invocation {invocation.id} has no audit record yet")
        verified = _audit.verify_proof(self.audit_proof(invocation.audit.index), public_key)
        if verified.leaf_hash.hex() != invocation.audit.leaf_hash:
            raise _audit.ProofInvalid("the proven record is not the one the invocation names")
        if verified.record.get("invocation_id") != invocation.id:
            raise _audit.ProofInvalid("the proven record is of another invocation")
        return verified

    def healthz(self) -> Dict[str, Any]:
        return dict(self._call("GET", "/healthz"))

    # --- LLM tool use (llm.py) ---
    def toolbox(self, *, wait_for_approval: Optional[float] = None,
                code_interpreter: Optional["CodeInterpreter"] = None) -> "ToolBox":
        """The caller's tools with their schemas, as OpenAI and Anthropic tool definitions,
        and the dispatcher of those APIs' tool calls back through Airlock (a critical call
        is long-polled up to `wait_for_approval` seconds; reported pending without it).
        `code_interpreter` (`Client.code_interpreter(...)`) is offered beside them."""
        from .llm import ToolBox
        return ToolBox.load(self, wait_for_approval=wait_for_approval, code_interpreter=code_interpreter)

    def code_interpreter(self, template: str, *, name: str = "code_interpreter",
                         timeout: Optional[str] = None, idle_timeout: Optional[str] = None,
                         labels: Optional[Mapping[str, str]] = None) -> "CodeInterpreter":
        """A code-interpreter tool for a model, backed by a session of `template` (created
        on its first call, ended by its `close()`): llm.CodeInterpreter."""
        from .llm import CodeInterpreter
        return CodeInterpreter(self, template, name=name, timeout=timeout, idle_timeout=idle_timeout,
                               labels=labels)

    def tools_for_openai(self) -> List[Dict[str, Any]]:
        return self.toolbox().openai_tools()

    def tools_for_anthropic(self) -> List[Dict[str, Any]]:
        return self.toolbox().anthropic_tools()
