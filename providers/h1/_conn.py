"""One HTTP/1.1 connection: open it (TCP, TLS, proxy tunnel), send a request, read a response.

Deadlines are not set here: the caller (StreamClient) owns one CancelScope per
exchange and moves its deadline per phase; a Cancelled from that scope is
turned into a TransportError of the phase's kind. The body's per-read path
(H1Response.__anext__) is one ``receive_some``, the incremental de-framing,
and a deadline move only when it has drifted by more than 5% of the timeout.
"""

from __future__ import annotations

import base64
import select
import ssl
from collections.abc import Awaitable, Callable
from typing import NamedTuple

import trio

from ._body import Body, CloseBody, body_for, content_decoder
from ._errors import Kind, TransportError
from ._head import Head, Headers, ProtocolError, head_end, parse_head
from ._proxy import Proxy

READ_SIZE = 65536
_DRIFT = 0.05  # the read deadline moves once it lags progress by this fraction of the timeout


class Target(NamedTuple):
    scheme: str
    host: str
    port: int
    explicit_port: int | None  # None when the URL gave the scheme's default port
    path: str  # origin-form request target: path?query

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.explicit_port is None else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path}"

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


class Stale(Exception):
    """A reused connection was closed by the server while idle (nothing was answered)."""


class Phase:
    """Which step of an exchange the shared deadline currently bounds."""

    __slots__ = ("kind", "scope")

    def __init__(self, scope: trio.CancelScope) -> None:
        self.scope = scope
        self.kind: Kind = "timeout_connect"

    def start(self, kind: Kind, seconds: float) -> None:
        self.kind = kind
        self.scope.deadline = trio.current_time() + seconds


def basic_auth(auth: tuple[str, str]) -> str:
    return "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")


def _broken(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return str(cause or exc) or type(cause or exc).__name__


class Connection:
    __slots__ = ("_sock", "idle_since", "key", "stream", "uses")

    def __init__(self, stream: trio.abc.Stream, sock: trio.socket.SocketType, key: object) -> None:
        self.stream = stream
        self._sock = sock
        self.key = key
        self.uses = 0
        self.idle_since = 0.0

    def close(self) -> None:
        """Synchronous and immediate: no TLS close_notify to wait for under a cancelled scope."""
        self._sock.close()

    def is_readable(self) -> bool:
        """An idle connection with something to read (EOF, a reset, stray bytes) is unusable."""
        try:
            fd = self._sock.fileno()
        except OSError:
            return True
        if fd < 0:
            return True
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))

    async def send(self, data: bytes, reused: bool) -> None:
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            if reused:
                raise Stale from None
            raise TransportError(
                "closed", f"connection lost while sending: {_broken(exc)}"
            ) from None


async def read_head(stream: trio.abc.Stream, reused: bool) -> tuple[Head, bytes]:
    """The final (non-1xx) response head and the bytes read past it."""
    buf = b""
    got_any = False
    while True:
        end = head_end(buf) if buf else -1
        if end < 0:
            try:
                data = await stream.receive_some(READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                if reused and not got_any:
                    raise Stale from None
                raise TransportError(
                    "closed", f"connection lost before the response: {_broken(exc)}"
                ) from None
            if not data:
                if reused and not got_any:
                    raise Stale
                raise TransportError(
                    "closed", "server closed the connection without sending a complete response"
                )
            got_any = True
            buf += data
            continue
        head = parse_head(buf[:end])
        buf = buf[end:]
        if head.status == 101:
            raise ProtocolError("unexpected 101 Switching Protocols")
        if 100 <= head.status < 200:
            continue  # interim response (100 Continue, 103 Early Hints): the next head follows
        return head, buf


async def open_tcp(host: str, port: int) -> trio.SocketStream:
    try:
        return await trio.open_tcp_stream(host, port)
    except OSError as exc:
        raise TransportError("connect", str(exc) or type(exc).__name__) from None


async def start_tls(
    stream: trio.abc.Stream, ctx: ssl.SSLContext, host: str, what: str
) -> trio.SSLStream[trio.abc.Stream]:
    tls = trio.SSLStream(stream, ctx, server_hostname=host, https_compatible=True)
    try:
        await tls.do_handshake()
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        raise TransportError(
            "connect", f"TLS handshake with {what} failed: {_broken(exc)}"
        ) from None
    return tls


async def tunnel(stream: trio.abc.Stream, target: Target, proxy: Proxy) -> bytes:
    """CONNECT host:port through an HTTP proxy; the bytes past its answer (normally none)."""
    authority = (
        f"[{target.host}]:{target.port}" if ":" in target.host else f"{target.host}:{target.port}"
    )
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if proxy.auth is not None:
        lines.append(f"Proxy-Authorization: {basic_auth(proxy.auth)}")
    try:
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        raise TransportError("connect", f"proxy {proxy.shown} closed: {_broken(exc)}") from None
    try:
        head, rest = await read_head(stream, reused=False)
    except TransportError as exc:
        raise TransportError("connect", f"proxy {proxy.shown}: {exc.message}") from None
    except ProtocolError as exc:
        raise TransportError("connect", f"proxy {proxy.shown}: {exc}") from None
    if not 200 <= head.status < 300:
        raise TransportError(
            "connect",
            f"proxy {proxy.shown} refused CONNECT to {authority}: "
            f"{head.status} {head.reason}".rstrip(),
        )
    return rest


def encode_request(
    method: str,
    request_target: str,
    authority: str,
    headers: list[tuple[str, str]],
    body: bytes,
    user_agent: str,
) -> bytes:
    """The request bytes; a header with CR, LF or NUL is refused (naming it, never its value)."""
    names = set()
    out = [f"{method} {request_target} HTTP/1.1", f"Host: {authority}"]
    for name, value in headers:
        lower = name.lower()
        if not name or not _token(name):
            shown = name[:40].encode("unicode_escape").decode("ascii")
            raise TransportError(
                "refused", f"refusing to send a header with an invalid name {shown!r}"
            )
        if "\r" in value or "\n" in value or "\0" in value:
            raise TransportError(
                "refused", f"refusing to send header {name!r}: its value holds CR, LF or NUL"
            )
        if lower in ("host", "content-length", "transfer-encoding", "connection"):
            continue  # framing is ours
        names.add(lower)
        out.append(f"{name}: {value}")
    if body or method in ("POST", "PUT", "PATCH"):
        out.append(f"Content-Length: {len(body)}")
    if "accept-encoding" not in names:
        out.append("Accept-Encoding: identity")
    if "user-agent" not in names:
        out.append(f"User-Agent: {user_agent}")
    head = ("\r\n".join(out) + "\r\n\r\n").encode("utf-8")
    return head + body if body else head


_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _token(name: str) -> bool:
    return all(c in _TCHAR for c in name)


class H1Response:
    """A response whose head was read; iterate it for the body (one item per read)."""

    def __init__(
        self,
        conn: Connection,
        head: Head,
        first: bytes,
        phase: Phase,
        read_timeout: float,
        url: str,
        method: str,
    ) -> None:
        self.status = head.status
        self.reason = head.reason
        self.headers: Headers = head.headers
        self.http_version = f"HTTP/1.{head.version}"
        self.url = url
        self.conn = conn
        self._body: Body = body_for(head.status, head.headers, head_request=method == "HEAD")
        self._decode: Callable[[bytes], bytes] | None = content_decoder(head.headers)
        self._first = first
        self._phase = phase
        self._scope = phase.scope
        self._timeout = read_timeout
        self._step = read_timeout * _DRIFT
        self._next_move = 0.0
        # trio streams return bytes (the abc says bytes | bytearray)
        receive: Callable[[int], Awaitable[bytes]] = conn.stream.receive_some  # type: ignore[assignment]
        self._receive = receive
        tokens = {t.strip().lower() for t in head.headers.get("connection", "").split(",")}
        self._keep = head.version == 1 and "close" not in tokens

    @property
    def complete(self) -> bool:
        """Read to its end with nothing after it, on a connection that may carry another."""
        body = self._body
        return self._keep and body.done and not body.extra and not isinstance(body, CloseBody)

    def __aiter__(self) -> H1Response:
        return self

    async def __anext__(self) -> bytes:
        body = self._body
        while True:
            if self._first:
                data = self._first
                self._first = b""
            else:
                if body.done:
                    raise StopAsyncIteration
                try:
                    data = await self._receive(READ_SIZE)
                except trio.Cancelled:
                    if self._scope.cancel_called:
                        raise TransportError(
                            "timeout_read", f"no data for {self._timeout:g} s"
                        ) from None
                    raise
                except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                    raise TransportError(
                        "closed", f"connection lost mid-body: {_broken(exc)}"
                    ) from None
                if not data:
                    if isinstance(body, CloseBody):
                        body.done = True
                        raise StopAsyncIteration
                    raise TransportError(
                        "closed",
                        f"peer closed the connection before the body ended ({body.missing()})",
                    )
                now = trio.current_time()
                if now > self._next_move:
                    self._scope.deadline = now + self._timeout
                    self._next_move = now + self._step
            try:
                payload = body.feed(data)
                if self._decode is not None and payload:
                    payload = self._decode(payload)
            except ProtocolError as exc:
                raise TransportError("protocol", str(exc)) from None
            if payload:
                return payload

    async def read(self, limit: int = 1 << 20) -> bytes:
        """The body, at most ``limit`` bytes (the rest is left unread: the connection closes)."""
        parts: list[bytes] = []
        size = 0
        async for data in self:
            parts.append(data)
            size += len(data)
            if size >= limit:
                break
        return b"".join(parts)[:limit]
