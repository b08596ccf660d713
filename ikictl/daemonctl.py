"""``ikictl daemon start|stop|logs`` and the autostart used by every command."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from daemon import protocol as p
from ikictl._errors import EXIT_ERROR, EXIT_OK, DaemonUnreachable
from ikictl.client import AUTOSTART_WAIT, Client, connect, default_socket

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from daemon.results import Status


def _env_for(sock: str) -> dict[str, str]:
    env = dict(os.environ)
    if sock != str(p.socket_path(env)):
        env["IKIGAI_SOCKET"] = sock  # --socket given: the daemon listens there
    return env


def log_dir(env: dict[str, str] | None = None) -> Path:
    from daemon.paths import resolve_paths

    return resolve_paths(env or os.environ).log_dir


def _answers(sock: str) -> bool:
    try:
        Client.open(sock, timeout=1.0).close()
        return True
    except OSError:
        return False


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
        if _answers(sock):
            return child.pid
        code = child.poll()
        if code is not None:
            raise DaemonUnreachable(
                f"started ikigaid but it exited with status {code} before its socket answered; "
                f"see {out_file} and `ikictl daemon logs`"
            )
        if time.monotonic() > deadline:
            raise DaemonUnreachable(
                f"started ikigaid but its socket did not answer within {wait:g} s; see `ikictl daemon logs`"
            )
        time.sleep(0.03)


def cmd_start(args: argparse.Namespace) -> int:
    sock = default_socket(args.socket)
    try:
        with Client.open(sock, timeout=2.0) as c:
            st: Status = c.call(p.DAEMON_STATUS)
        already = True
    except OSError:
        already = False
    if not already:
        start_daemon(sock, wait=args.wait)
        with Client.open(sock) as c:
            st = c.call(p.DAEMON_STATUS)
    if args.json:
        print(json.dumps({"started": not already, **st}, indent=2))
    elif already:
        print(f"ikigaid is already running (pid {st.get('pid')}), socket {st.get('socket') or sock}")
    else:
        print(f"ikigaid started (pid {st.get('pid')}), socket {st.get('socket') or sock}, database {st.get('database')}")
    return EXIT_OK


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as gone
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def cmd_stop(args: argparse.Namespace) -> int:
    sock = default_socket(args.socket)
    try:
        c = connect(sock, autostart=False)
    except DaemonUnreachable:
        if args.json:
            print(json.dumps({"stopped": False, "running": False}))
        else:
            print(f"ikigaid is not running (nothing answers at {sock})")
        return EXIT_OK
    with c:
        st: Status = c.call(p.DAEMON_STATUS)
        pid = st.get("pid")
        # it may close the connection before (or instead of) answering
        with contextlib.suppress(DaemonUnreachable):
            c.call(p.DAEMON_SHUTDOWN)
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        gone = not _alive(pid) if isinstance(pid, int) else not _answers(sock)
        if gone:
            break
        time.sleep(0.05)
    else:
        print(f"ikictl: ikigaid (pid {pid}) did not stop within {args.wait:g} s", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps({"stopped": True, "pid": pid}))
    else:
        print(f"ikigaid stopped (pid {pid})")
    return EXIT_OK


def _format_log_line(line: str) -> str:
    try:
        rec = json.loads(line)
    except ValueError:
        return line.rstrip("\n")
    if not isinstance(rec, dict):
        return line.rstrip("\n")
    ts = str(rec.pop("timestamp", rec.pop("time", "")))
    level = str(rec.pop("level", "")).upper()
    event = rec.pop("event", "")
    rest = " ".join(f"{k}={v}" for k, v in rec.items())
    return " ".join(x for x in (ts, f"{level:<7}" if level else "", str(event), rest) if x)


def cmd_logs(args: argparse.Namespace) -> int:
    from daemon.paths import LOG_FILE

    path = log_dir() / LOG_FILE
    if not path.exists():
        print(f"ikictl: no daemon log at {path} yet", file=sys.stderr)
        out = path.parent / "ikigaid.out"
        if out.exists() and out.stat().st_size:
            print(f"(its start-up output, {out}:)", file=sys.stderr)
            sys.stdout.write(out.read_text(errors="replace")[-8000:])
        return EXIT_ERROR
    show = (lambda s: s.rstrip("\n")) if args.json else _format_log_line
    with open(path, errors="replace") as f:
        lines = f.readlines()
        for line in lines[-args.lines :] if args.lines > 0 else lines:
            print(show(line))
        if not args.follow:
            return EXIT_OK
        sys.stdout.flush()
        while True:
            line = f.readline()
            if line:
                print(show(line), flush=True)
            else:
                time.sleep(0.2)
