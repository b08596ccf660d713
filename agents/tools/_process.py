"""Running a child process for a tool, and making sure it ends.

Every process runs in its own session, hence its own process group, so that a
timeout or a cancelled turn ends the command *and everything it started*:
SIGTERM to the group, a grace period (2 s), then SIGKILL to the group.

trio.run_process delivers the cancel only until the direct child has exited,
so after it returns or raises, ``run_captured`` checks the group itself and
finishes the job (shielded: a cancelled caller still waits the grace period
at most).

Output is captured with a bound: the head and the tail are kept, the middle is
dropped and counted, so a command that prints gigabytes costs a few kilobytes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import trio

from ._env import ToolEnv

__all__ = ["Capture", "Completed", "end_group", "group_alive", "process_env", "run_captured"]

KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
_LINGER = 1.0  # seconds to wait for the output to close after the command exited
_POLL = 0.05


@dataclass
class Capture:
    """Bounded capture of a byte stream: the first ``head_limit`` and the last
    ``tail_limit`` bytes are kept; ``dropped`` counts the bytes in between."""

    head_limit: int
    tail_limit: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    dropped: int = 0
    total: int = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        over = len(self.tail) - self.tail_limit
        if over > 0:
            del self.tail[:over]
            self.dropped += over

    @property
    def overflowed(self) -> bool:
        return self.dropped > 0

    def bytes(self) -> bytes:
        return bytes(self.head + self.tail)

    def text(self) -> str:
        """The captured text; a dropped middle is replaced by a note."""
        head = self.head.decode("utf-8", errors="replace")
        if not self.dropped:
            return (self.head + self.tail).decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return f"{head}\n[... {self.dropped} bytes of output cut ...]\n{tail}"


@dataclass
class Completed:
    returncode: int | None  # None: it was killed before we could see it exit normally
    stdout: Capture
    stderr: Capture | None  # None when stderr was merged into stdout
    timed_out: bool = False
    lingering: bool = False  # processes it left behind held the output open; they were ended


def process_env(
    extra: Mapping[str, str], tool_env: ToolEnv | None = None, tool: str = ""
) -> dict[str, str]:
    """The environment of a tool's process: never a copy of the daemon's (see _env)."""
    return (tool_env or ToolEnv()).build(tool, extra)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running. Zombies (ended,
    not yet reaped by their parent) do not count: they are gone for our
    purposes."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: zombies count, which only costs the grace period
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ... - comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 3:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


async def end_group(pgid: int, grace: float = KILL_GRACE) -> None:
    """SIGTERM the group, wait up to ``grace`` seconds for it to go, then SIGKILL."""
    if not group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    _signal_group(pgid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
    deadline = trio.current_time() + grace
    while trio.current_time() < deadline:
        await trio.sleep(_POLL)
        if not group_alive(pgid):
            return
    _signal_group(pgid, signal.SIGKILL)


async def _deliver_cancel(proc: trio.Process, grace: float, spawned: list[int]) -> None:
    # Called by trio.run_process (shielded) when we are cancelled. It is itself
    # cancelled as soon as the direct child exits; end_group then finishes -
    # told the group here, as a cancel may come before nursery.start returned it.
    spawned.append(proc.pid)
    _signal_group(proc.pid, signal.SIGTERM)
    _signal_group(proc.pid, signal.SIGCONT)
    await trio.sleep(grace)
    _signal_group(proc.pid, signal.SIGKILL)


async def run_captured(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    merge_stderr: bool = True,
    limit: int = 64 * 1024,
    stderr_limit: int = 4096,
    time_limit: float | None = None,
    grace: float = KILL_GRACE,
) -> Completed:
    """Run ``argv`` in its own process group and capture its output, bounded.

    ``limit`` bytes of stdout are kept (two thirds head, one third tail);
    ``stderr_limit`` bytes of stderr's tail when it is not merged. After
    ``time_limit`` seconds the group is ended and ``timed_out`` is set; when the caller is
    cancelled the group is ended and Cancelled propagates. When the command
    exits but something it started still holds the output open, we wait a
    moment, then end the group (``lingering``). Processes that detached their
    output (``server > log 2>&1 &``) are left alone after a normal exit.
    """
    head = limit * 2 // 3
    out = Capture(head_limit=head, tail_limit=limit - head)
    err = None if merge_stderr else Capture(head_limit=0, tail_limit=stderr_limit)
    result = Completed(returncode=None, stdout=out, stderr=err)
    pgid: int | None = None
    spawned: list[int] = []  # the group, as _deliver_cancel saw it
    ended_normally = False

    async def pump(stream: trio.abc.ReceiveStream, capture: Capture, done: trio.Event) -> None:
        try:
            async with stream:
                while True:
                    chunk = await stream.receive_some(65536)
                    if not chunk:
                        break
                    capture.feed(chunk)
        finally:
            done.set()

    async def collect(nursery: trio.Nursery, proc: trio.Process) -> None:
        closed = [trio.Event()]
        assert proc.stdout is not None
        nursery.start_soon(pump, proc.stdout, out, closed[0])
        if err is not None:
            assert proc.stderr is not None
            closed.append(trio.Event())
            nursery.start_soon(pump, proc.stderr, err, closed[1])
        await proc.wait()
        result.returncode = proc.returncode
        with trio.move_on_after(_LINGER):
            for event in closed:
                await event.wait()
        if not all(event.is_set() for event in closed):
            result.lingering = True
            nursery.cancel_scope.cancel()

    spawn_error: OSError | None = None
    try:
        with trio.move_on_after(time_limit if time_limit is not None else float("inf")) as scope:
            async with trio.open_nursery() as nursery:
                try:
                    proc: trio.Process = await nursery.start(
                        partial(
                            trio.run_process,
                            list(argv),
                            stdin=stdin if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                            cwd=str(cwd),
                            env=dict(env),
                            check=False,
                            start_new_session=True,
                            deliver_cancel=partial(_deliver_cancel, grace=grace, spawned=spawned),
                        )
                    )
                except OSError as exc:  # raised below, outside the nursery: not in a group
                    spawn_error = exc
                else:
                    pgid = proc.pid
                    await collect(nursery, proc)
                    ended_normally = not result.lingering
        result.timed_out = scope.cancelled_caught and not ended_normally
    finally:
        if pgid is None and spawned:
            pgid = spawned[0]
        if pgid is not None and not ended_normally:
            # a process born after the SIGTERM (bwrap's, starting its sandbox)
            # is still in the group: the group is ended, not just the child
            with trio.CancelScope(shield=True):
                await end_group(pgid, grace)
    if spawn_error is not None:
        raise spawn_error
    return result
