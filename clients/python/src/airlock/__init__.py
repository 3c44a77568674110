"""Airlock's Python client: `from airlock import Client` (docs/python.md).

Standard library only; `cryptography` (Debian's python3-cryptography), when importable,
checks the Ed25519 signatures of audit checkpoints (without it they are reported as not
checked, never as good); `websocket-client` (Debian's python3-websocket) for `Client.terminal`.
"""
from ._http import RetryPolicy
from .aio import AsyncClient
from .audit import (ProofInvalid, SignatureInvalid, SignatureUncheckable, VerificationError,
                    VerifiedRecord, proof_holds, verify_checkpoint, verify_proof)
from .client import Client
from .errors import (AirlockError, ApprovalDeniedError, ApprovalExpiredError, AuthenticationError,
                     CodeRejectedError, ConflictError, CredentialDeniedError, DlpBlockedError,
                     InvalidInputError, NotFoundError, PermissionDeniedError, QuotaExceededError, RateLimitedError,
                     RequestRejectedError, ServerError, SubjectRequiredError, TierUnavailableError,
                     TokenExchangeError, ToolDisabledError, ToolError, TransportError,
                     StorageUnavailableError, UnavailableError, UnknownToolError, UsageError, WaitTimeoutError)
from .llm import CodeInterpreter, ToolBox, ToolResult
from .models import (Approval, AuditRef, CellResult, ErrorInfo, ExchangedToken, ExecResult, FileEntry, FileInfo, Invocation,
                     PendingApproval, Session, Snapshot, Tool)
from .terminal import Terminal

__version__ = "0.1.0"

__all__ = [
    "Client", "AsyncClient", "RetryPolicy", "ToolBox", "ToolResult", "CodeInterpreter",
    "Invocation", "ErrorInfo", "AuditRef", "PendingApproval", "Tool", "Approval", "ExchangedToken", "Session", "ExecResult", "CellResult",
    "FileInfo", "FileEntry", "Snapshot", "Terminal",
    "verify_proof", "verify_checkpoint", "proof_holds", "VerifiedRecord",
    "VerificationError", "ProofInvalid", "SignatureInvalid", "SignatureUncheckable",
    "AirlockError", "UsageError", "TransportError", "WaitTimeoutError", "AuthenticationError",
    "SubjectRequiredError", "PermissionDeniedError", "CredentialDeniedError", "ToolDisabledError",
    "TierUnavailableError", "ApprovalDeniedError", "ApprovalExpiredError", "NotFoundError",
    "UnknownToolError", "InvalidInputError", "CodeRejectedError", "DlpBlockedError",
    "ConflictError", "RequestRejectedError", "RateLimitedError", "QuotaExceededError", "UnavailableError",
    "StorageUnavailableError",
    "ServerError", "TokenExchangeError", "ToolError",
]
