"""The async connection: the same JSON-RPC lines over anyio, so it runs under
trio or asyncio. One reader task files every line: an answer wakes the
request waiting for it, a notification goes to its subscription's bounded
inbox (ikigai._inbox). The reader lives in the task group of
``AsyncClient.connect``: the connection's lifetime is that ``async with``."""

from __future__ import annotations

import anyio
import anyio.abc

from ikigai._conn import (
    SMALLEST_LIMIT,
    _message,
    _sid,
    connect_socket,
    encode_request,
    line_limit_of,
    refusal,
    result_of,
)
from ikigai._inbox import Inbox
from ikigai.errors import DaemonUnreachable, IkigaiError, RequestTooLarge
from protocol import AGENT_SUBSCRIBE, DAEMON_STATUS, RpcError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_CHUNK = 65536


class _Slot:
    __slots__ = ("done", "method", "msg")

    def __init__(self, method: str) -> None:
        self.done = anyio.Event()
        self.method = method
        self.msg: dict[str, Any] | None = None


class AsyncConnection:
    def __init__(self, stream: anyio.abc.ByteStream, path: str) -> None:
        self.path = path
        self._stream = stream
        self._next_id = 0
        self._pending: dict[int, _Slot] = {}
        self._inboxes: dict[int, Inbox] = {}
        self._wakers: dict[int, anyio.Event] = {}
        self._send_lock = anyio.Lock()
        self._failure: BaseException | None = None  # why the connection ended
        self.line_limit: int | None = None
        self._asked_limit = False
        self._big: tuple[str, int] | None = None  # the last long line sent: method, size

    # ------------------------------------------------------------ requests

    async def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Write one request; its id (its answer: ``wait_for``)."""
        self._check()
        self._next_id += 1
        rid = self._next_id
        data = encode_request(rid, method, params)
        if len(data) > SMALLEST_LIMIT:
            limit = await self._limit()
            if limit is not None and len(data) > limit:
                raise RequestTooLarge(method, len(data), limit)
            self._big = (method, len(data))
        self._pending[rid] = _Slot(method)
        try:
            async with self._send_lock:
                await self._stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as e:
            self._pending.pop(rid, None)
            raise DaemonUnreachable(f"the daemon closed the connection ({e})") from None
        return rid

    async def wait_for(self, rid: int, timeout: float | None = None) -> Any:
        """The result of request ``rid`` (RpcError for an error answer;
        TimeoutError after ``timeout`` seconds)."""
        slot = self._pending.get(rid)
        if slot is None:
            raise ValueError(f"no request {rid} is waiting for its answer")
        try:
            with anyio.fail_after(timeout):
                await slot.done.wait()
        finally:
            if slot.done.is_set() or timeout is not None:
                self._pending.pop(rid, None)
        msg = slot.msg
        if msg is None:
            self._check()
            raise DaemonUnreachable("the daemon closed the connection")
        return result_of(msg)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.wait_for(await self.send(method, params))

    async def _limit(self) -> int | None:
        if not self._asked_limit:
            self._asked_limit = True
            try:
                self.line_limit = line_limit_of(await self.call(DAEMON_STATUS))
            except RpcError:
                return None
        return self.line_limit

    def _check(self) -> None:
        if self._failure is not None:
            raise self._failure

    # ------------------------------------------------------------ subscriptions

    def route(self, sid: int) -> None:
        self._inboxes.setdefault(sid, Inbox())

    def unroute(self, sid: int) -> None:
        self._inboxes.pop(sid, None)
        waker = self._wakers.pop(sid, None)
        if waker is not None:
            waker.set()

    async def next_of(self, sid: int, timeout: float | None = None) -> dict[str, Any] | None:
        """The next notification of routed subscription ``sid``; None after ``timeout``."""
        with anyio.move_on_after(timeout):
            while True:
                box = self._inboxes.get(sid)
                if box is None:
                    return None
                if box:
                    return box.get()
                self._check()
                waker = self._wakers[sid] = anyio.Event()
                await waker.wait()
        return None

    # ------------------------------------------------------------ the reader

    async def read_loop(self) -> None:
        """File every line until the daemon closes (run in the client's task group)."""
        buf = b""
        try:
            while True:
                try:
                    chunk = await self._stream.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    raise DaemonUnreachable("the daemon closed the connection") from None
                except (anyio.BrokenResourceError, OSError) as e:
                    raise DaemonUnreachable(f"the daemon closed the connection ({e})") from None
                buf += chunk
                if b"\n" not in chunk:
                    continue
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._file(_message(line))
        except (IkigaiError, RpcError) as e:
            self._fail(e)

    def _file(self, msg: dict[str, Any]) -> None:
        if "method" in msg:
            sid = _sid(msg)
            box = self._inboxes.get(sid)
            if box is not None:
                box.put(msg)
                waker = self._wakers.pop(sid, None)
                if waker is not None:
                    waker.set()
            return  # a notification nobody subscribed to (any more)
        rid = msg.get("id")
        if rid is None and "error" in msg:  # the daemon refused the connection's line
            raise refusal(msg["error"], self._big, self.line_limit)
        slot = self._pending.get(rid) if type(rid) is int else None
        if slot is not None:
            if slot.method == AGENT_SUBSCRIBE:
                # routed here, by the reader: the subscription's first events
                # follow its answer at once, before the caller runs again
                result = msg.get("result")
                new = result.get("subscription") if isinstance(result, dict) else None
                if type(new) is int:
                    self.route(new)
            slot.msg = msg
            slot.done.set()

    def _fail(self, why: BaseException) -> None:
        """The connection ended: every waiter wakes, and sees why."""
        if self._failure is None:
            self._failure = why
        for slot in self._pending.values():
            slot.done.set()
        for waker in self._wakers.values():
            waker.set()
        self._wakers.clear()

    async def aclose(self) -> None:
        self._fail(DaemonUnreachable("the connection is closed"))
        await self._stream.aclose()


async def open_stream(path: str, *, autostart: bool) -> anyio.abc.ByteStream:
    """A stream to the daemon's socket; with ``autostart``, start one when
    none answers (in a worker thread: it waits for the daemon's socket)."""
    try:
        return await anyio.connect_unix(path)
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        pass
    except OSError as e:
        raise DaemonUnreachable(f"cannot connect to {path}: {e.strerror or e}") from None
    # the sync path says why none answers, or starts one and waits for it
    sock = await anyio.to_thread.run_sync(lambda: connect_socket(path, autostart=autostart))
    sock.close()
    return await anyio.connect_unix(path)
