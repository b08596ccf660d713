"""A real HTTP proxy on loopback (trio, port 0), for proxy tests.

It speaks the two things a client behind HTTP(S)_PROXY sends: ``CONNECT
host:port`` (answered 200, then bytes are relayed both ways: TLS passes through
untouched) and absolute-form plain-http requests (``POST http://host:port/path``,
forwarded in origin form with ``Connection: close``, the answer relayed back).
Every request line is recorded with its Proxy-Authorization header.

Modes: ``credentials=(user, password)`` answers 407 to a request without them;
``refuse_connect`` answers CONNECT with 403; ``cut_after=N`` closes the next
``cuts`` tunnels after N bytes from the server side (TLS handshake included).

    async with fake_proxy(credentials=("u", "p")) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url_with("u", "p"))
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

import trio

_HEAD_LIMIT = 64 * 1024
_HOP_BY_HOP = {b"proxy-authorization", b"proxy-connection", b"connection", b"keep-alive"}


@dataclass(frozen=True)
class ProxyRequest:
    method: str
    target: str
    authorization: str | None  # the Proxy-Authorization header as sent, None if absent

    @property
    def credentials(self) -> tuple[str, str] | None:
        """(user, password) of a Basic Proxy-Authorization, else None."""
        if not self.authorization or not self.authorization.lower().startswith("basic "):
            return None
        user, _, password = base64.b64decode(self.authorization[6:]).decode().partition(":")
        return user, password


class FakeProxy:
    def __init__(
        self,
        *,
        credentials: tuple[str, str] | None = None,
        refuse_connect: bool = False,
        cut_after: int | None = None,
        cuts: int = 1,
    ) -> None:
        self.credentials = credentials
        self.refuse_connect = refuse_connect
        self.cut_after = cut_after
        self.cuts = cuts  # tunnels still to cut when cut_after is set
        self.requests: list[ProxyRequest] = []
        self.tunnel_bytes: list[int] = []  # server -> client bytes of each tunnel that ended
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_with(self, user: str, password: str) -> str:
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    async def serve(
        self, *, task_status: trio.TaskStatus[FakeProxy] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self)
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, client: trio.SocketStream) -> None:
        try:
            await self._handle(client)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ValueError):
            pass
        finally:
            with trio.CancelScope(shield=True):
                await client.aclose()

    async def _handle(self, client: trio.SocketStream) -> None:
        buf = bytearray()
        while b"\r\n\r\n" not in buf:
            data = await client.receive_some(65536)
            if not data or len(buf) > _HEAD_LIMIT:
                return
            buf += data
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        request_line, *lines = head.split(b"\r\n")
        method, target, _version = request_line.decode("latin-1").split(" ", 2)
        headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(b":") for line in lines)]
        auth = next(
            (v.decode("latin-1") for k, v in headers if k.lower() == b"proxy-authorization"), None
        )
        record = ProxyRequest(method=method, target=target, authorization=auth)
        self.requests.append(record)
        if self.credentials is not None and record.credentials != self.credentials:
            await client.send_all(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n'
                b"Connection: close\r\n\r\n"
            )
            return
        if method == "CONNECT":
            if self.refuse_connect:
                await client.send_all(
                    b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                return
            host, _, port = target.rpartition(":")
            upstream = await trio.open_tcp_stream(host.strip("[]"), int(port))
            await client.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await self._relay(client, upstream, first=rest, tunnel=True)
            return
        # absolute form: http://host:port/path -> origin form to host:port
        if not target.startswith("http://"):
            await client.send_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            return
        hostport, _, path = target[len("http://") :].partition("/")
        host, _, port = hostport.rpartition(":")
        upstream = await trio.open_tcp_stream(host.strip("[]"), int(port or 80))
        kept = [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP]
        # one request per upstream connection: the client's next request may be absolute-form again
        forwarded = f"{method} /{path} HTTP/1.1\r\n".encode() + b"".join(
            k + b": " + v + b"\r\n" for k, v in kept
        )
        await upstream.send_all(forwarded + b"Connection: close\r\n\r\n" + rest)
        await self._relay(client, upstream, first=b"", tunnel=False)

    async def _relay(
        self, client: trio.SocketStream, upstream: trio.SocketStream, *, first: bytes, tunnel: bool
    ) -> None:
        limit = None
        if tunnel and self.cut_after is not None and self.cuts > 0:
            self.cuts -= 1
            limit = self.cut_after
        down = 0

        async def up() -> None:
            if first:
                await upstream.send_all(first)
            while data := await client.receive_some(65536):
                await upstream.send_all(data)

        async def back() -> None:
            nonlocal down
            while data := await upstream.receive_some(65536):
                if limit is not None and down + len(data) >= limit:
                    await client.send_all(data[: limit - down])
                    down = limit
                    return  # the cut: both sides are closed below
                await client.send_all(data)
                down += len(data)

        async def then_stop(side: Callable[[], Awaitable[None]], scope: trio.CancelScope) -> None:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await side()
            scope.cancel()  # either side ending ends the relay

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(then_stop, up, nursery.cancel_scope)
                nursery.start_soon(then_stop, back, nursery.cancel_scope)
        finally:
            self.tunnel_bytes.append(down)
            with trio.CancelScope(shield=True):
                await upstream.aclose()


@asynccontextmanager
async def fake_proxy(**kwargs: object) -> AsyncIterator[FakeProxy]:
    async with trio.open_nursery() as nursery:
        proxy = FakeProxy(**kwargs)  # type: ignore[arg-type]
        await nursery.start(proxy.serve)
        yield proxy
        nursery.cancel_scope.cancel()
