"""``ikictl acp``'s stdio: newline-delimited JSON-RPC 2.0, every bad line answered.

The SDK's own stdio transport logs and drops a line that is not JSON (the
editor waits forever for its answer) and stops reading at a line that is JSON
but not an object. Here each line is checked as the daemon checks its
socket's (protocol.lines: strict UTF-8, no NaN, nesting at most 64 deep, a
usable id, no lone surrogate) and a bad one is answered at once; only
well-formed messages reach the SDK's connection (it takes this as its
message-level Transport)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any, cast

import protocol as p
from protocol.lines import MAYBE_SURROGATE, Refusal, id_problem, parse_line
from protocol.params import excerpt, lone_surrogate

__all__ = ["MAX_LINE", "StdioTransport", "check_message", "open_stdio"]

# a prompt with pictures is base64 in one line; the daemon takes 1 MiB a
# request, so a longer prompt is refused by the bridge with that limit named
MAX_LINE = 64 << 20


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def check_message(message: Any, line: bytes | None = None) -> dict[str, Any] | None:
    """None when ``message`` may go to the SDK, else the error answer to send
    ({}: none, a notification's). ``line``, the message as read, spares the
    walk for lone surrogates when it has no surrogate escape."""
    if not isinstance(message, dict):
        kind = "an array" if isinstance(message, list) else f"a JSON {type(message).__name__}"
        return _error(None, p.INVALID_REQUEST, f"invalid request: {kind}, not a JSON-RPC object")
    has_id = "id" in message
    rid = message.get("id")
    bad_id = id_problem(rid) if has_id else None
    if bad_id is not None:
        return _error(None, p.INVALID_REQUEST, f"invalid request: {bad_id}")
    if message.get("jsonrpc") != "2.0":
        return _error(rid, p.INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method or len(method) > p.MAX_NAME:
            return _error(rid, p.INVALID_REQUEST, "invalid request: method must be a method name")
        if line is None or MAYBE_SURROGATE.search(line):
            refused = _lone_surrogate(message, method, rid, has_id)
            if refused is not None:
                return refused
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            if not has_id:
                return {}  # a notification's failure is never answered
            return _error(rid, p.INVALID_PARAMS, "invalid params: params must be an object")
        return None
    if has_id and ("result" in message or "error" in message):
        return None  # the editor's answer to one of our requests (a permission)
    return _error(rid, p.INVALID_REQUEST, "invalid request: neither a request nor an answer")


def _lone_surrogate(
    message: dict[str, Any], method: str, rid: Any, has_id: bool
) -> dict[str, Any] | None:
    """A lone surrogate cannot be sent on to the daemon (its UTF-8 line would
    not encode: the bridge's call failed as an internal error): refused here
    as the daemon refuses one, saying where it is: in the method (or another
    member but params) the message is no request; in params, it is answered
    unless a notification's."""
    where = lone_surrogate({k: v for k, v in message.items() if k != "params"})
    if where is not None:
        return _error(rid, p.INVALID_REQUEST, f"invalid request: {where}")
    where = lone_surrogate(message.get("params"), ("params",))
    if where is None:
        return None
    if not has_id:
        return {}
    return _error(rid, p.INVALID_PARAMS, f"invalid params for {excerpt(method, 80)}: {where}")


class StdioTransport:
    """The SDK's Transport over our stdin and stdout, hardened (see above)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._closed = False
        # our permission requests by (session, tool call): the id to withdraw one by
        self._asked: dict[tuple[str, str], Any] = {}

    def request_for(self, session: str, call_id: str) -> Any:
        """The id of our pending ``session/request_permission`` about ``call_id``."""
        return self._asked.pop((session, call_id), None)

    async def send(self, message: dict[str, Any]) -> None:
        # ensure_ascii: a lone surrogate an editor sent (and we quote) stays valid JSON
        line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        if message.get("method") == "session/request_permission":
            params = message.get("params") or {}
            key = (
                str(params.get("sessionId")),
                str((params.get("toolCall") or {}).get("toolCallId")),
            )
            self._asked[key] = message.get("id")
            while len(self._asked) > 256:
                self._asked.pop(next(iter(self._asked)))
        async with self._lock:
            if self._closed:
                raise ConnectionError("the editor's connection is closed")
            self._writer.write(line)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if line is None:
                return None
            if not line.strip():
                continue
            try:
                message = parse_line(line)
            except Refusal as refusal:
                await self._answer(_error(None, refusal.error.code, str(refusal.error)))
                continue
            answer = check_message(message, line)
            if answer is None:
                return cast("dict[str, Any]", message)
            if answer:
                await self._answer(answer)

    async def _answer(self, error: dict[str, Any]) -> None:
        # the editor may have gone: the next read sees the end
        with contextlib.suppress(ConnectionError, OSError):
            await self.send(error)

    async def _line(self) -> bytes | None:
        """The next line without its newline; None at the end of input. A line
        over MAX_LINE is answered and skipped."""
        try:
            return (await self._reader.readuntil(b"\n"))[:-1]
        except asyncio.IncompleteReadError as e:
            return None if not e.partial else e.partial
        except asyncio.LimitOverrunError as e:
            await self._reader.readexactly(e.consumed)
            await self._skip_line()
            await self._answer(
                _error(
                    None, p.LINE_TOO_LONG, f"line too long: a message is at most {MAX_LINE} bytes"
                )
            )
            return b""

    async def _skip_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as e:
                await self._reader.readexactly(e.consumed)
            except asyncio.IncompleteReadError:
                return

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
        with contextlib.suppress(OSError):
            self._writer.close()


async def open_stdio() -> StdioTransport:
    """Our stdin and stdout as asyncio streams (pipes: an editor spawned us)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return StdioTransport(reader, writer)
