"""Waiting for a process a test started (ikigaid, ``python -m tests.fakes``, an
MCP fake, an example) until it is ready: one bound for the whole suite.

    from tests._ready import READY_TIMEOUT, await_ready, daemon_answers, wait_ready

    proc = subprocess.Popen(argv, stdout=out_file, stderr=subprocess.STDOUT)
    wait_ready(proc, daemon_answers(sock), "ikigaid", output=[out_path])

The wait polls the readiness check (never a fixed sleep), fails at once when
the process exits first, and a failure shows the end of the process's own
output (its stdout/stderr pipes, or the files it writes) in the message.

The bound is READY_TIMEOUT: 120 s, or ``IKIGAI_TEST_READY_TIMEOUT`` seconds.
It is generous on purpose: a start-up that takes one second on an idle
machine took more than 20 s on two cores at a load average of 50, and a bound
only costs time when a start really fails (which the exit check catches
early anyway).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

ENV = "IKIGAI_TEST_READY_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
POLL = 0.05  # seconds between two checks
TAIL_LINES = 40
TAIL_BYTES = 6000


def _timeout_from_env() -> float:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:  # also refuses nan
        raise ValueError(f"{ENV}={raw!r}: expected a number of seconds > 0")
    return value


READY_TIMEOUT: float = _timeout_from_env()


class NotReady(AssertionError):
    """The process exited, or was not ready within the bound."""


class _Process(Protocol):
    """What is used of a process: subprocess.Popen and trio.Process both fit."""

    pid: int

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...


# the output to show on a failure: files the process writes, or a function
# returning its text (for an output kept some other way)
Output = Sequence[Path | Callable[[], str]]


def wait_ready(
    proc: _Process,
    ready: Callable[[], bool],
    what: str,
    *,
    output: Output = (),
    bound: float | None = None,
) -> None:
    """Poll ``ready()`` until it is true; raise NotReady when ``proc`` exits
    first or after ``bound`` s (READY_TIMEOUT by default)."""
    limit = READY_TIMEOUT if bound is None else bound
    deadline = time.monotonic() + limit
    while True:
        if proc.poll() is not None:
            raise NotReady(_exited(proc, what, output))
        if ready():
            return
        if time.monotonic() > deadline:
            raise NotReady(_too_slow(proc, what, limit, bound is None, output))
        time.sleep(POLL)


async def await_ready(
    proc: _Process,
    ready: Callable[[], bool],
    what: str,
    *,
    output: Output = (),
    bound: float | None = None,
) -> None:
    """``wait_ready`` inside trio: the check runs in a thread (it may block on
    a socket), so the test's own tasks (the fake provider...) keep running."""
    import trio

    limit = READY_TIMEOUT if bound is None else bound
    deadline = time.monotonic() + limit
    while True:
        if proc.poll() is not None:
            raise NotReady(_exited(proc, what, output))
        if await trio.to_thread.run_sync(ready):
            return
        if time.monotonic() > deadline:
            raise NotReady(_too_slow(proc, what, limit, bound is None, output))
        await trio.sleep(POLL)


# ------------------------------------------------------------------ readiness checks


def daemon_answers(sock: Path | str, probe_timeout: float = 10.0) -> Callable[[], bool]:
    """Does the daemon on ``sock`` answer ``daemon.status``? Not merely "the
    socket exists" or "accepts a connection": ikigaid binds its socket before
    it has restored its agents and started serving, and a test's first call
    must not pay for the rest of the start-up inside its own time bound."""
    path = str(sock)
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "daemon.status"}).encode() + b"\n"

    def check() -> bool:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(probe_timeout)
        try:
            s.connect(path)
            s.sendall(request)
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    return False
                buf += chunk
            answer = json.loads(buf)
            return isinstance(answer, dict) and "result" in answer
        except (OSError, ValueError):
            return False
        finally:
            s.close()

    return check


def tcp_listens(port: int, host: str = "127.0.0.1") -> Callable[[], bool]:
    """Does something accept TCP connections on ``host:port``?"""

    def check() -> bool:
        try:
            socket.create_connection((host, port), timeout=5).close()
            return True
        except OSError:
            return False

    return check


def file_has(path: Path, text: str) -> Callable[[], bool]:
    """Has the process written ``text`` to ``path`` (a line it prints once up)?"""

    def check() -> bool:
        try:
            return text in path.read_text(errors="replace")
        except OSError:
            return False

    return check


# ------------------------------------------------------------------ the failure's message


def _exited(proc: _Process, what: str, output: Output) -> str:
    return f"{what} exited with status {proc.returncode} before it was ready{_output(proc, output)}"


def _too_slow(proc: _Process, what: str, bound: float, default: bool, output: Output) -> str:
    why = f" ({ENV} sets this bound)" if default else ""
    text = _output(proc, output, kill=True)
    return f"{what} (pid {proc.pid}) was not ready within {bound:g} s{why}{text}"


def _output(proc: _Process, output: Output, *, kill: bool = False) -> str:
    """The end of what the process printed: the given files and functions,
    and its stdout/stderr pipes. A pipe can be read to its end only once the
    process is gone: a process still running (not ready in time) is killed
    first, which the caller's clean-up takes in its stride."""
    parts: list[str] = []
    for source in output:
        if isinstance(source, Path):
            parts.append(_section(str(source), _tail_of_file(source)))
        else:
            try:
                parts.append(_section("output", source()))
            except Exception as e:  # the message must still be built
                parts.append(f"\n--- output unavailable: {type(e).__name__}: {e}")
    if isinstance(proc, subprocess.Popen) and (proc.stdout is not None or proc.stderr is not None):
        if kill and proc.poll() is None:
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
            out, err = proc.communicate(timeout=5)
            for name, data in (("stdout", out), ("stderr", err)):
                if data:
                    text = data.decode(errors="replace") if isinstance(data, bytes) else data
                    parts.append(_section(name, text))
    text = "".join(p for p in parts if p)
    return text or "\n(it printed nothing)"


def _tail_of_file(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - TAIL_BYTES))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _section(name: str, text: str) -> str:
    lines = text[-TAIL_BYTES:].splitlines()[-TAIL_LINES:]
    if not any(line.strip() for line in lines):
        return ""
    return f"\n--- {name} (last {len(lines)} lines):\n" + "\n".join(lines)
