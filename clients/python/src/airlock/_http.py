"""HTTP for the client: one request per connection with http.client (standard library), the
checks made before anything is sent, and the bounded retries on 429 and 503."""
from __future__ import annotations

import email.utils
import http.client
import json
import random
import re
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Dict, Mapping, Optional, Tuple, Union

from .errors import AirlockError, TransportError, UsageError, error_class

# The configuration's rule for a tool's name (policy::valid_tool_name).
_TOOL_NAME = re.compile(r"[a-z0-9._-]+")
# Printable ASCII: a credential with a line break would smuggle a header (visible ASCII only).
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")
_DNS_OR_IPV4 = re.compile(r"[A-Za-z0-9.-]+")
_IPV6 = re.compile(r"[0-9A-Fa-f:.]+")

OCTET_STREAM = "application/octet-stream"  # a session file's content, both ways
COPY_CHUNK = 64 * 1024

# A request's body: bytes (sent with Content-Length), or a binary file object that http.client
# reads in blocks and sends with chunked transfer encoding, never whole.
Body = Union[bytes, bytearray, memoryview, BinaryIO]


def check_tool_name(name: str) -> str:
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise UsageError(f"tool name {name!r}: use lower-case letters, digits, '-', '_' and '.'")
    return urllib.parse.quote(name, safe="")


def check_credential(what: str, value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str) or not _VISIBLE_ASCII.fullmatch(value):
        raise UsageError(f"{what} must be visible ASCII (no spaces or line breaks)")
    return value


def check_segment(what: str, value: str) -> str:
    """An id put into a path: visible ASCII, percent-encoded as one segment."""
    if not isinstance(value, str) or not _VISIBLE_ASCII.fullmatch(value):
        raise UsageError(f"{what} {value!r} is not an id")
    return urllib.parse.quote(value, safe="")


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, base_url: str) -> "Endpoint":
        """`http[s]://HOST[:PORT][/]`, as `airlock call --server`: no user, path or query."""
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https"):
            raise UsageError(f"base_url {base_url!r}: must start with http:// or https://")
        if parts.username is not None or parts.path not in ("", "/") or parts.query or parts.fragment:
            raise UsageError(f"base_url {base_url!r}: only http[s]://HOST[:PORT][/]")
        host = parts.hostname or ""
        if not (_DNS_OR_IPV4.fullmatch(host) or (":" in host and _IPV6.fullmatch(host))):
            raise UsageError(f"base_url {base_url!r}: bad host")
        try:
            port = parts.port
        except ValueError as e:
            raise UsageError(f"base_url {base_url!r}: {e}") from None
        if port is None:
            port = 443 if parts.scheme == "https" else 80
        if not 1 <= port <= 65535:
            raise UsageError(f"base_url {base_url!r}: port 1-65535")
        return cls(parts.scheme, host, port)


def media_type(headers: Mapping[str, str]) -> str:
    """Content-Type without its parameters, lower-case ("" when absent); lower-case names."""
    return headers.get("content-type", "").split(";")[0].strip().lower()


@dataclass(frozen=True)
class Response:
    status: int
    headers: Dict[str, str]  # lower-case names
    body: bytes
    streamed: int = 0  # bytes of a file's content written to the sink instead of `body`

    @property
    def media_type(self) -> str:
        return media_type(self.headers)

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else {}
        except ValueError as e:
            raise TransportError(f"the answer ({self.status}) is not JSON: {e}") from None


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of a request the daemon refused before doing anything (429 `queue_full`,
    503 `draining`, ...): at most `max_retries`, each after the answer's Retry-After or else
    an exponential backoff with jitter, and never a wait longer than `max_delay` (a longer
    Retry-After ends the retries at once: the error says what the daemon asked)."""
    max_retries: int = 4
    backoff: float = 0.5
    max_delay: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    on_retry: Optional[Callable[[int, int, float], None]] = None  # (attempt, status, delay)


def retry_after_seconds(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP-date; None when absent or bad."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class _SinkFailed(Exception):
    """Writing a downloaded file where the caller asked failed: raised as its own OSError, not
    as a failure of the connection."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _copy_body(resp: http.client.HTTPResponse, sink: BinaryIO) -> int:
    """Writes the answer's body to `sink` as it arrives; the number of bytes written."""
    written = 0
    while True:
        chunk = resp.read(COPY_CHUNK)
        if not chunk:
            break
        try:
            sink.write(chunk)
        except OSError as e:
            raise _SinkFailed(e) from e
        written += len(chunk)
    # http.client ends a Content-Length body cut short without an error: check it here.
    length = resp.getheader("content-length")
    if length is not None and length.isdigit() and int(length) != written:
        raise http.client.IncompleteRead(b"", int(length) - written)
    return written


class Transport:
    """Sends one request and reads its whole answer, at most `max_response_bytes`; or, given a
    `sink`, writes a 2xx application/octet-stream answer's body to it as it arrives."""

    def __init__(self, endpoint: Endpoint, *, timeout: float,
                 ssl_context: Optional[ssl.SSLContext], max_response_bytes: int) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.ssl_context = ssl_context
        self.max_response_bytes = max_response_bytes

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        e = self.endpoint
        if e.scheme == "https":
            context = self.ssl_context or ssl.create_default_context()
            return http.client.HTTPSConnection(e.host, e.port, timeout=timeout, context=context,
                                               blocksize=COPY_CHUNK)
        # blocksize: how much of a file body is read and sent at a time (8 KiB by default)
        return http.client.HTTPConnection(e.host, e.port, timeout=timeout, blocksize=COPY_CHUNK)

    def send(self, method: str, target: str, body: Optional[Body], headers: Mapping[str, str],
             timeout: Optional[float] = None, sink: Optional[BinaryIO] = None) -> Response:
        conn = self._connection(timeout if timeout is not None else self.timeout)
        try:
            try:
                conn.request(method, target, body=body, headers=dict(headers))
            except (BrokenPipeError, ConnectionResetError):
                # The daemon may answer a body it refuses (a 413, a 404) before reading all of
                # it, and close: its answer, when one came, says more than the broken pipe.
                if conn.sock is None:
                    raise
            resp = conn.getresponse()
            answer_headers = {k.lower(): v for k, v in resp.getheaders()}
            if sink is not None and 200 <= resp.status < 300 and media_type(answer_headers) == OCTET_STREAM:
                return Response(resp.status, answer_headers, b"", streamed=_copy_body(resp, sink))
            data = resp.read(self.max_response_bytes + 1)
            if len(data) > self.max_response_bytes:
                raise TransportError(f"the answer is larger than {self.max_response_bytes} bytes")
            return Response(resp.status, answer_headers, data)
        except _SinkFailed as e:
            raise e.error from None
        except (OSError, http.client.HTTPException) as e:
            where = f"{self.endpoint.scheme}://{self.endpoint.host}:{self.endpoint.port}"
            raise TransportError(f"{method} {target.split('?')[0]} to {where} failed: "
                                 f"{type(e).__name__}: {e}") from None
        finally:
            conn.close()


def error_from_response(resp: Response, body: Any) -> AirlockError:
    """The typed exception of a refusal: `{"error": {"kind", "message"}}`, or RFC 6749's
    `{"error": CODE, "error_description"}` from the token endpoints."""
    from .models import Invocation  # models imports errors only

    retry_after = retry_after_seconds(resp.headers.get("retry-after"))
    error = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(error, Mapping):
        kind, message = str(error.get("kind", "")), str(error.get("message", ""))
    elif isinstance(error, str):
        from .errors import TokenExchangeError
        return TokenExchangeError(error, str(body.get("error_description", "")), status=resp.status,
                                  body=body, retry_after=retry_after)
    else:
        kind, message = f"http_{resp.status}", resp.body[:200].decode("utf-8", "replace")
    invocation = Invocation.from_json(body) if isinstance(body, Mapping) and "id" in body else None
    cls = error_class(kind, resp.status)
    return cls(kind, message, status=resp.status, body=body if isinstance(body, Mapping) else {},
               invocation=invocation, retry_after=retry_after)


def retryable(resp: Response, body: Any) -> bool:
    """A 429 or 503 that made no invocation (no `id`): the daemon refused it before doing
    anything, so sending it again cannot run a tool twice. So is a 429 `quota_exceeded`: its
    invocation was refused at admission, before any tool ran. A 503 that carries an invocation
    (`credential_unavailable`) ran through the pipeline and is not sent again."""
    if resp.status not in (429, 503):
        return False
    if not (isinstance(body, Mapping) and "id" in body):
        return True
    error = body.get("error")
    return resp.status == 429 and isinstance(error, Mapping) and error.get("kind") == "quota_exceeded"


def delay_for(policy: RetryPolicy, attempt: int, retry_after: Optional[float]) -> float:
    if retry_after is not None:
        return retry_after
    return random.uniform(0, policy.backoff * (2 ** attempt))  # "full jitter"


def _file_body(body: Optional[Body]) -> Optional[BinaryIO]:
    if body is None or isinstance(body, (bytes, bytearray, memoryview)):
        return None
    return body


def _start_of(stream: BinaryIO) -> Optional[int]:
    """Where a file body starts, to send it again from there after a refusal; None for a file
    that cannot seek back (it is not sent again: what it gave is gone)."""
    try:
        return stream.tell() if stream.seekable() else None
    except (AttributeError, OSError):
        return None


def send_with_retries(transport: Transport, policy: RetryPolicy, method: str, target: str,
                      body: Optional[Body], headers: Mapping[str, str],
                      timeout: Optional[float] = None,
                      sink: Optional[BinaryIO] = None) -> Tuple[Response, Any]:
    """The answer and its parsed JSON (None for a file's content, application/octet-stream);
    raises the typed exception of a refusal."""
    stream = _file_body(body)
    start = _start_of(stream) if stream is not None else None
    attempt = 0
    while True:
        resp = transport.send(method, target, body, headers, timeout, sink=sink)
        if resp.status < 400 and resp.media_type == OCTET_STREAM:
            return resp, None
        try:
            parsed = resp.json()
        except TransportError:
            if resp.status < 400:
                raise
            parsed = None  # a refusal that is not JSON (a proxy's page): classed by its status
        if resp.status < 400:
            return resp, parsed
        err = error_from_response(resp, parsed)
        if not retryable(resp, parsed) or attempt >= policy.max_retries:
            raise err
        if stream is not None and start is None:
            raise err
        delay = delay_for(policy, attempt, err.retry_after)
        if delay > policy.max_delay:
            raise err
        attempt += 1
        if policy.on_retry:
            policy.on_retry(attempt, resp.status, delay)
        policy.sleep(delay)
        if stream is not None and start is not None:
            stream.seek(start)
