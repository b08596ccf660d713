"""A small synchronous JSON-RPC client on the daemon's control socket.

Standard library only (socket + json): it is on every command's hot path.
One connection carries many requests; responses are matched by id and the
``agent.event`` notifications that arrive meanwhile are queued in order.
"""

from __future__ import annotations

# _socket, not socket: the socket module's enums and helpers cost start-up time
# (measured: several ms of every run) and a Unix stream socket needs none of them
import _socket
import contextlib
import json
import os
import sys
import time
from collections import deque

from daemon.protocol import DAEMON_STATUS, LINE_TOO_LONG, RpcError, socket_path
from ikictl._errors import DaemonUnreachable, UsageError

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Client",
    "DaemonUnreachable",
    "RequestTooLarge",
    "RpcError",
    "connect",
    "default_socket",
]

# the smallest max_line_bytes the daemon's config accepts: a line this short
# always fits, and only a longer one costs a question about the limit
_SMALLEST_LIMIT = 1024
_WHAT = {
    "agent.prompt": "the prompt",
    "agent.create": "the prompt",
    "agent.fork": "the prompt",
    "mail.send": "the mail",
    "agent.set_system": "the system prompt",
}


class RequestTooLarge(UsageError):
    """A request line longer than the daemon's max_line_bytes (exit code 2)."""

    def __init__(self, method: str, size: int, limit: int | None) -> None:
        what = _WHAT.get(method, f"the {method} request")
        of = f"limit {limit:,}" if limit else "over the daemon's limit"
        super().__init__(
            f"{what} is too large: {size:,} bytes, {of} (max_line_bytes in config.json)"
        )
        self.size, self.limit = size, limit


def default_socket(override: str | None = None) -> str:
    return override or str(socket_path())


class Client:
    def __init__(self, sock: _socket.socket, path: str) -> None:
        self.sock = sock
        self.path = path
        self._buf = b""
        self._next_id = 0
        self._responses: dict[int, dict[str, Any]] = {}
        self.notifications: deque[dict[str, Any]] = deque()
        self.line_limit: int | None = None  # the daemon's max_line_bytes, once it told
        self._asked_limit = False
        self._big: tuple[str, int] | None = None  # the last long line sent: method, size

    @classmethod
    def open(cls, path: str, timeout: float | None = None) -> Client:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        return cls(sock, path)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ requests

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Write one request; returns its id (read the answer with ``wait``)."""
        self._next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params:
            msg["params"] = {k: v for k, v in params.items() if v is not None}
        try:
            data = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        except UnicodeEncodeError as e:  # a surrogate: argv bytes that were not UTF-8
            bad = e.object[e.start] if isinstance(e.object, str) else "?"
            raise UsageError(
                f"an argument of {method} is not valid UTF-8 (byte 0x{ord(bad) & 0xFF:02x}); "
                "give text"
            ) from None
        if len(data) > _SMALLEST_LIMIT:
            limit = self._limit()
            if limit is not None and len(data) > limit:
                raise RequestTooLarge(method, len(data), limit)
            self._big = (method, len(data))
        try:
            self.sock.sendall(data)
        except OSError as e:
            self._last_words()  # the daemon may have closed on a line too long: say so
            raise DaemonUnreachable(
                f"the daemon closed the connection ({e.strerror or e})"
            ) from None
        return self._next_id

    def _limit(self) -> int | None:
        """The daemon's line limit, asked once (None: it does not report one)."""
        if not self._asked_limit:
            self._asked_limit = True
            try:
                status = self.call(DAEMON_STATUS)
            except RpcError:
                return None
            limit = status.get("max_line_bytes") if isinstance(status, dict) else None
            if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
                self.line_limit = limit
        return self.line_limit

    def _last_words(self) -> None:
        """After a failed write: read what the daemon said before it closed
        (up to 2 s); a refusal of the line too long is raised as such."""
        deadline = time.monotonic() + 2.0
        try:
            while (msg := self.read_message(deadline)) is not None:
                self._keep(msg)
        except DaemonUnreachable:
            return

    def _keep(self, msg: dict[str, Any]) -> None:
        """File a message read off the socket: a response by its id, a
        notification in the queue; an error for no request (id null: the
        daemon refused the connection's line) is raised here."""
        if "method" in msg:
            self.notifications.append(msg)
            return
        rid = msg.get("id")
        err = msg.get("error")
        if rid is None and isinstance(err, dict):
            code, message = err.get("code", 0), str(err.get("message", ""))
            if code == LINE_TOO_LONG and self._big is not None:
                raise RequestTooLarge(*self._big, self.line_limit or _limit_in(message))
            raise RpcError(code, message, err.get("data"))
        self._responses[rid] = msg  # type: ignore[index]

    def wait(self, rid: int) -> Any:
        """The result of request ``rid``; raises RpcError for an error answer.

        Any, not object: the caller names the result's type from
        daemon.results where it uses it (``info: ShownAgent = c.call(...)``)."""
        while rid not in self._responses:
            msg = self.read_message()
            if msg is None:  # no deadline was given: only a timeout set on the socket elsewhere
                continue
            self._keep(msg)
        msg = self._responses.pop(rid)
        err = msg.get("error")
        if err is not None:
            raise RpcError(err.get("code", 0), err.get("message", ""), err.get("data"))
        return msg.get("result")

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.wait(self.send(method, params))

    def next_notification(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next queued or arriving notification; None after ``timeout`` seconds."""
        if self.notifications:
            return self.notifications.popleft()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            msg = self.read_message(deadline)
            if msg is None:
                return None
            if "method" in msg:
                return msg
            self._keep(msg)

    # ------------------------------------------------------------ framing

    def read_message(self, deadline: float | None = None) -> dict[str, Any] | None:
        """One JSON line (None when ``deadline`` passes first).

        A KeyboardInterrupt raised while waiting loses nothing: bytes are only
        taken off the socket by a recv that returned."""
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line, self._buf = self._buf[:nl], self._buf[nl + 1 :]
                if not line.strip():
                    continue
                return _message(line)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return None
            except OSError as e:
                raise DaemonUnreachable(
                    f"the daemon closed the connection ({e.strerror or e})"
                ) from None
            finally:
                if deadline is not None:
                    self.sock.settimeout(None)
            if not chunk:
                raise DaemonUnreachable("the daemon closed the connection")
            self._buf += chunk


def _limit_in(message: str) -> int | None:
    """The limit the daemon names in its refusal ("line longer than N bytes")."""
    import re

    m = re.search(r"longer than (\d+) bytes", message)
    return int(m.group(1)) if m else None


def _message(line: bytes) -> dict[str, Any]:
    """One line from the socket as a JSON-RPC message (a JSON object): what
    answers there may not be an ikigai daemon at all, so anything else is a
    clear error, not a traceback."""
    try:
        msg = json.loads(line)
    except ValueError:  # not JSON, or not UTF-8
        msg = None
    if not isinstance(msg, dict):
        raise DaemonUnreachable(
            f"what answers on the socket is not an ikigai daemon: it sent a line of {len(line)} "
            "bytes that is not a JSON object"
        )
    return msg


# ---------------------------------------------------------------- connecting


def connect(path: str | None = None, *, autostart: bool = True, quiet: bool = True) -> Client:
    """A connection to the daemon; with ``autostart``, start one when none answers."""
    path = default_socket(path)
    try:
        return Client.open(path)
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as e:
        first = e
    except OSError as e:
        raise DaemonUnreachable(f"cannot connect to {path}: {e.strerror or e}") from None
    if not autostart or not autostart_allowed():
        why = "not running" if isinstance(first, FileNotFoundError) else "refused the connection"
        raise DaemonUnreachable(
            f"no daemon answers at {path} ({why}); start one with `ikictl daemon start`"
        )
    from ikictl._autostart import start_daemon

    start_daemon(path, quiet=quiet)
    return Client.open(path)


def autostart_allowed() -> bool:
    """IKIGAI_AUTOSTART=0 or config ``"autostart": false`` turn autostart off."""
    flag = os.environ.get("IKIGAI_AUTOSTART", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return False
    try:
        from daemon.paths import read_autostart, resolve_paths
    except ImportError:
        return True
    try:
        return bool(read_autostart(resolve_paths(os.environ).config_file))
    except Exception as e:  # a broken config must not hide the real error
        print(f"ikictl: could not read the config's autostart setting: {e}", file=sys.stderr)
        return True
