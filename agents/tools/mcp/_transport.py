"""Transports for the SDK's ``Client``: a trio-native stdio transport that
exposes the process (pid, exit code, stderr) and bounds what the server may
write, and Streamable HTTP with the configured headers.

The SDK's own ``stdio_client`` hides the process (no pid, no exit code, no
way to notice a death while idle) and reads lines of any length; this one is
the shape of the research's ``TrioStdioTransport``. Imported only when a
server is used: it imports the SDK.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import mcp_types
import trio
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

# bytes of one JSON-RPC line; a longer one drops the session. Not less: a
# 10 MB text result of a Python server is 20 MB on the wire (it sends the text
# twice, as content and as structured content)
MAX_LINE = 32 * 1024 * 1024
_STDERR_LINE = 4096  # characters of a stderr line that reach the log
_STDERR_TAIL = 8  # stderr lines kept to explain a failed start
_GRACE = 2.0  # seconds between closing stdin and SIGTERM, and SIGTERM and SIGKILL


def server_env(extra: Mapping[str, str]) -> dict[str, str]:
    """What a stdio server gets: the SDK's short list of safe variables (HOME,
    LOGNAME, PATH, SHELL, TERM, USER) and its configured ``env``, nothing of
    the daemon's own (its API keys)."""
    return get_default_environment() | dict(extra)


class StdioTransport:
    """Spawns ``argv`` in its own process group; ``open()`` is the async
    context manager the SDK's Client enters."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str | None,
        on_stderr: Callable[[str], None],
        on_spawn: Callable[[int], None] = lambda pid: None,
        on_bad_line: Callable[[Exception], None] = lambda exc: None,
        max_line: int = MAX_LINE,
    ) -> None:
        self.argv, self.env, self.cwd = argv, env, cwd
        self.on_stderr, self.on_spawn, self.on_bad_line = on_stderr, on_spawn, on_bad_line
        self.max_line = max_line
        self.process: trio.Process | None = None
        self.closed = trio.Event()  # stdout ended (exit, or a line too long)
        self.reason: str | None = None  # why we dropped the session, if we did
        self.died = False  # the output ended before we stopped the server
        self.stderr_tail: deque[str] = deque(maxlen=_STDERR_TAIL)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def exit_text(self) -> str:
        """How the process ended (code or signal) and its last stderr lines."""
        code = self.returncode
        if code is None:
            text = "the server closed its output"
        elif code < 0:
            text = f"the server was killed by signal {-code}"
        else:
            text = f"the server exited with code {code}"
        if self.stderr_tail:
            text += "; its last output: " + " | ".join(self.stderr_tail)
        return text

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        proc = await trio.lowlevel.open_process(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,  # one group: our signals reach its children too
        )
        self.process = proc
        self.on_spawn(proc.pid)
        read_w, read_r = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_w, write_r = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._stdout, proc, read_w)
                nursery.start_soon(self._stdin, proc, write_r, read_w)
                nursery.start_soon(self._stderr, proc)
                try:
                    yield read_r, write_w
                finally:
                    with trio.CancelScope(shield=True):
                        await self._stop(proc)
                    nursery.cancel_scope.cancel()
        finally:
            # a spawn that fails later (the SDK's handshake) must not leave it behind
            if proc.returncode is None:
                _killpg(proc.pid, signal.SIGKILL)
                with trio.CancelScope(shield=True):
                    await proc.wait()

    async def _stdout(self, proc: trio.Process, read_w: Any) -> None:
        assert proc.stdout is not None
        buf = bytearray()
        scanned = 0  # bytes of buf known to hold no newline
        async with read_w:
            try:
                async for chunk in proc.stdout:
                    buf += chunk
                    while (end := buf.find(b"\n", scanned)) >= 0:
                        line = bytes(buf[:end]).strip()
                        del buf[: end + 1]
                        scanned = 0
                        if line and not await self._deliver(line, read_w):
                            return
                    scanned = len(buf)
                    if len(buf) > self.max_line:
                        # not JSON-RPC any more: a hostile or broken server; the
                        # session ends (pending calls fail) and the process goes
                        mb = self.max_line // (1024 * 1024)
                        self.reason = f"the server wrote a line longer than {mb} MB"
                        buf.clear()
                        _killpg(proc.pid, signal.SIGKILL)
                        return
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                pass
            finally:
                self.closed.set()

    async def _deliver(self, line: bytes, read_w: Any) -> bool:
        try:
            msg: SessionMessage | Exception = SessionMessage(
                mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            )
        except ValueError as exc:  # not JSON, not UTF-8, not JSON-RPC
            self.on_bad_line(exc)
            return True
        try:
            await read_w.send(msg)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    async def _stdin(self, proc: trio.Process, write_r: Any, read_w: Any) -> None:
        assert proc.stdin is not None
        async with write_r:
            async for m in write_r:
                data = m.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    await proc.stdin.send_all(data.encode())
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    await read_w.aclose()  # the session sees the connection end
                    return

    async def _stderr(self, proc: trio.Process) -> None:
        assert proc.stderr is not None
        buf = bytearray()
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            async for chunk in proc.stderr:
                buf += chunk
                *lines, rest = bytes(buf).split(b"\n")
                buf = bytearray(rest)
                if len(buf) > 16 * _STDERR_LINE:  # no newline for a long while
                    lines.append(bytes(buf))
                    buf.clear()
                for raw in lines:
                    self._stderr_line(raw)
        if buf:
            self._stderr_line(bytes(buf))

    def _stderr_line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip()
        if not line:
            return
        if len(line) > _STDERR_LINE:
            line = line[:_STDERR_LINE] + f"... [{len(line) - _STDERR_LINE} more characters]"
        self.stderr_tail.append(line[:300])
        self.on_stderr(line)

    async def _stop(self, proc: trio.Process) -> None:
        """The spec's order: close stdin, wait, SIGTERM the group, wait, SIGKILL."""
        assert proc.stdin is not None
        self.died = self.closed.is_set()
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError, OSError):
            await proc.stdin.aclose()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with trio.move_on_after(_GRACE):
                await proc.wait()
            if proc.returncode is not None:
                break
            _killpg(proc.pid, sig)
        await proc.wait()
        _killpg(proc.pid, signal.SIGKILL)  # what its children left behind in the group


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@contextlib.asynccontextmanager
async def http_transport(url: str, headers: Mapping[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    """Streamable HTTP with our headers. The SDK speaks httpx2, not httpx: the
    client must be an ``httpx2.AsyncClient``."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: a stream may stay open
    async with (
        httpx2.AsyncClient(headers=dict(headers), timeout=timeout) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams
