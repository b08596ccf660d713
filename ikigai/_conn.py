"""The synchronous connection: JSON-RPC over the daemon's control socket.

Standard library only (socket + json): it is on every ikictl command's hot
path. One connection carries many requests; responses are matched by id. The
notifications that arrive meanwhile are queued in order: those of a routed
subscription in its own bounded inbox (``route``), the rest in one queue.
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

from ikigai._inbox import Inbox
from ikigai.errors import DaemonUnreachable, RequestTooLarge, UsageError
from protocol import DAEMON_STATUS, LINE_TOO_LONG, RpcError, socket_path

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any, Self

__all__ = [
    "Connection",
    "DaemonUnreachable",
    "RequestTooLarge",
    "RpcError",
    "default_socket",
]

# the smallest max_line_bytes the daemon's config accepts: a line this short
# always fits, and only a longer one costs a question about the limit
SMALLEST_LIMIT = 1024


def default_socket(override: str | None = None) -> str:
    return override or str(socket_path())


class Connection:
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
        self._inboxes: dict[int, Inbox] = {}  # routed subscriptions' notifications

    @classmethod
    def open(cls, path: str, timeout: float | None = None) -> Self:
        """Connect to the socket at ``path`` (no autostart)."""
        return cls(open_socket(path, timeout), path)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ requests

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Write one request; returns its id (read the answer with ``wait``)."""
        self._next_id += 1
        rid = self._next_id  # asking the limit below sends a request of its own
        data = encode_request(rid, method, params)
        if len(data) > SMALLEST_LIMIT:
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
        return rid

    def _limit(self) -> int | None:
        """The daemon's line limit, asked once (None: it does not report one)."""
        if not self._asked_limit:
            self._asked_limit = True
            try:
                status = self.call(DAEMON_STATUS)
            except RpcError:
                return None
            self.line_limit = line_limit_of(status)
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
            box = self._inboxes.get(_sid(msg))
            if box is not None:
                box.put(msg)
            else:
                self.notifications.append(msg)
            return
        rid = msg.get("id")
        if rid is None and "error" in msg:
            raise refusal(msg["error"], self._big, self.line_limit)
        if type(rid) is int:  # any other id answers no request of ours
            self._responses[rid] = msg

    def wait(self, rid: int) -> Any:
        """The result of request ``rid``; raises RpcError for an error answer.

        Any, not object: the caller names the result's type from
        protocol.results where it uses it (``info: ShownAgent = c.call(...)``)."""
        while rid not in self._responses:
            msg = self.read_message()
            if msg is None:  # no deadline was given: only a timeout set on the socket elsewhere
                continue
            self._keep(msg)
        return result_of(self._responses.pop(rid))

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.wait(self.send(method, params))

    def wait_for(self, rid: int, timeout: float | None = None) -> Any:
        """``wait``, raising TimeoutError after ``timeout`` seconds (None: no limit)."""
        if timeout is not None:
            deadline = time.monotonic() + timeout
            while rid not in self._responses:
                msg = self.read_message(deadline)
                if msg is None:
                    raise TimeoutError(f"no answer from the daemon within {timeout:g} s")
                self._keep(msg)
        return self.wait(rid)

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

    # ------------------------------------------------------------ subscriptions

    def route(self, sid: int) -> None:
        """Keep subscription ``sid``'s notifications apart, for ``next_of``
        (those already queued move there)."""
        box = self._inboxes[sid] = Inbox()
        kept: deque[dict[str, Any]] = deque()
        for msg in self.notifications:
            (box.put if _sid(msg) == sid else kept.append)(msg)
        self.notifications = kept

    def unroute(self, sid: int) -> None:
        """Stop keeping ``sid``'s notifications (what is left of them is dropped)."""
        self._inboxes.pop(sid, None)

    def next_of(self, sid: int, timeout: float | None = None) -> dict[str, Any] | None:
        """The next notification of routed subscription ``sid``; None after ``timeout``."""
        box = self._inboxes[sid]
        deadline = None if timeout is None else time.monotonic() + timeout
        while not box:
            msg = self.read_message(deadline)
            if msg is None:
                return None
            self._keep(msg)
        return box.get()

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


def encode_request(rid: int, method: str, params: dict[str, Any] | None) -> bytes:
    """One request line; params whose value is None are left out (the
    daemon's default). UsageError for text that is not valid UTF-8."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params:
        msg["params"] = {k: v for k, v in params.items() if v is not None}
    try:
        return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    except UnicodeEncodeError as e:  # a surrogate: argv bytes that were not UTF-8
        bad = e.object[e.start] if isinstance(e.object, str) else "?"
        raise UsageError(
            f"an argument of {method} is not valid UTF-8 (byte 0x{ord(bad) & 0xFF:02x}); give text"
        ) from None


def result_of(msg: dict[str, Any]) -> Any:
    """An answer's result; RpcError for an error answer."""
    err = msg.get("error")
    if err is None:
        return msg.get("result")
    raise rpc_error(err)


def rpc_error(err: object) -> Exception:
    """An answer's ``error`` member as the exception to raise: RpcError, or
    DaemonUnreachable when it is not the object JSON-RPC says it is."""
    if not isinstance(err, dict):
        return DaemonUnreachable(
            "what answers on the socket is not an ikigai daemon: it sent an error "
            "that is not a JSON object"
        )
    code = err.get("code")
    message = err.get("message")
    return RpcError(
        code if type(code) is int else 0,
        message if isinstance(message, str) else str(message or ""),
        err.get("data"),
    )


def refusal(err: object, big: tuple[str, int] | None, limit: int | None) -> Exception:
    """An error answer to no request (id null): the daemon refused the
    connection's line; the one too long is said as such."""
    e = rpc_error(err)
    if isinstance(e, RpcError) and e.code == LINE_TOO_LONG and big is not None:
        return RequestTooLarge(*big, limit or limit_in(e.message))
    return e


def line_limit_of(status: object) -> int | None:
    """max_line_bytes from a daemon.status answer (None: it does not say)."""
    limit = status.get("max_line_bytes") if isinstance(status, dict) else None
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return limit
    return None


def _sid(msg: dict[str, Any]) -> int:
    """The subscription a notification belongs to (-1: none)."""
    params = msg.get("params")
    sid = params.get("subscription") if isinstance(params, dict) else None
    return sid if type(sid) is int else -1


def limit_in(message: str) -> int | None:
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


def connect_socket(path: str, *, autostart: bool, timeout: float | None = None) -> _socket.socket:
    """A connected socket to the daemon at ``path``; with ``autostart``, start
    one when none answers (IKIGAI_AUTOSTART=0 or config "autostart": false
    turn that off)."""
    try:
        return open_socket(path, timeout)
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as e:
        first: OSError = e
    except OSError as e:
        raise DaemonUnreachable(f"cannot connect to {path}: {e.strerror or e}") from None
    if not autostart or not autostart_allowed():
        why = "not running" if isinstance(first, FileNotFoundError) else "refused the connection"
        raise DaemonUnreachable(
            f"no daemon answers at {path} ({why}); start one with `ikictl daemon start`"
        )
    from ikigai._autostart import start_daemon

    start_daemon(path)
    return open_socket(path, timeout)


def open_socket(path: str, timeout: float | None = None) -> _socket.socket:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.settimeout(None)
    except BaseException:
        sock.close()
        raise
    return sock


def autostart_allowed() -> bool:
    """IKIGAI_AUTOSTART=0 or config ``"autostart": false`` turn autostart off."""
    flag = os.environ.get("IKIGAI_AUTOSTART", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return False
    from protocol.paths import read_autostart, resolve_paths

    try:
        return bool(read_autostart(resolve_paths(os.environ).config_file))
    except Exception as e:  # a broken config must not hide the real error
        print(f"ikictl: could not read the config's autostart setting: {e}", file=sys.stderr)
        return True
