"""A loopback HTTP server that sends exactly the bytes a test scripts (plain trio sockets).

    async with raw_server(handler) as srv:   # handler(conn: RawConn) per accepted connection
        srv.url, srv.accepted
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial

import trio


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    raw_head: bytes


@dataclass
class RawConn:
    stream: trio.SocketStream
    index: int  # which accepted connection this is (0, 1, ...)
    server: RawServer
    buf: bytes = b""
    served: int = 0  # requests read on this connection

    async def read_request(self) -> Request | None:
        """The next request, or None when the client closed."""
        while b"\r\n\r\n" not in self.buf:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return None
            if not data:
                return None
            self.buf += data
        raw, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
        size = int(headers.get("content-length", "0"))
        while len(self.buf) < size:
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self.buf += data
        body, self.buf = self.buf[:size], self.buf[size:]
        self.served += 1
        request = Request(method, target, headers, body, raw)
        self.server.requests.append(request)
        return request

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def wait_closed(self) -> bool:
        """True once the client closed this connection (EOF or reset)."""
        try:
            while True:
                if not await self.stream.receive_some(65536):
                    return True
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return True


@dataclass
class RawServer:
    port: int = 0
    accepted: int = 0
    requests: list[Request] = field(default_factory=list)
    closed_by_client: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


Handler = Callable[[RawConn], Awaitable[None]]


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[RawServer]:
    server = RawServer()

    async def serve(stream: trio.SocketStream) -> None:
        conn = RawConn(stream, server.accepted, server)
        server.accepted += 1
        try:
            await handler(conn)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await trio.aclose_forcefully(stream)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def chunked_head(status: str = "200 OK", extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        f"{extra}\r\n"
    ).encode()


async def keep_alive(conn: RawConn, pieces: tuple[bytes, ...] = (b"data: 1\n\n", b"data: 2\n\n")) -> None:
    """Answer every request on the connection with a chunked body of ``pieces``."""
    while await conn.read_request() is not None:
        await conn.send(chunked_head() + b"".join(chunk(p) for p in pieces) + b"0\r\n\r\n")
