"""Connecting, and starting ikigaid in the background when no daemon answers.

Its own module so that both clients (which autostart) and ikictl's
daemonctl (which starts and stops on request) use it.
"""

from __future__ import annotations

import _socket
import os
import subprocess
import sys
import time
from pathlib import Path

import protocol as p
from ikigai.errors import DaemonUnreachable

# seconds. A start takes about a second on an idle machine but more than 20 on
# two cores at a load average of 50: the bound must hold on such a machine,
# and costs nothing when the daemon comes up sooner or exits (seen at once).
AUTOSTART_WAIT = 60.0


def _env_for(sock: str) -> dict[str, str]:
    env = dict(os.environ)
    if sock != str(p.socket_path(env)):
        env["IKIGAI_SOCKET"] = sock  # --socket given: the daemon listens there
    return env


def log_dir(env: dict[str, str] | None = None) -> Path:
    from protocol.paths import resolve_paths

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


def start_daemon(
    sock: str, *, quiet: bool = True, wait: float = AUTOSTART_WAIT, announce: bool = True
) -> int:
    """Start ``ikigaid run`` in the background (its own session, this process's
    environment) and wait until its socket answers; the child's pid.

    ``announce``: say so on stderr (an autostart must not be invisible; `ikictl
    daemon start` prints its own line). ``quiet`` is kept for callers: the
    child's output always goes to ikigaid.out."""
    from protocol.paths import LOG_FILE

    env = _env_for(sock)
    logs = log_dir(env)
    logs.mkdir(parents=True, exist_ok=True)
    out_file = logs / "ikigaid.out"
    fd = os.open(out_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    # what this start appends is its own output: read only that on a failure
    start_size = os.fstat(fd).st_size
    with os.fdopen(fd, "ab") as out:
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
            if announce:
                print(f"started ikigaid (pid {child.pid}; log {logs / LOG_FILE})", file=sys.stderr)
            return child.pid
        code = child.poll()
        if code is not None:
            raise DaemonUnreachable(
                f"started ikigaid but it exited with status {code} before its socket answered"
                f"{_reason(out_file, start_size)}\n"
                f"(its output: {out_file}; its log: {logs / LOG_FILE}, or `ikictl daemon logs`)"
            )
        if time.monotonic() > deadline:
            # not killed: on a busy machine it may be a few seconds from answering
            raise DaemonUnreachable(
                f"started ikigaid (pid {child.pid}) but its socket did not answer within "
                f"{wait:g} s{_reason(out_file, start_size)}\n"
                f"It may still be starting (a loaded machine is slow): see its log "
                f"{logs / LOG_FILE} (`ikictl daemon logs`; \"ikigaid ready\" once it serves) "
                f"and its output {out_file}; `ikictl status` tells whether it answers now, "
                f"`ikictl daemon start --wait S` waits longer"
            )
        time.sleep(0.03)


REASON_LINES = 20
REASON_BYTES = 4096
# the child's output is shown on the terminal: no escape sequence of it may act there
_UNPRINTABLE = dict.fromkeys([*range(0x20), 0x7F, *range(0x80, 0xA0)], "?")
del _UNPRINTABLE[0x09]


def _reason(out_file: Path, start: int) -> str:
    """The last lines this start appended to ikigaid.out (the daemon prints
    why it refuses to start there: the config field, the chmod to run),
    bounded; '' when it printed nothing."""
    try:
        with open(out_file, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            at = max(start, size - REASON_BYTES)
            f.seek(at)
            tail = f.read(REASON_BYTES)
    except OSError:
        return ""
    if at > start:  # cut inside a line: drop its end
        tail = tail.partition(b"\n")[2]
    text = tail.decode("utf-8", "replace")
    lines = [ln.rstrip().translate(_UNPRINTABLE) for ln in text.splitlines()]
    lines = [ln for ln in lines if ln.strip()][-REASON_LINES:]
    return ":\n" + "\n".join(f"  {ln}" for ln in lines) if lines else ""
