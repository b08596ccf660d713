"""Starting ikigaid in the background when a command finds no daemon.

Its own module so that client.py (which autostarts) and daemonctl.py (which
starts and stops on request) both use it without importing each other.
"""

from __future__ import annotations

import _socket
import os
import subprocess
import sys
import time
from pathlib import Path

from daemon import protocol as p
from ikictl._errors import DaemonUnreachable

AUTOSTART_WAIT = 10.0  # seconds


def _env_for(sock: str) -> dict[str, str]:
    env = dict(os.environ)
    if sock != str(p.socket_path(env)):
        env["IKIGAI_SOCKET"] = sock  # --socket given: the daemon listens there
    return env


def log_dir(env: dict[str, str] | None = None) -> Path:
    from daemon.paths import resolve_paths

    return resolve_paths(env or os.environ).log_dir


def answers(sock: str) -> bool:
    """Does something accept connections on the socket?"""
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(sock)
        return True
    except OSError:
        return False
    finally:
        s.close()


def start_daemon(sock: str, *, quiet: bool = True, wait: float = AUTOSTART_WAIT) -> int:
    """Start ``ikigaid run`` in the background (its own session, the same
    environment) and wait until its socket answers; the child's pid."""
    env = _env_for(sock)
    logs = log_dir(env)
    logs.mkdir(parents=True, exist_ok=True)
    out_file = logs / "ikigaid.out"
    with open(out_file, "ab") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "daemon", "run"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
    deadline = time.monotonic() + wait
    while True:
        if answers(sock):
            return child.pid
        code = child.poll()
        if code is not None:
            raise DaemonUnreachable(
                f"started ikigaid but it exited with status {code} before its socket answered; "
                f"see {out_file} and `ikictl daemon logs`"
            )
        if time.monotonic() > deadline:
            raise DaemonUnreachable(
                f"started ikigaid but its socket did not answer within {wait:g} s; "
                "see `ikictl daemon logs`"
            )
        time.sleep(0.03)
