"""A fake LLM provider: a real HTTP/1.1 server on loopback (trio + h11, port 0).

Each request takes one Reply: from ``responder(request)`` if set and it
returns one, else the next pushed Reply, else ``default``. The reply is
rendered by the wire module that owns the request's path, then written with
the reply's chunking, delays and fault. Every request is recorded.
``windows={model: tokens}`` gives models a context window: their requests are
counted, refused with the wire's context-length error when they do not fit,
and their count endpoints answered (tests/fakes/window.py). ``limit=KeyLimit(...)``
enforces a real rate limit with the wire's headers (tests/fakes/ratelimit.py).

    async with fake_provider() as fake:          # or the ``fake_provider`` fixture
        fake.push(Reply(text="hello"))
        ... point a client at fake.base_url ...
        assert fake.requests[0].json["model"] == "..."
"""

from __future__ import annotations

import dataclasses
import json
import ssl
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import h11
import trio

from tests._ready import READY_TIMEOUT

from .ratelimit import KeyLimit
from .recorded import RecordedRequest
from .script import Disconnect, HttpError, Malformed, NeverAnswer, Raw, RawStream, Reply, Stall
from .window import fake_tokens, model_of, requested_output
from .wire import wire_for

Responder = Callable[[RecordedRequest], Reply | None]


class _Closed(Exception):
    """The scripted fault ended the connection."""


class FakeProvider:
    def __init__(
        self,
        *,
        default: Reply | None = None,
        responder: Responder | None = None,
        windows: dict[str, int] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        limit: KeyLimit | None = None,
    ) -> None:
        self.requests: list[RecordedRequest] = []
        self.limit = limit
        # serve HTTPS with this context (tests/fakes/tls.py); base_url names localhost
        self.ssl_context = ssl_context
        self.default = default
        self.responder = responder
        # model -> context window: such a model's requests are counted and
        # refused when they do not fit (tests/fakes/window.py)
        self.windows: dict[str, int] = dict(windows or {})
        self.port = 0
        self.connections = 0  # TCP connections accepted
        self._queue: deque[Reply] = deque()
        self._arrival = trio.Event()  # set and replaced on every request

    @property
    def base_url(self) -> str:
        if self.ssl_context is not None:
            return f"https://localhost:{self.port}"
        return f"http://127.0.0.1:{self.port}"

    def push(self, *replies: Reply) -> None:
        self._queue.extend(replies)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _reply_for(self, request: RecordedRequest) -> Reply | None:
        if self.responder is not None:
            reply = self.responder(request)
            if reply is not None:
                return reply
        if self._queue:
            return self._queue.popleft()
        return self.default

    async def wait_for_requests(self, count: int) -> None:
        """Return once ``count`` requests have arrived (use inside trio.fail_after)."""
        while len(self.requests) < count:
            await self._arrival.wait()

    async def serve(self, *, task_status: trio.TaskStatus[FakeProvider] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        served: list = listeners
        if self.ssl_context is not None:
            # https_compatible: a client may close without close_notify, as real ones do
            served = [trio.SSLListener(lst, self.ssl_context, https_compatible=True) for lst in listeners]
        task_status.started(self)
        await trio.serve_listeners(self._connection, served)

    # ------------------------------------------------------------ connection

    async def _connection(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        conn = h11.Connection(h11.SERVER)
        request = None
        try:
            while True:
                request = await self._read(stream, conn)
                if request is None:
                    return
                await self._respond(stream, conn, request)
                request.finished = trio.current_time()
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (_Closed, trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            if request is not None and request.finished is None:
                request.finished = trio.current_time()
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _read(self, stream: trio.SocketStream, conn: h11.Connection) -> RecordedRequest | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                if not data and conn.their_state is h11.IDLE:
                    return None
                continue
            if isinstance(event, h11.ConnectionClosed):
                return None
            if isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                recorded = RecordedRequest(
                    method=head.method.decode(),
                    target=head.target.decode(),
                    headers={k.decode().lower(): v.decode() for k, v in head.headers},
                    body=bytes(body),
                    index=len(self.requests),
                    arrived=trio.current_time(),
                )
                self.requests.append(recorded)
                self._arrival.set()
                self._arrival = trio.Event()
                return recorded

    async def _send(self, stream: trio.SocketStream, conn: h11.Connection, event: h11.Event) -> None:
        data = conn.send(event)
        if data:
            await stream.send_all(data)

    async def _simple(
        self,
        stream: trio.SocketStream,
        conn: h11.Connection,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        hdrs = [("content-type", content_type), ("content-length", str(len(body)))]
        hdrs += list((headers or {}).items())
        await self._send(stream, conn, h11.Response(status_code=status, headers=hdrs))
        await self._send(stream, conn, h11.Data(data=body))
        await self._send(stream, conn, h11.EndOfMessage())

    async def _raw_stream(self, stream: trio.SocketStream, conn: h11.Connection, fault: RawStream) -> None:
        """One chunk, one socket write per event. The chunks are framed here, not by
        h11, so the server thread spends little per event: it sets the pace."""
        hdrs = [("content-type", fault.content_type), *fault.headers.items()]
        await self._send(stream, conn, h11.Response(status_code=fault.status, headers=hdrs))
        if conn.our_state is not h11.SEND_BODY:  # a HEAD request or a status without a body
            return
        if conn.their_http_version != b"1.1":  # h11 frames an HTTP/1.0 body by closing
            for event in fault.events:
                await self._send(stream, conn, h11.Data(data=event))
        else:
            for chunk in [b"%x\r\n%s\r\n" % (len(e), e) for e in fault.events if e]:
                await stream.send_all(chunk)
        await self._send(stream, conn, h11.EndOfMessage())  # h11 writes the last chunk

    async def _windowed(self, stream: trio.SocketStream, conn: h11.Connection, request: RecordedRequest) -> bool:
        """Count a request to a model with a window; answer it here (True) when
        it is a count or does not fit, as the real API would."""
        wire = wire_for(request.method, request.path)
        if wire is None or not self.windows or getattr(wire, "context_error", None) is None:
            return False
        window = self.windows.get(model_of(wire, request) or "")
        if window is None:
            return False
        tokens = request.tokens = fake_tokens(request)
        is_count = getattr(wire, "is_count", None)
        if is_count is not None and is_count(request):
            await self._simple(stream, conn, 200, wire.render_count(tokens, request), headers=_wire_headers(wire, None, request))
            return True
        output = requested_output(request)
        if tokens + output <= window:
            return False
        error = wire.context_error(tokens, output, window, request)
        body = error.body
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        if body is None:
            body = wire.render_error(error, request)
        await self._simple(stream, conn, error.status, body, headers=_wire_headers(wire, None, request))
        return True

    async def _respond(self, stream: trio.SocketStream, conn: h11.Connection, request: RecordedRequest) -> None:
        if await self._windowed(stream, conn, request):
            return
        reply = self._reply_for(request)
        wire_of = wire_for(request.method, request.path)
        if self.limit is not None and reply is not None and wire_of is not None:
            refusal, limited = self.limit.admit(request, wire_of.NAME)  # counts request.tokens
            if refusal is not None:
                reply = dataclasses.replace(reply, fault=refusal, delay=0.0)
            reply = dataclasses.replace(reply, headers={**limited, **reply.headers})
        if reply is not None and request.tokens is not None:
            # the provider reports what it counted, whatever the script says
            reply = dataclasses.replace(reply, usage=dataclasses.replace(reply.usage, input=request.tokens))
        if reply is None:
            msg = f"the fake provider has no scripted reply for request {request.index} ({request.method} {request.path})"
            await self._simple(stream, conn, 500, json.dumps({"error": {"message": msg}}).encode())
            return
        fault = reply.fault
        if isinstance(fault, NeverAnswer):
            await trio.sleep_forever()
        if reply.delay:
            await trio.sleep(reply.delay)
        if isinstance(fault, Raw):
            await self._simple(stream, conn, fault.status, fault.body, fault.content_type, fault.headers)
            return
        if isinstance(fault, RawStream):
            await self._raw_stream(stream, conn, fault)
            return
        wire = wire_for(request.method, request.path)
        if wire is None:
            msg = f"the fake provider speaks no API at {request.method} {request.path}"
            await self._simple(stream, conn, 404, json.dumps({"error": {"message": msg}}).encode())
            return
        refused = getattr(wire, "reject", None)
        if fault is None and refused is not None:
            fault = refused(request)  # what the real server refuses, it refuses here
        try:
            if isinstance(fault, HttpError):
                body = fault.body
                if isinstance(body, dict):
                    body = json.dumps(body).encode()
                if body is None:
                    body = wire.render_error(fault, request)
                headers = {**_wire_headers(wire, reply, request), **reply.headers, **fault.headers}
                await self._simple(stream, conn, fault.status, body, headers=headers)
                return
            streaming = reply.stream if reply.stream is not None else wire.wants_stream(request)
            if streaming:
                events = list(wire.render_stream(reply, request))
                content_type = "text/event-stream"
            else:
                events = [wire.render_body(reply, request)]
                content_type = "application/json"
        except NotImplementedError:
            msg = f"the fake provider does not speak {wire.NAME} yet"
            await self._simple(stream, conn, 501, json.dumps({"error": {"message": msg}}).encode())
            return
        if isinstance(fault, Malformed) and streaming:
            events.insert(min(fault.before_event, len(events)), fault.garbage)
        extra = {**_wire_headers(wire, reply, request), **reply.headers}
        await self._stream_body(stream, conn, reply, events, content_type, streaming, extra)

    async def _stream_body(
        self,
        stream: trio.SocketStream,
        conn: h11.Connection,
        reply: Reply,
        events: list[bytes],
        content_type: str,
        streaming: bool,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        headers = [("content-type", content_type), *(extra_headers or {}).items()]
        if not streaming:
            headers.append(("content-length", str(sum(map(len, events)))))
        await self._send(stream, conn, h11.Response(status_code=200, headers=headers))
        writes = events
        if reply.chunk_size:
            whole = b"".join(events)
            writes = [whole[i : i + reply.chunk_size] for i in range(0, len(whole), reply.chunk_size)]
        fault = reply.fault
        limit = fault.after_bytes if isinstance(fault, Disconnect | Stall) else None
        sent = 0
        for i, piece in enumerate(writes):
            if reply.delay and i:
                await trio.sleep(reply.delay)
            if limit is not None and sent + len(piece) >= limit:
                head, piece = piece[: limit - sent], piece[limit - sent :]
                if head:
                    await self._send(stream, conn, h11.Data(data=head))
                sent = limit
                if isinstance(fault, Disconnect):
                    raise _Closed
                assert isinstance(fault, Stall)
                if fault.seconds is None:
                    # until the client leaves: reading tells when it has
                    while await stream.receive_some(65536):
                        pass
                    raise _Closed
                await trio.sleep(fault.seconds)
                limit = None
                if not piece:
                    continue
            await self._send(stream, conn, h11.Data(data=piece))
            sent += len(piece)
        if isinstance(fault, Disconnect):
            # the fault asked for more bytes than there are: cut before the end marker
            raise _Closed
        await self._send(stream, conn, h11.EndOfMessage())


def _wire_headers(wire: object, reply: Reply | None, request: RecordedRequest) -> dict[str, str]:
    """A wire module may add headers the real API sends (request ids...)
    with an optional ``response_headers(reply, request) -> dict``."""
    make = getattr(wire, "response_headers", None)
    return dict(make(reply, request)) if make is not None else {}


@asynccontextmanager
async def fake_provider(**kwargs: object) -> AsyncIterator[FakeProvider]:
    async with trio.open_nursery() as nursery:
        fake = FakeProvider(**kwargs)  # type: ignore[arg-type]
        await nursery.start(fake.serve)
        yield fake
        nursery.cancel_scope.cancel()


class ThreadedFakeProvider:
    """The fake server on its own thread, for synchronous clients (SDK benchmarks).

        with ThreadedFakeProvider(default=Reply(...)) as fake: ...
    """

    def __init__(self, **kwargs: object) -> None:
        self._kwargs = kwargs
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel: trio.CancelScope | None = None
        self.fake: FakeProvider | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            with trio.CancelScope() as scope:
                self._cancel = scope
                self._token = trio.lowlevel.current_trio_token()
                async with trio.open_nursery() as nursery:
                    self.fake = FakeProvider(**self._kwargs)  # type: ignore[arg-type]
                    await nursery.start(self.fake.serve)
                    self._ready.set()

        trio.run(main)

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        # the suite's start-up bound (tests/_ready.py); a thread that died is not waited for
        deadline = time.monotonic() + READY_TIMEOUT
        while not self._ready.wait(0.05):
            if not self._thread.is_alive():
                raise RuntimeError("the fake provider's thread ended before it listened (its error is above)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the fake provider did not start within {READY_TIMEOUT:g} s")
        assert self.fake is not None
        return self.fake

    def __exit__(self, *exc: object) -> None:
        if self._token is not None and self._cancel is not None:
            self._token.run_sync_soon(self._cancel.cancel)
        self._thread.join(10)
