"""``ikictl daemon start|stop|restart|reload|logs`` (the autostart every command
uses is in _autostart.py)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

from ikictl._autostart import answers, log_dir, start_daemon
from ikictl._errors import EXIT_ERROR, EXIT_OK, DaemonUnreachable
from ikictl.client import Client, connect, default_socket


def cmd_start(args: argparse.Namespace) -> int:
    sock = default_socket(args.socket)
    try:
        with Client.open(sock, timeout=2.0) as c:
            st = c.status()
        already = True
    except OSError:
        already = False
    if not already:
        start_daemon(sock, wait=args.wait, announce=False)
        with Client.open(sock) as c:
            st = c.status()
    if args.json:
        print(json.dumps({"started": not already, **st}, indent=2))
    elif already:
        print(
            f"ikigaid is already running (pid {st.get('pid')}), socket {st.get('socket') or sock}"
        )
    else:
        print(
            f"ikigaid started (pid {st.get('pid')}), socket {st.get('socket') or sock}, "
            f"database {st.get('database')}"
        )
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


def _stop(sock: str, wait: float) -> int | None:
    """Stop the daemon on ``sock`` and wait until it has ended; its pid (None:
    none was running). Raises _StopTimeout when it does not end in time."""
    try:
        c = connect(sock, autostart=False)
    except DaemonUnreachable:
        return None
    with c:
        pid = c.status().get("pid")
        # it may close the connection before (or instead of) answering
        with contextlib.suppress(DaemonUnreachable):
            c.shutdown()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        # the socket goes away before the process ends: wait for the process
        gone = not _alive(pid) if isinstance(pid, int) else not answers(sock)
        if gone:
            return pid if isinstance(pid, int) else 0
        time.sleep(0.05)
    raise _StopTimeout(f"ikigaid (pid {pid}) did not stop within {wait:g} s")


class _StopTimeout(Exception):
    pass


def cmd_stop(args: argparse.Namespace) -> int:
    sock = default_socket(args.socket)
    try:
        pid = _stop(sock, args.wait)
    except _StopTimeout as e:
        print(f"ikictl: {e}", file=sys.stderr)
        return EXIT_ERROR
    if pid is None:
        if args.json:
            print(json.dumps({"stopped": False, "running": False}))
        else:
            print(f"ikigaid is not running (nothing answers at {sock})")
    elif args.json:
        print(json.dumps({"stopped": True, "pid": pid}))
    else:
        print(f"ikigaid stopped (pid {pid})")
    return EXIT_OK


def cmd_restart(args: argparse.Namespace) -> int:
    """Stop, then start with THIS shell's environment: how a daemon started
    before `export OPENAI_API_KEY=...` gets the key."""
    sock = default_socket(args.socket)
    try:
        old = _stop(sock, args.wait)
    except _StopTimeout as e:
        print(f"ikictl: {e}; not restarted", file=sys.stderr)
        return EXIT_ERROR
    start_daemon(sock, announce=False)
    with Client.open(sock) as c:
        st = c.status()
    pid, where = st.get("pid"), st.get("socket") or sock
    if args.json:
        print(json.dumps({"restarted": old is not None, "old_pid": old, "pid": pid}))
    elif old is None:
        print(f"ikigaid was not running; started it (pid {pid}), socket {where}")
    else:
        print(f"ikigaid restarted (pid {pid}; was {old}), socket {where}")
    return EXIT_OK


def cmd_reload(args: argparse.Namespace) -> int:
    """``daemon.reload`` (what SIGHUP does): config and credentials.json read
    again; the daemon's environment stays the one it started with."""
    sock = default_socket(args.socket)
    try:
        c = connect(sock, autostart=False)
    except DaemonUnreachable:
        if args.json:
            print(json.dumps({"reloaded": False, "running": False}))
        else:
            print(f"ikigaid is not running (nothing answers at {sock}); nothing to reload")
        return EXIT_OK
    with c:
        st = c.status()
        answer = c.reload()
    # today's answer is {"ok": true}; a refused reload may say why in it
    refused = isinstance(answer, dict) and (answer.get("ok") is False or answer.get("error"))
    if args.json:
        print(json.dumps({"reloaded": not refused, "pid": st.get("pid"), "answer": answer}))
    elif not refused:
        print(f"ikigaid reloaded its config and credentials.json (pid {st.get('pid')})")
    if refused:
        why = answer.get("error") or answer.get("message") or "no reason given"
        print(f"ikictl: ikigaid refused the reload: {why}", file=sys.stderr)
        return EXIT_ERROR
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
    from protocol.paths import LOG_FILE

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
