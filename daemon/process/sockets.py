"""The daemon's control socket as a file: binding it safely, taking the one
systemd passed, telling systemd about readiness, and whether one answers."""

from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path

from protocol.paths import ensure_private_dir


class AlreadyRunning(RuntimeError):
    """Another daemon answers on the socket."""


class StartupError(RuntimeError):
    """The daemon cannot start: the message says why and how to fix it."""


def _socket_answers(path: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(str(path))
    except OSError:
        return False
    finally:
        s.close()
    return True


def bind_socket(path: Path) -> socket.socket:
    """A listening Unix socket at ``path`` (folder 0700, socket 0600). A stale
    socket is removed only if it is a socket and nobody answers on it."""
    ensure_private_dir(path.parent)
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise StartupError(
                f"{path} exists and is not a socket: move it away or set IKIGAI_SOCKET"
            )
        if _socket_answers(path):
            raise AlreadyRunning(f"another ikigaid is already running on {path}")
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(4096)  # bursts of clients (scripts in loops) must not be refused
    return sock


def activated_socket() -> socket.socket | None:
    """The listening socket systemd passed (LISTEN_FDS), if any."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()):
        return None
    count = int(os.environ.get("LISTEN_FDS", "0") or 0)
    if count < 1:
        return None
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)
    return socket.socket(fileno=3)


def sd_notify(message: str) -> bool:
    """Tell systemd (NOTIFY_SOCKET) about our state; False when nobody listens."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        try:
            s.connect(address)
            s.sendall(message.encode())
        except OSError:
            return False
    return True


def socket_in_use(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(path.lstat().st_mode) and _socket_answers(path)
    except OSError as e:
        if e.errno == errno.ENOENT:
            return False
        raise


__all__ = [
    "AlreadyRunning",
    "StartupError",
    "activated_socket",
    "bind_socket",
    "sd_notify",
    "socket_in_use",
]
