"""Transports for the SDK's ``Client``: a trio-native stdio transport that
exposes the process (pid, exit code, stderr), bounds what the server may
write and ends at once a call answered with a line it cannot parse, and
Streamable HTTP with the configured headers.

The SDK's own ``stdio_client`` hides the process (no pid, no exit code, no
way to notice a death while idle) and reads lines of any length; this one is
the shape of the research's ``TrioStdioTransport``. Imported only when a
server is used: it imports the SDK.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types
import trio
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

# bytes of one JSON-RPC line; a longer one drops the session. Not less: a
# 10 MB text result of a Python server is 20 MB on the wire (it sends the text
# twice, as content and as structured content)
MAX_LINE = 32 * 1024 * 1024
_STDERR_LINE = 4096  # characters of a stderr line that reach the log
_STDERR_TAIL = 8  # stderr lines kept to explain a failed start
_GRACE = 2.0  # seconds between closing stdin and SIGTERM, and SIGTERM and SIGKILL
# The SDK's parser (pydantic-core's) refuses a line nested deeper than this
# (201 levels of objects, 202 of arrays): what a refused line is said to be.
JSON_DEPTH = 200


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
            fault = line_fault(line, exc)
            self.on_bad_line(ValueError(fault))
            # Skipped, the call it answers would wait for call_timeout: end it
            # now if the line says which call that is.
            answer = unreadable_answer(line, fault)
            if answer is None:
                return True
            msg = answer
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


@dataclass(frozen=True)
class UnreadableAnswer:
    """The ``data`` of the JSON-RPC error the transport delivers in place of
    an answer it could not parse but whose id it could read. A Python object,
    which no server can send: the error is ours, not the server's."""

    id: int | str
    fault: str


def unreadable_answer(line: bytes, fault: str) -> SessionMessage | None:
    """A JSON-RPC error for the request ``line`` answers (``fault`` says what
    is wrong with it), or None if the line does not read as an answer (no
    readable id, or a request of the server)."""
    request_id = answer_id(line)
    if request_id is None:
        return None
    error = mcp_types.ErrorData(
        code=mcp_types.PARSE_ERROR,
        message=f"answered request {request_id!r} with a line that is not valid JSON-RPC: {fault}",
        data=UnreadableAnswer(request_id, fault),
    )
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def line_fault(line: bytes, exc: ValueError) -> str:
    """What is wrong with a line the parser refused, for a person: positions
    and the parser's words, no text of the line (it may carry anything)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"invalid UTF-8 at byte {bad.start}"
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_context=True, include_input=False)
        if errors and errors[0]["type"] == "json_invalid":
            why = str(errors[0].get("ctx", {}).get("error", ""))
            if why.startswith("recursion limit exceeded"):
                return f"nested deeper than {JSON_DEPTH} levels"
            return f"not JSON ({why[:200]})"
        # valid JSON: what is wrong with it as a response (a result or an
        # error), rather than that it lacks the other one
        answers = [e for e in errors if e["loc"][:1] in (("JSONRPCResponse",), ("JSONRPCError",))]
        answers.sort(key=lambda e: e["type"] == "missing" and len(e["loc"]) == 2)
        if answers:
            where = ".".join(str(part) for part in answers[0]["loc"][1:])[:100]
            why = answers[0]["msg"][:200]
            return f"not a JSON-RPC response ({where}: {why})" if where else f"not JSON-RPC ({why})"
    return "not a JSON-RPC message"


# The id of a refused line, read without parsing it: one pass over the
# top-level members that skips each value by counting brackets (no recursion;
# strings skipped with bytes.find, the rest with possessive patterns: no
# backtracking), so linear in the line, and bounded in steps.
_SCAN_STEPS = 50_000  # brackets, commas, strings and escapes looked at: ~50 ms
_GAP = 4096  # bytes of a number, a literal or spaces: more is not JSON
_TAIL = 1024  # bytes at the end of the line searched for a last "id" member
_MEMBERS = 16  # top-level members looked at (a JSON-RPC message has 3 or 4)
_ID_TOKEN = rb'(-?[0-9]{1,20}+|"[^"\\]{0,256}+")'


def _pattern(text: bytes) -> re.Pattern[bytes]:
    """``text`` with each space standing for optional JSON whitespace."""
    return re.compile(text.replace(b" ", rb"[ \t\r\n]{0,%d}+" % _GAP), re.S)


_OPEN = _pattern(rb" \{")
_QUOTE = _pattern(rb' "')
_COLON = _pattern(rb" :")
_ID = _pattern(rb" " + _ID_TOKEN + rb" [,}]")
_NEXT = re.compile(rb'[^"\[\]{},]{0,%d}+(["\[\]{},])' % _GAP)  # the next structural byte
_LAST_ID = _pattern(rb'[,{] "id" : ' + _ID_TOKEN + rb' (?:, "jsonrpc" : "2\.0" )?\} \Z')
_ANSWER_KEYS = frozenset((b'"result"', b'"error"'))
_REQUEST_KEYS = frozenset((b'"method"', b'"params"'))
_KNOWN_KEYS = _ANSWER_KEYS | _REQUEST_KEYS | {b'"id"'}


def answer_id(line: bytes) -> int | str | None:
    """The id of ``line`` if it reads as an answer to a request (a top-level
    "result" or "error", and no "method" or "params" among the members read),
    else None: a request or notification of the server is in the server's
    numbering of ids, not ours. An id after a value too long to scan is found
    only as the line's last member (a TypeScript server writes it after the
    result)."""
    start = _OPEN.match(line)
    if start is None:
        return None
    scan = _Scan(line)
    pos = start.end()
    keys: set[bytes] = set()
    found: int | str | None = None
    whole = False  # the scan reached the top-level object's end
    for _ in range(_MEMBERS):
        if (key := scan.key(pos)) is None:
            break
        name, pos = key
        keys.add(name)
        if name == b'"id"' and (token := _ID.match(line, pos)) is not None:
            found = _id_value(token.group(1))
        pos, end = scan.skip_value(pos)
        if end != b",":
            whole = end == b"}"
            break
    if keys & _REQUEST_KEYS or not keys & _ANSWER_KEYS:
        return None
    if found is not None or whole:
        return found
    last = _LAST_ID.search(line, max(0, len(line) - _TAIL))
    return _id_value(last.group(1)) if last is not None else None


class _Scan:
    """The steps of one scan of ``line``, each a bounded amount of C work."""

    def __init__(self, line: bytes) -> None:
        self.line = line
        self.steps = 0

    def _step(self) -> bool:
        self.steps += 1
        return self.steps <= _SCAN_STEPS

    def key(self, pos: int) -> tuple[bytes, int] | None:
        """The member name at ``pos`` (b"" for one of no interest) and where
        its value starts; None if there is none."""
        quote = _QUOTE.match(self.line, pos)
        if quote is None:
            return None
        end = self.string_end(quote.end() - 1)
        colon = _COLON.match(self.line, end) if end is not None else None
        if end is None or colon is None:
            return None
        name = self.line[quote.end() - 1 : end] if end - quote.end() < 10 else b""
        return (name if name in _KNOWN_KEYS else b""), colon.end()

    def string_end(self, pos: int) -> int | None:
        """Past the string whose opening quote is at ``pos``; None if it is
        never closed, or has more escapes than the steps left."""
        line, start = self.line, pos + 1
        quote = line.find(b'"', start)
        while quote >= 0:
            escape = line.find(b"\\", start, quote)
            if escape < 0:
                return quote + 1
            if not self._step():
                return None
            start = escape + 2  # past the escaped byte, which may be that quote
            if start > quote:
                quote = line.find(b'"', start)
        return None

    def skip_value(self, pos: int) -> tuple[int, bytes]:
        """Past the value at ``pos``, and what ended it: b"," for the next
        member, b"}" for the object's end, b"" if the line ended or broke,
        or the steps ran out."""
        depth = 0
        while self._step():
            found = _NEXT.match(self.line, pos)
            if found is None:
                return pos, b""
            char, pos = found.group(1), found.end()
            if char == b'"':
                end = self.string_end(pos - 1)
                if end is None:
                    return pos, b""
                pos = end
            elif char in (b"[", b"{"):
                depth += 1
            elif char in (b"]", b"}"):
                if depth == 0:
                    return pos, char
                depth -= 1
            elif depth == 0:  # a comma between members
                return pos, char
        return pos, b""


def _id_value(token: bytes) -> int | str:
    if token.startswith(b'"'):
        return token[1:-1].decode("utf-8", errors="replace")
    return int(token)


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
