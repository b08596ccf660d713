"""One client of the control socket: JSON-RPC 2.0 over NDJSON.

Each connection gets its own nursery: one task reads lines, each request runs
in its own task (so answers may come back out of order), and one task writes.
Everything a connection is sent goes through a bounded buffer; a client that
stops reading until the buffer is full is dropped, so it can never slow the
daemon or an agent. Bad input never hurts the daemon or other clients.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import msgspec
import structlog
import trio

import protocol as p
from agents.eventlog import EventLog
from daemon.server.forwarding import Elsewhere, Relay, answer_elsewhere
from daemon.server.subscriptions import Forward
from protocol.lines import MAYBE_SURROGATE, Refusal, id_problem, parse_line
from protocol.params import decode_params, excerpt, lone_surrogate
from providers.redact import redact

log = structlog.get_logger("ikigai.control")

Handler = Callable[["Connection", Any], Awaitable[Any]]


class Settings(Protocol):
    """What a connection reads of its server (ControlServer, server.py)."""

    handlers: dict[str, Handler]
    max_line: int
    client_buffer: int
    flush_interval: float

_encoder = msgspec.json.Encoder()


# One connection's requests being answered at once; more wait, as bytes, in its
# backlog (so no client floods the store's threads); a client whose backlog
# passes BACKLOG_LINES lines' worth is not read until it shrinks.
MAX_IN_FLIGHT = 1024
BACKLOG_LINES = 16


# lines of a connection's send buffer kept for answers and notices: events
# that would eat into it end their subscription with a lagged notice instead
_ANSWER_ROOM = 64


async def _send_all(fd: int, data: bytes) -> None:
    """Write ``data`` to the non-blocking socket ``fd``. The writer task is the
    socket's only sender: a write that can go at once goes without the two
    scheduler round trips trio's SocketStream.send_all makes around each send;
    a full socket is waited on (a checkpoint, so a stalled client never holds
    the event loop)."""
    view = memoryview(data)
    while view:
        try:
            sent = os.write(fd, view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(fd)
            continue
        view = view[sent:]


class Connection:
    """One client: a reader that dispatches each request to its own task, a
    writer that batches what is queued, and the subscriptions it holds, all in
    one nursery whose end is the connection's end."""

    _ids = itertools.count(1)

    def __init__(self, stream: trio.SocketStream, server: Settings) -> None:
        self.id = next(self._ids)
        self.stream = stream
        self.server = server
        # lines waiting for the writer, which takes them all at once; a client
        # that lets client_buffer of them pile up is dropped
        self._out: list[bytes] = []
        self._parked: trio.lowlevel.Task | None = None  # the writer, waiting for lines
        self._ending = False  # the writer sends what is queued, then ends
        self.event_room = server.client_buffer - _ANSWER_ROOM
        self.subscriptions: dict[int, Forward | Relay] = {}
        self._sub_ids = itertools.count(1)
        self.nursery: trio.Nursery | None = None
        self.closed = False
        self._pending = 0  # requests being answered
        self._idle = trio.Event()  # set (and replaced) when _pending drops to 0
        self._backlog: deque[bytes] = deque()  # lines read, waiting for room to be answered
        self._backlog_bytes = 0
        self._room = trio.Event()  # set (and replaced) when the backlog shrinks below its bound
        self.daemon_events = False  # daemon.subscribe: sent daemon events (daemon/methods/mcp.py)

    # ------------------------------------------------------------ sending

    @property
    def queued(self) -> int:
        """Lines waiting to be written."""
        return len(self._out)

    def push(self, data: bytes) -> None:
        """Queue a line; a client too slow to take it is dropped."""
        if self.closed or self._ending:
            return
        out = self._out
        if len(out) >= self.server.client_buffer:
            log.warning("client not reading; dropping it", connection=self.id)
            self.close()
            return
        out.append(data)
        if self._parked is not None:
            self._unpark()

    send_bytes = push

    def _end_output(self) -> None:
        """No more lines: the writer sends what is queued, then ends."""
        self._ending = True
        if self._parked is not None:
            self._unpark()

    def _unpark(self) -> None:
        task, self._parked = self._parked, None
        trio.lowlevel.reschedule(task)

    async def _park(self) -> None:
        """Wait for push or _end_output: what trio.Event does, without an Event
        and a ParkingLot per wait (this runs once per burst of events)."""
        self._parked = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:
            self._parked = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(_encoder.encode(message) + b"\n")

    def respond(self, id: Any, result: Any) -> None:
        try:
            line = (
                b'{"jsonrpc":"2.0","id":'
                + _encoder.encode(id)
                + b',"result":'
                + _encoder.encode(result)
                + b"}\n"
            )
        except (TypeError, ValueError, OverflowError):  # UnicodeEncodeError is a ValueError
            log.exception("could not encode an answer", connection=self.id)
            self.fail(
                id,
                p.RpcError(
                    p.INTERNAL_ERROR,
                    "internal error: the answer could not be encoded; see the daemon log",
                ),
            )
            return
        self.send_bytes(line)

    def fail(self, id: Any, error: p.RpcError) -> None:
        try:
            # errors quote providers and user input: keys never leave the daemon
            payload = redact(msgspec.to_builtins(error.to_json()))
            line = _encoder.encode({"jsonrpc": "2.0", "id": id, "error": payload}) + b"\n"
        except (TypeError, ValueError, OverflowError):
            log.exception("could not encode an error answer", connection=self.id, code=error.code)
            line = (
                _encoder.encode(
                    {
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": {
                            "code": p.INTERNAL_ERROR,
                            "message": (
                                "internal error: the error could not be encoded; see the daemon log"
                            ),
                        },
                    }
                )
                + b"\n"
            )
        self.send_bytes(line)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._end_output()
            if self.nursery is not None:
                self.nursery.cancel_scope.cancel()

    # ------------------------------------------------------------ subscriptions

    def subscribe(self, log: EventLog, from_seq: int) -> int:
        """A new subscription to ``log``'s events from ``from_seq``. It starts
        once this request's answer is queued (a task started now runs after
        it), so the answer always comes before the first event."""
        assert self.nursery is not None
        sid = next(self._sub_ids)
        forward = self.subscriptions[sid] = Forward(self, sid, log)

        async def start() -> None:
            forward.start(from_seq)

        self.nursery.start_soon(start)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        forward = self.subscriptions.pop(sid, None)
        if forward is None:
            return False
        forward.cancel()
        return True

    # ------------------------------------------------------------ the loops

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            nursery.start_soon(self._writer)
            try:
                await self._reader(nursery)
                # end of input: answer what was asked (a script may half-close
                # after its last request), then close
                while self._pending:
                    await self._idle.wait()
            finally:
                for sid in list(self.subscriptions):
                    self.unsubscribe(sid)
                self._end_output()

    async def _writer(self) -> None:
        fd = self.stream.socket.fileno()
        try:
            while True:
                while not self._out:
                    if self._ending:
                        return
                    await self._park()
                interval = self.server.flush_interval
                if interval > 0:
                    # stream.flush_interval: fewer, larger writes for clients
                    # who prefer throughput to the lowest latency
                    await trio.sleep(interval)
                # everything queued since the writer last ran goes out in one
                # write: under load, one syscall for many events
                batch, self._out = self._out, []
                await _send_all(fd, batch[0] if len(batch) == 1 else b"".join(batch))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            assert self.nursery is not None
            self.nursery.cancel_scope.cancel()

    async def _reader(self, nursery: trio.Nursery) -> None:
        limit = self.server.max_line
        # a bytearray grows in place: a line trickled in byte by byte costs
        # linear time, not a copy of all of it per read
        buf = bytearray()
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            buf += data
            if b"\n" not in data:
                if len(buf) > limit:
                    self._too_long()
                    return
                continue
            *lines, rest = buf.split(b"\n")
            buf = rest
            for line in lines:
                if len(line) > limit:
                    self._too_long()
                    return
                if not line.strip():
                    continue
                if self._pending < MAX_IN_FLIGHT and not self._backlog:
                    self._dispatch(bytes(line), nursery)
                else:
                    self._backlog.append(bytes(line))
                    self._backlog_bytes += len(line)
            if len(buf) > limit:
                self._too_long()
                return
            # a client pipelining without end waits here, in its socket, not in our memory
            while self._backlog_bytes > limit * BACKLOG_LINES:
                await self._room.wait()

    def _too_long(self) -> None:
        self.fail(
            None,
            p.RpcError(
                p.LINE_TOO_LONG,
                f"line longer than {self.server.max_line} bytes; closing",
                {"limit": self.server.max_line},
            ),
        )
        self._end_output()

    def _dispatch(self, line: bytes, nursery: trio.Nursery) -> None:
        try:
            call = self._request(line)
        except Refusal as r:
            if r.answer:
                self.fail(r.rid, r.error)
            return
        except Exception:
            # a bug, not the client's fault: that request fails, nothing else
            log.exception(
                "could not take a request",
                connection=self.id,
                line=excerpt(line.decode(errors="replace")),
            )
            self.fail(
                None,
                p.RpcError(
                    p.INTERNAL_ERROR, "internal error reading the request; see the daemon log"
                ),
            )
            return
        self._pending += 1
        nursery.start_soon(self._call, *call)

    def _request(self, line: bytes) -> tuple[Any, str, Handler, Any]:
        """(id, method, handler, params) of one line; Refusal when it is not a
        request the daemon can carry out."""
        msg = parse_line(line)
        if not isinstance(msg, dict):
            raise Refusal(
                None,
                p.INVALID_REQUEST,
                'not a JSON-RPC 2.0 request: need {"jsonrpc": "2.0", "method": ..., "id": ...}',
            )
        rid = msg.get("id")
        problem = id_problem(rid)
        if problem is not None:
            raise Refusal(None, p.INVALID_REQUEST, problem)
        if msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
            raise Refusal(
                rid,
                p.INVALID_REQUEST,
                'not a JSON-RPC 2.0 request: need {"jsonrpc": "2.0", "method": ..., "id": ...}',
            )
        method = msg["method"]
        if MAYBE_SURROGATE.search(line):
            for key, value in msg.items():
                where = lone_surrogate({key: value})
                if where is None:
                    continue
                if key == "params":
                    raise Refusal(
                        rid,
                        p.INVALID_PARAMS,
                        f"invalid params for {excerpt(method)}: {where}",
                        answer=rid is not None,
                    )
                raise Refusal(rid, p.INVALID_REQUEST, where)
        handler = self.server.handlers.get(method)
        if handler is None:
            raise Refusal(
                rid,
                p.METHOD_NOT_FOUND,
                f"unknown method {excerpt(method)!r}",
                answer=rid is not None,
            )
        try:
            params = decode_params(method, msg.get("params"))
        except p.RpcError as e:
            raise Refusal(rid, e.code, e.message, answer=rid is not None) from None
        return rid, method, handler, params

    async def _call(self, rid: Any, method: str, handler: Handler, params: Any) -> None:
        try:
            await self._answer(rid, method, handler, params)
        finally:
            self._pending -= 1
            if self._backlog:
                self._next_from_backlog()
            if not self._pending:
                self._idle.set()
                self._idle = trio.Event()

    def _next_from_backlog(self) -> None:
        assert self.nursery is not None
        if self.closed:  # dropped: what it still asked is not worth parsing
            self._backlog.clear()
            self._backlog_bytes = 0
        while self._backlog and self._pending < MAX_IN_FLIGHT:
            line = self._backlog.popleft()
            self._backlog_bytes -= len(line)
            self._dispatch(line, self.nursery)
        if self._backlog_bytes <= self.server.max_line * BACKLOG_LINES:
            self._room.set()
            self._room = trio.Event()

    async def _answer(self, rid: Any, method: str, handler: Handler, params: Any) -> None:
        try:
            try:
                result = await handler(self, params)
            except Elsewhere as where:  # another daemon runs the agent: its answer
                result = await answer_elsewhere(self, rid, method, params, where)
        except p.RpcError as e:
            if rid is not None:
                self.fail(rid, e)
            return
        except Exception:
            log.exception("control method failed", method=method, connection=self.id)
            if rid is not None:
                self.fail(
                    rid,
                    p.RpcError(p.INTERNAL_ERROR, f"internal error in {method}; see the daemon log"),
                )
            return
        if rid is not None:
            self.respond(rid, result)


