"""The control socket server: JSON-RPC 2.0 over NDJSON on a Unix socket.

Each connection gets its own nursery: one task reads lines, each request runs
in its own task (so answers may come back out of order), and one task writes.
Everything a connection is sent goes through a bounded buffer; a client that
stops reading until the buffer is full is dropped, so it can never slow the
daemon or an agent. Bad input never hurts the daemon or other clients.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog
import trio

from agents.eventlog import Subscription
from agents.events import Lagged

from . import protocol as p
from .logs import redact
from .params import PARAMS, decode_params

log = structlog.get_logger("ikigai.control")

Handler = Callable[["Connection", Any], Awaitable[Any]]

_encoder = msgspec.json.Encoder()


class _EventNote(msgspec.Struct):
    subscription: int
    agent: str
    turn: str | None
    seq: int
    event: Any


def peer_uid(sock: socket.socket) -> int | None:
    try:
        data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", data)
    return uid


class Connection:
    _ids = itertools.count(1)

    def __init__(self, stream: trio.SocketStream, server: ControlServer) -> None:
        self.id = next(self._ids)
        self.stream = stream
        self.server = server
        self._out_send, self._out_recv = trio.open_memory_channel[bytes](server.client_buffer)
        self.subscriptions: dict[int, tuple[Subscription, trio.CancelScope]] = {}
        self._sub_ids = itertools.count(1)
        self.nursery: trio.Nursery | None = None
        self.closed = False
        self._pending = 0  # requests being answered
        self._idle = trio.Event()  # set (and replaced) when _pending drops to 0

    # ------------------------------------------------------------ sending

    def send_bytes(self, data: bytes) -> None:
        """Queue a line; a client too slow to take it is dropped."""
        if self.closed:
            return
        try:
            self._out_send.send_nowait(data)
        except trio.WouldBlock:
            log.warning("client not reading; dropping it", connection=self.id)
            self.close()
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(_encoder.encode(message) + b"\n")

    def respond(self, id: Any, result: Any) -> None:
        self.send_bytes(b'{"jsonrpc":"2.0","id":' + _encoder.encode(id) + b',"result":' + _encoder.encode(result) + b"}\n")

    def fail(self, id: Any, error: p.RpcError) -> None:
        # errors quote providers and user input: keys never leave the daemon
        payload = redact(msgspec.to_builtins(error.to_json()))
        self.send({"jsonrpc": "2.0", "id": id, "error": payload})

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._out_send.close()
            if self.nursery is not None:
                self.nursery.cancel_scope.cancel()

    # ------------------------------------------------------------ subscriptions

    def subscribe(self, agent: str, sub: Subscription) -> int:
        assert self.nursery is not None
        sid = next(self._sub_ids)
        scope = trio.CancelScope()
        self.subscriptions[sid] = (sub, scope)
        self.nursery.start_soon(self._forward, sid, agent, sub, scope)
        return sid

    def unsubscribe(self, sid: int) -> bool:
        found = self.subscriptions.pop(sid, None)
        if found is None:
            return False
        sub, scope = found
        sub.close()
        scope.cancel()
        return True

    async def _forward(self, sid: int, agent: str, sub: Subscription, scope: trio.CancelScope) -> None:
        reason = "agent ended"
        with scope:
            async for entry in sub:
                self.send_bytes(
                    b'{"jsonrpc":"2.0","method":"agent.event","params":'
                    + _encoder.encode(_EventNote(sid, entry.agent, entry.turn, entry.seq, entry.event))
                    + b"}\n"
                )
                if isinstance(entry.event, Lagged) and sub.closed:
                    reason = "lagged"
            if sid in self.subscriptions:
                self.subscriptions.pop(sid, None)
                self.send({"jsonrpc": "2.0", "method": p.SUBSCRIPTION_END, "params": {"subscription": sid, "reason": reason}})

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
                self._out_send.close()

    async def _writer(self) -> None:
        try:
            async for data in self._out_recv:
                # everything queued meanwhile goes out in the same write: under
                # load that is one syscall for many events instead of one each
                batch = [data]
                ended = False
                while len(batch) < 256:
                    try:
                        batch.append(self._out_recv.receive_nowait())
                    except trio.WouldBlock:
                        break
                    except trio.EndOfChannel:
                        ended = True
                        break
                await self.stream.send_all(b"".join(batch) if len(batch) > 1 else data)
                if ended:
                    break
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            assert self.nursery is not None
            self.nursery.cancel_scope.cancel()

    async def _reader(self, nursery: trio.Nursery) -> None:
        limit = self.server.max_line
        buf = b""
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            buf += data
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    break
                line, buf = buf[:nl], buf[nl + 1 :]
                if len(line) > limit:
                    self._too_long()
                    return
                if line.strip():
                    self._dispatch(line, nursery)
            if len(buf) > limit:
                self._too_long()
                return

    def _too_long(self) -> None:
        self.fail(None, p.RpcError(p.LINE_TOO_LONG, f"line longer than {self.server.max_line} bytes; closing"))
        self._out_send.close()

    def _dispatch(self, line: bytes, nursery: trio.Nursery) -> None:
        try:
            msg = json.loads(line)
        except (ValueError, UnicodeDecodeError) as e:
            self.fail(None, p.RpcError(p.PARSE_ERROR, f"parse error: {e}"))
            return
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
            rid = msg.get("id") if isinstance(msg, dict) else None
            self.fail(rid, p.RpcError(p.INVALID_REQUEST, 'not a JSON-RPC 2.0 request: need {"jsonrpc": "2.0", "method": ..., "id": ...}'))
            return
        rid = msg.get("id")
        if (rid is not None and not isinstance(rid, str | int)) or isinstance(rid, bool):
            self.fail(None, p.RpcError(p.INVALID_REQUEST, "id must be a string or a number"))
            return
        method = msg["method"]
        handler = self.server.handlers.get(method)
        if handler is None:
            if rid is not None:
                self.fail(rid, p.RpcError(p.METHOD_NOT_FOUND, f"unknown method {method!r}"))
            return
        try:
            params = decode_params(method, msg.get("params"))
        except p.RpcError as e:
            if rid is not None:
                self.fail(rid, e)
            return
        self._pending += 1
        nursery.start_soon(self._call, rid, method, handler, params)

    async def _call(self, rid: Any, method: str, handler: Handler, params: Any) -> None:
        try:
            await self._answer(rid, method, handler, params)
        finally:
            self._pending -= 1
            if not self._pending:
                self._idle.set()
                self._idle = trio.Event()

    async def _answer(self, rid: Any, method: str, handler: Handler, params: Any) -> None:
        try:
            result = await handler(self, params)
        except p.RpcError as e:
            if rid is not None:
                self.fail(rid, e)
            return
        except Exception:
            log.exception("control method failed", method=method, connection=self.id)
            if rid is not None:
                self.fail(rid, p.RpcError(p.INTERNAL_ERROR, f"internal error in {method}; see the daemon log"))
            return
        if rid is not None:
            self.respond(rid, result)


class ControlServer:
    def __init__(
        self,
        handlers: dict[str, Handler],
        *,
        max_line: int = p.MAX_LINE,
        client_buffer: int = 4096,
        check_uid: bool = True,
    ) -> None:
        missing = set(PARAMS) - set(handlers)
        if missing:
            raise ValueError(f"no handler for {sorted(missing)}")
        self.handlers = handlers
        self.max_line = max_line
        self.client_buffer = client_buffer
        self.check_uid = check_uid
        self.connections: set[Connection] = set()

    async def serve(
        self, sock: trio.socket.SocketType, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listener = trio.SocketListener(sock)
        task_status.started()
        await trio.serve_listeners(self._handle, [listener])

    async def drain(self) -> None:
        """Wait (briefly: call inside a timeout) until every connection has
        written what it was sent, so a stopping daemon's last events arrive."""
        for _ in range(500):
            if all(c._out_send.statistics().current_buffer_used == 0 for c in self.connections):
                break
            await trio.sleep(0.01)
        await trio.sleep(0.05)  # let the writers hand the last lines to the kernel

    async def _handle(self, stream: trio.SocketStream) -> None:
        if self.check_uid:
            uid = peer_uid(stream.socket)  # type: ignore[arg-type]
            if uid != os.getuid():
                log.warning("refused a connection from another user", peer_uid=uid)
                await stream.aclose()
                return
        conn = Connection(stream, self)
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            with trio.CancelScope(shield=True):
                await stream.aclose()
