"""A terminal on a session (docs/sessions.md, "Terminal"): ``Client.terminal(session)`` opens
``GET /v1/sessions/{id}/terminal`` as a WebSocket and gives a shell on a pseudo-terminal of the
session's own. It needs the optional ``websocket-client`` package (``pip install
airlock-client[terminal]``; Debian's ``python3-websocket``): the rest of the client needs nothing
beyond the standard library.

    with client.terminal(session, rows=40, cols=120) as term:
        term.send("make test\\r")
        print(term.read_until(b"$ ").decode(errors="replace"))
        term.send(b"\\x03")          # ^C: what runs in the foreground stops
        term.resize(50, 160)
        term.send("exit\\r")
        print(term.wait())           # {"type": "exit", "verdict": ..., "exit_code": ...}
"""
from __future__ import annotations

import json
import ssl
import time
from typing import Any, Dict, List, Optional, Union

from .errors import TransportError, UsageError

_SIGNALS = ("INT", "TERM", "HUP", "KILL", "QUIT")


class Terminal:
    """An open terminal. What it shows comes as bytes (through the daemon's DLP); its end as
    ``exit``, the daemon's last message. Not thread-safe: one reader and writer at a time."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self.exit: Optional[Dict[str, Any]] = None
        self.errors: List[str] = []  # controls the daemon refused, with its reason

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, keys: Union[str, bytes]) -> None:
        """Keystrokes as they are (``"\\r"`` is Enter, ``b"\\x03"`` is ^C)."""
        data = keys.encode("utf-8") if isinstance(keys, str) else bytes(keys)
        self._socket.send_binary(data)

    def resize(self, rows: int, cols: int) -> None:
        """The window's new size; the foreground gets SIGWINCH."""
        self._socket.send(json.dumps({"type": "resize", "rows": rows, "cols": cols}))

    def signal(self, name: str) -> None:
        """A signal to the shell's process group: INT, TERM, HUP, KILL or QUIT."""
        if name not in _SIGNALS:
            raise UsageError(f"signal {name!r}: one of {', '.join(_SIGNALS)}")
        self._socket.send(json.dumps({"type": "signal", "signal": name}))

    def read(self, timeout: float = 1.0) -> bytes:
        """What the terminal shows next, waiting at most ``timeout`` seconds; b"" when nothing
        came, or once it has ended (``exit`` is then set)."""
        import websocket  # type: ignore[import]

        if self.exit is not None:
            return b""
        self._socket.settimeout(timeout)
        while True:
            try:
                opcode, data = self._socket.recv_data()
            except websocket.WebSocketTimeoutException:
                return b""
            except websocket.WebSocketConnectionClosedException:
                self.exit = self.exit or {"type": "exit", "verdict": "connection_closed"}
                return b""
            if opcode == websocket.ABNF.OPCODE_BINARY:
                return bytes(data)
            if opcode == websocket.ABNF.OPCODE_TEXT:
                self._take_control(data)
                if self.exit is not None:
                    return b""
            elif opcode == websocket.ABNF.OPCODE_CLOSE:
                self.exit = self.exit or {"type": "exit", "verdict": "connection_closed"}
                return b""

    def read_until(self, marker: bytes, timeout: float = 10.0) -> bytes:
        """What it shows until ``marker`` appears (or ``timeout`` passes, or it ends)."""
        seen = b""
        deadline = time.monotonic() + timeout
        while marker not in seen and self.exit is None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            seen += self.read(min(left, 1.0))
        return seen

    def wait(self, timeout: float = 30.0) -> Dict[str, Any]:
        """Reads (and drops) what it shows until it ends; its exit message."""
        deadline = time.monotonic() + timeout
        while self.exit is None and time.monotonic() < deadline:
            self.read(min(deadline - time.monotonic(), 1.0))
        if self.exit is None:
            raise TransportError(f"the terminal did not end within {timeout} s")
        return self.exit

    def close(self) -> None:
        """Closes it: a shell still running is hung up by the daemon."""
        self._socket.close()

    def _take_control(self, data: Union[str, bytes]) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if message.get("type") == "exit":
            self.exit = message
        elif message.get("type") == "error":
            self.errors.append(str(message.get("message", "")))


def open_terminal(url: str, headers: Dict[str, str], ssl_context: Optional[ssl.SSLContext],
                  timeout: float) -> Terminal:
    """Opens the WebSocket at ``url`` (ws:// or wss://) with ``headers``; a refusal raises the
    daemon's error."""
    try:
        import websocket
    except ImportError:
        raise UsageError("a terminal needs the websocket-client package "
                         "(pip install airlock-client[terminal]; Debian: python3-websocket)") from None
    options: Dict[str, Any] = {"header": [f"{k}: {v}" for k, v in headers.items()], "timeout": timeout}
    if ssl_context is not None:
        options["sslopt"] = {"context": ssl_context}
    try:
        socket = websocket.create_connection(url, **options)
    except websocket.WebSocketBadStatusException as e:
        raise _refusal(e) from None
    except (OSError, websocket.WebSocketException) as e:
        raise TransportError(f"cannot open the terminal: {e}") from None
    return Terminal(socket)


def _refusal(e: Any) -> Exception:
    """The daemon's error for a refused upgrade (its status and JSON body)."""
    from .errors import error_class

    status = int(getattr(e, "status_code", 0) or 0)
    try:
        body = json.loads(getattr(e, "resp_body", b"") or b"{}")
    except ValueError:
        body = {}
    error = body.get("error", {}) if isinstance(body, dict) else {}
    kind = str(error.get("kind", "")) if isinstance(error, dict) else ""
    message = str(error.get("message", str(e))) if isinstance(error, dict) else str(e)
    return error_class(kind, status)(kind, message, status=status, body=body if isinstance(body, dict) else None)
