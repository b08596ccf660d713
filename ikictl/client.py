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

from daemon.protocol import RpcError, socket_path
from ikictl._errors import DaemonUnreachable

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Client", "DaemonUnreachable", "RpcError", "connect", "default_socket"]


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
        data = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise DaemonUnreachable(
                f"the daemon closed the connection ({e.strerror or e})"
            ) from None
        return self._next_id

    def wait(self, rid: int) -> Any:
        """The result of request ``rid``; raises RpcError for an error answer.

        Any, not object: the caller names the result's type from
        daemon.results where it uses it (``info: ShownAgent = c.call(...)``)."""
        while rid not in self._responses:
            msg = self.read_message()
            if msg is None:  # no deadline was given: only a timeout set on the socket elsewhere
                continue
            if "id" in msg and "method" not in msg:
                self._responses[msg["id"]] = msg
            else:
                self.notifications.append(msg)
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
            self._responses[msg["id"]] = msg

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
