"""The asyncio client: every method of `Client`, awaited.

It runs the synchronous client in a thread pool (`loop.run_in_executor`) instead of speaking
HTTP over asyncio streams. Why: one HTTP implementation (http.client: chunked bodies, TLS
with certificate and host name checks, time-outs) instead of a second hand-written HTTP/1.1
parser, and the same checks, retries and typed errors by construction. The cost is a thread
per call in flight (the default pool has min(32, CPUs + 4); pass `executor=` for more, e.g.
for many long polls at once) and that cancelling the awaiting task does not abort the
request already sent: its thread finishes it (a tool call is not undone by going away)."""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from typing import Any, BinaryIO, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar, Union

from . import audit as _audit
from .client import Client
from .llm import ToolBox
from .models import (Approval, CellResult, ExchangedToken, ExecResult, FileEntry, FileInfo, Invocation, Session, Snapshot,
                     Tool)

T = TypeVar("T")


class AsyncClient:
    """`AsyncClient("http://127.0.0.1:8750", api_key=KEY)`; the same arguments as `Client`,
    plus `executor` (a concurrent.futures.Executor; the loop's default pool otherwise)."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, *,
                 executor: Optional[concurrent.futures.Executor] = None, **options: Any) -> None:
        self.sync = Client(base_url, api_key, **options)
        self._executor = executor

    @classmethod
    def from_client(cls, client: Client, *,
                    executor: Optional[concurrent.futures.Executor] = None) -> "AsyncClient":
        """An AsyncClient over an existing Client (its credentials and settings)."""
        self = cls.__new__(cls)
        self.sync = client
        self._executor = executor
        return self

    def __repr__(self) -> str:
        return f"AsyncClient({self.sync.base_url!r})"

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def tools(self) -> List[Tool]:
        return await self._run(self.sync.tools)

    async def tool(self, name: str) -> Tool:
        return await self._run(self.sync.tool, name)

    async def invoke(self, name: str, arguments: Optional[Mapping[str, Any]] = None,
                     subject_token: Optional[str] = None, *,
                     wait_for_approval: Optional[float] = None,
                     reason: Optional[str] = None) -> Invocation:
        return await self._run(self.sync.invoke, name, arguments, subject_token,
                               wait_for_approval=wait_for_approval, reason=reason)

    async def invocation(self, invocation_id: str, *, wait: Optional[float] = None) -> Invocation:
        return await self._run(self.sync.invocation, invocation_id, wait=wait)

    async def wait(self, invocation: Union[str, Invocation], *, timeout: float = 300.0,
                   poll: float = 30.0) -> Invocation:
        return await self._run(self.sync.wait, invocation, timeout=timeout, poll=poll)

    async def invocations(self, **filters: Any) -> List[Dict[str, Any]]:
        return await self._run(self.sync.invocations, **filters)

    async def create_session(self, template: Optional[str] = None, **options: Any) -> Session:
        return await self._run(self.sync.create_session, template, **options)

    async def sessions(self, **options: Any) -> List[Session]:
        return await self._run(self.sync.sessions, **options)

    async def session(self, session: Union[str, Session], **options: Any) -> Session:
        return await self._run(self.sync.session, session, **options)

    async def pause_session(self, session: Union[str, Session], **options: Any) -> Session:
        return await self._run(self.sync.pause_session, session, **options)

    async def resume_session(self, session: Union[str, Session], **options: Any) -> Session:
        return await self._run(self.sync.resume_session, session, **options)

    async def end_session(self, session: Union[str, Session], **options: Any) -> Session:
        return await self._run(self.sync.end_session, session, **options)

    async def exec(self, session: Union[str, Session], command: Union[str, Sequence[str]],
                   **options: Any) -> ExecResult:
        return await self._run(self.sync.exec, session, command, **options)

    async def run_code(self, session: Union[str, Session], code: str, **options: Any) -> CellResult:
        return await self._run(self.sync.run_code, session, code, **options)

    async def interrupt_code(self, session: Union[str, Session], **options: Any) -> bool:
        return await self._run(self.sync.interrupt_code, session, **options)

    async def snapshot(self, session: Union[str, Session], retention: Optional[str] = None,
                       **options: Any) -> Snapshot:
        return await self._run(self.sync.snapshot, session, retention, **options)

    async def snapshots(self, **options: Any) -> List[Snapshot]:
        return await self._run(self.sync.snapshots, **options)

    async def get_snapshot(self, snapshot: Union[str, Snapshot], **options: Any) -> Snapshot:
        return await self._run(self.sync.get_snapshot, snapshot, **options)

    async def delete_snapshot(self, snapshot: Union[str, Snapshot], **options: Any) -> None:
        await self._run(self.sync.delete_snapshot, snapshot, **options)

    async def fork(self, session: Union[str, Session], retention: Optional[str] = None,
                   **options: Any) -> Session:
        return await self._run(self.sync.fork, session, retention, **options)

    async def write_file(self, session: Union[str, Session], path: str,
                         data: Union[bytes, bytearray, memoryview, BinaryIO], **options: Any) -> FileInfo:
        """A file object is read in the pool's thread, as the upload goes."""
        return await self._run(self.sync.write_file, session, path, data, **options)

    async def make_directory(self, session: Union[str, Session], path: str, **options: Any) -> FileInfo:
        return await self._run(self.sync.make_directory, session, path, **options)

    async def read_file(self, session: Union[str, Session], path: str, **options: Any) -> bytes:
        return await self._run(self.sync.read_file, session, path, **options)

    async def download_file(self, session: Union[str, Session], path: str, dest: BinaryIO,
                            **options: Any) -> int:
        """`dest` is written in the pool's thread, as the download goes."""
        return await self._run(self.sync.download_file, session, path, dest, **options)

    async def list_files(self, session: Union[str, Session], path: str = "", **options: Any) -> List[FileEntry]:
        return await self._run(self.sync.list_files, session, path, **options)

    async def remove_file(self, session: Union[str, Session], path: str, **options: Any) -> None:
        await self._run(self.sync.remove_file, session, path, **options)

    async def exchange_token(self, subject_token: str, *, scope: Optional[Sequence[str]] = None) -> ExchangedToken:
        return await self._run(self.sync.exchange_token, subject_token, scope=scope)

    async def as_user(self, subject_token: str, *, exchange: bool = False,
                      scope: Optional[Sequence[str]] = None) -> "AsyncClient":
        sync = await self._run(self.sync.as_user, subject_token, exchange=exchange, scope=scope)
        return AsyncClient.from_client(sync, executor=self._executor)

    async def approvals(self, *, subject_token: Optional[str] = None) -> List[Approval]:
        return await self._run(self.sync.approvals, subject_token=subject_token)

    async def approval(self, approval_id: str, *, subject_token: Optional[str] = None) -> Approval:
        return await self._run(self.sync.approval, approval_id, subject_token=subject_token)

    async def approve(self, approval: Union[str, Approval], reason: str = "", *,
                      arguments_sha256: Optional[str] = None,
                      subject_token: Optional[str] = None) -> Approval:
        return await self._run(self.sync.approve, approval, reason, arguments_sha256=arguments_sha256,
                               subject_token=subject_token)

    async def deny(self, approval: Union[str, Approval], reason: str = "", *,
                   arguments_sha256: Optional[str] = None,
                   subject_token: Optional[str] = None) -> Approval:
        return await self._run(self.sync.deny, approval, reason, arguments_sha256=arguments_sha256,
                               subject_token=subject_token)

    async def audit_checkpoint(self) -> Dict[str, Any]:
        return await self._run(self.sync.audit_checkpoint)

    async def audit_proof(self, index: int) -> Dict[str, Any]:
        return await self._run(self.sync.audit_proof, index)

    async def audit_verify(self) -> Dict[str, Any]:
        return await self._run(self.sync.audit_verify)

    async def healthz(self) -> Dict[str, Any]:
        return await self._run(self.sync.healthz)

    async def verify_invocation(self, invocation: Invocation,
                                public_key: _audit.PublicKeyLike) -> _audit.VerifiedRecord:
        return await self._run(self.sync.verify_invocation, invocation, public_key)

    async def toolbox(self, *, wait_for_approval: Optional[float] = None) -> ToolBox:
        """The tool box is synchronous once loaded; dispatch its calls with
        `await asyncio.to_thread(box.dispatch_openai, calls)` in async code."""
        return await self._run(self.sync.toolbox, wait_for_approval=wait_for_approval)

    async def tools_for_openai(self) -> List[Dict[str, Any]]:
        return await self._run(self.sync.tools_for_openai)

    async def tools_for_anthropic(self) -> List[Dict[str, Any]]:
        return await self._run(self.sync.tools_for_anthropic)
