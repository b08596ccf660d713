"""StreamClient: streamed HTTP/1.1 requests over a keep-alive pool per origin.

No cap on concurrent connections: each stream has its own, and every one that
ends cleanly goes back to the pool (up to ``max_idle_per_origin``, dropped after
``idle_expiry`` seconds idle). A connection is reused only when its response
was read to the end and allows it; before reuse, one that is readable (the
server closed it, or sent stray bytes) is discarded; a reused one that fails
before any byte of the answer gets the request once more on a new connection.
"""

from __future__ import annotations

import importlib.metadata
import ssl
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from urllib.parse import quote, urljoin, urlsplit

import trio

from ._conn import (
    Connection,
    H1Response,
    Phase,
    Stale,
    Target,
    basic_auth,
    encode_request,
    open_tcp,
    read_head,
    start_tls,
    tunnel,
)
from ._errors import TransportError
from ._head import ProtocolError
from ._proxy import Proxy, ProxyMap, parse_proxy

_DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_REDIRECTS = 3
_REDIRECT_BODY = 64 * 1024  # a 307/308 body read to reuse its connection
_SAFE = "!#$%&'()*+,/:;=?@[]~-._"  # kept as they are in a request target (httpx quotes the rest)


def _user_agent() -> str:
    try:
        version = importlib.metadata.version("ikigai")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    return f"ikigai/{version}"


USER_AGENT = _user_agent()


def parse_target(url: str) -> Target:
    """An http(s) URL as a Target; TransportError (protocol) when it is not one."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise TransportError("protocol", f"unsupported URL scheme {scheme!r}")
    try:
        port = parts.port
    except ValueError:
        raise TransportError("protocol", "invalid port in the URL") from None
    host = parts.hostname
    if not host:
        raise TransportError("protocol", "no host in the URL")
    path = quote(parts.path or "/", safe=_SAFE)
    if parts.query:
        path += "?" + quote(parts.query, safe=_SAFE)
    default = _DEFAULT_PORTS[scheme]
    explicit = None if port in (None, default) else port
    return Target(scheme, host, port or default, explicit, path)


class StreamClient:
    """Streamed HTTP/1.1 requests (see providers.h1 for the contract)."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        trust_env: bool = True,
        max_idle_per_origin: int = 1000,
        idle_expiry: float = 30.0,
        user_agent: str | None = None,
    ) -> None:
        if ssl_context is not None:
            # what httpcore sets on the same shared context for HTTP/1.1 (no h2 here)
            ssl_context.set_alpn_protocols(["http/1.1"])
        self._ssl = ssl_context
        self._proxies = ProxyMap.from_environment(trust_env)
        self.max_idle_per_origin = max_idle_per_origin
        self.idle_expiry = idle_expiry
        self.user_agent = user_agent or USER_AGENT
        self._idle: dict[object, list[Connection]] = {}
        self._closed = False
        self.opened = 0  # connections opened (for tests and figures)
        self.retried = 0  # requests sent again after a reused connection proved dead

    # ------------------------------------------------------------ pool

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            import httpx  # the same trust store httpx uses (SSL_CERT_FILE / SSL_CERT_DIR, certifi)

            self._ssl = httpx.create_ssl_context()
            self._ssl.set_alpn_protocols(["http/1.1"])
        return self._ssl

    def _take(self, key: object) -> Connection | None:
        idle = self._idle.get(key)
        if not idle:
            return None
        now = trio.current_time()
        while idle:
            conn = idle.pop()  # the most recently used: the least likely to be closed
            if now - conn.idle_since < self.idle_expiry and not conn.is_readable():
                if not idle:
                    del self._idle[key]
                return conn
            conn.close()
        del self._idle[key]
        return None

    def _put(self, conn: Connection) -> None:
        if self._closed:
            conn.close()
            return
        now = trio.current_time()
        conn.idle_since = now
        idle = self._idle.setdefault(conn.key, [])
        # the oldest are at the front: expired ones and any over the cap go first
        while idle and (now - idle[0].idle_since >= self.idle_expiry):
            idle.pop(0).close()
        idle.append(conn)
        if len(idle) > self.max_idle_per_origin:
            idle.pop(0).close()

    def idle_connections(self) -> int:
        return sum(len(v) for v in self._idle.values())

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()

    # ------------------------------------------------------------ connecting

    def _proxy_for(self, target: Target) -> Proxy | None:
        url = self._proxies.proxy_url(target.scheme, target.host, target.explicit_port)
        if url is None:
            return None
        try:
            proxy = parse_proxy(url)
        except ValueError as exc:
            raise TransportError("connect", f"invalid proxy setting: {exc}") from None
        if proxy.scheme not in ("http", "https"):
            raise TransportError(
                "connect",
                f"{proxy.scheme} proxies ({proxy.shown}) are not supported for streamed calls; "
                "use an http:// or https:// proxy, or NO_PROXY for this host",
            )
        return proxy

    async def _open(self, target: Target, proxy: Proxy | None, key: object) -> Connection:
        if proxy is None:
            tcp = await open_tcp(target.host, target.port)
        else:
            try:
                tcp = await open_tcp(proxy.host, proxy.port)
            except TransportError as exc:
                raise TransportError("connect", f"proxy {proxy.shown}: {exc.message}") from None
        try:
            stream = await self._secure(tcp, target, proxy)
        except BaseException:
            tcp.socket.close()
            raise
        self.opened += 1
        return Connection(stream, tcp.socket, key)

    async def _secure(
        self, tcp: trio.SocketStream, target: Target, proxy: Proxy | None
    ) -> trio.abc.Stream:
        """TLS to the target, through a proxy's tunnel when there is one."""
        stream: trio.abc.Stream = tcp
        if proxy is not None:
            if proxy.scheme == "https":
                stream = await start_tls(stream, self._ssl_context(), proxy.host, proxy.shown)
            if target.scheme != "https":
                return stream  # http targets go to the proxy in absolute form
            if await tunnel(stream, target, proxy):
                raise TransportError("connect", f"proxy {proxy.shown} sent bytes after CONNECT")
        if target.scheme == "https":
            stream = await start_tls(stream, self._ssl_context(), target.host, target.authority)
        return stream

    # ------------------------------------------------------------ one exchange

    async def _exchange(
        self,
        phase: Phase,
        method: str,
        target: Target,
        headers: list[tuple[str, str]],
        body: bytes,
        connect_timeout: float,
        read_timeout: float,
    ) -> H1Response:
        proxy = self._proxy_for(target)
        forward = proxy is not None and target.scheme == "http"
        if forward:
            assert proxy is not None
            extra = [("Proxy-Authorization", basic_auth(proxy.auth))] if proxy.auth else []
            data = encode_request(
                method, target.url, target.authority, headers + extra, body, self.user_agent
            )
        else:
            data = encode_request(
                method, target.path, target.authority, headers, body, self.user_agent
            )
        key = (target.origin, proxy)
        for attempt in (0, 1):
            conn = self._take(key) if attempt == 0 else None
            reused = conn is not None
            if conn is None:
                phase.start("timeout_connect", connect_timeout)
                conn = await self._open(target, proxy, key)
            try:
                phase.start("timeout_write", read_timeout)
                await conn.send(data, reused)
                phase.start("timeout_read", read_timeout)
                head, rest = await read_head(conn.stream, reused)
            except Stale:
                conn.close()
                self.retried += 1
                continue
            except ProtocolError as exc:
                conn.close()
                raise TransportError("protocol", str(exc)) from None
            except BaseException:
                conn.close()
                raise
            conn.uses += 1
            try:
                return H1Response(conn, head, rest, phase, read_timeout, target.url, method)
            except ProtocolError as exc:
                conn.close()
                raise TransportError("protocol", str(exc)) from None
        raise AssertionError("unreachable: the second attempt uses a new connection")

    def _finish(self, response: H1Response) -> None:
        if response.complete:
            self._put(response.conn)
        else:
            response.conn.close()

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]],
        body: bytes = b"",
        *,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
    ) -> AsyncIterator[H1Response]:
        pairs = list(headers.items() if isinstance(headers, Mapping) else headers)
        target = parse_target(url)
        scope = trio.CancelScope()
        phase = Phase(scope)
        response: H1Response | None = None
        try:
            with scope:
                response = await self._exchange(
                    phase, method, target, pairs, body, connect_timeout, read_timeout
                )
                for _ in range(MAX_REDIRECTS):
                    following = self._same_origin_redirect(response, target)
                    if following is None:
                        break
                    await response.read(_REDIRECT_BODY)
                    self._finish(response)
                    response = None
                    target = following
                    response = await self._exchange(
                        phase, method, target, pairs, body, connect_timeout, read_timeout
                    )
                phase.kind = "timeout_read"
                yield response
        finally:
            if response is not None:
                self._finish(response)
        if response is None and scope.cancelled_caught:
            raise TransportError(phase.kind, _TIMEOUT_TEXT[phase.kind])

    @staticmethod
    def _same_origin_redirect(response: H1Response, target: Target) -> Target | None:
        if response.status not in (307, 308):
            return None
        location = response.headers.get("location")
        if not location:
            return None
        try:
            following = parse_target(urljoin(target.url, location))
        except TransportError:
            return None
        return following if following.origin == target.origin else None


_TIMEOUT_TEXT = {
    "timeout_connect": "timed out connecting",
    "timeout_write": "timed out sending the request",
    "timeout_read": "timed out waiting for the response",
    "connect": "",
    "closed": "",
    "protocol": "",
}
