"""The thin I/O shell: move a Codec's bytes (streamed: providers.h1; whole: httpx).

Every failure becomes data: a streaming call ends with an ErrorEvent, a
non-streaming call raises ProviderFailure. Nothing here knows a wire format.

Every error leaving here is scrubbed of the provider's key and of every
registered secret (prefixes of 8+ characters included): providers quote the
key they refused, whole or cut, and a transport error can quote a URL.

A 200 answer to a streaming request is decoded by what its body is: an event
stream as a stream; a JSON body (a proxy or server that ignored ``stream:
true``) with the codec's ``decode_response``, delivered as the events a stream
would have sent - or as an error when it is an error object; anything else
(a captive portal's HTML page...) is an error naming the content type.

Streamed calls go through providers.h1.StreamClient (a lean HTTP/1.1 client
that pays per read, not per layer); complete and count_tokens stay on httpx.
A redirect the client did not follow (any 3xx but a same-origin 307/308) ends
the stream with an invalid_request error naming the new address: API keys do
not travel to another origin.

Each answer's rate-limit facts (the codec's ``decode_limits``) go to the
caller's ``on_limits`` as soon as they are known (a success: at its head; an
error: with its body, which Gemini's are in) and ride on every error the codec
decodes from that answer (``ProviderError.rate_limits``). The event stream is
unchanged.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urljoin

import httpx
import msgspec

from .accumulate import events_of
from .base import Codec, HttpRequest, TokenCounter
from .errors import transport_error
from .h1 import H1Response, StreamClient, TransportError
from .ratelimits import OnLimits, RateLimits
from .secrets import scrub
from .settings import ProviderSettings
from .types import (
    DoneEvent,
    ErrorEvent,
    ProviderError,
    ProviderFailure,
    Request,
    Response,
    StreamEvent,
)


def _timeout(settings: ProviderSettings) -> httpx.Timeout:
    return httpx.Timeout(
        connect=settings.connect_timeout,
        read=settings.read_timeout,
        write=settings.read_timeout,
        pool=settings.connect_timeout,
    )


def _detail(exc: BaseException) -> str:
    """The first message down the exception chain: httpcore's trio backend raises
    ConnectError with no text and keeps the SSL error (a bad certificate...) as a cause."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        text = str(seen)
        if text and text != type(seen).__name__:
            return text
        seen = seen.__cause__ or seen.__context__
    return type(exc).__name__


def _transport_failure(exc: Exception, provider: str, what: str) -> ProviderError:
    if isinstance(exc, httpx.TimeoutException):
        kind = {
            httpx.ConnectTimeout: "connecting",
            httpx.ReadTimeout: "waiting for data",
            httpx.WriteTimeout: "sending the request",
            httpx.PoolTimeout: "waiting for a connection",
        }.get(type(exc), "waiting")
        return transport_error("timeout", f"timed out {kind} ({what})", provider=provider)
    detail = _detail(exc)
    return transport_error("network", f"{type(exc).__name__}: {detail} ({what})", provider=provider)


_TIMEOUT_WHAT = {
    "timeout_connect": "connecting",
    "timeout_read": "waiting for data",
    "timeout_write": "sending the request",
}
# the httpx exception names these failures carried, kept for people who grep logs
_NETWORK_NAME = {
    "connect": "ConnectError",
    "closed": "ReadError",
    "protocol": "RemoteProtocolError",
}
_ENDS = (DoneEvent, ErrorEvent)
_ERROR_BODY = 1 << 20  # an error body read to decode it; the rest is left unread


def _stream_failure(exc: TransportError, provider: str, what: str) -> ProviderError:
    if exc.kind == "refused":  # a header from config with CR/LF: no retry can help
        return ProviderError(
            category="invalid_request",
            message=f"{exc.message} ({what}); check extra_headers in config.json",
            retryable=False,
            provider=provider,
        )
    timeout = _TIMEOUT_WHAT.get(exc.kind)
    if timeout is not None:
        return transport_error("timeout", f"timed out {timeout} ({what})", provider=provider)
    name = _NETWORK_NAME.get(exc.kind, "TransportError")
    return transport_error("network", f"{name}: {exc.message} ({what})", provider=provider)


async def _one(event: StreamEvent) -> AsyncIterator[StreamEvent]:
    yield event


_SNIFF = 16  # bytes past leading whitespace that tell JSON, SSE and other bodies apart
_SNIFF_MAX = 4096  # whitespace past this is not worth waiting behind
_SHOWN = 200  # characters of an unexpected body quoted in the error
_SSE_FIELDS = (b"data:", b"event:", b"id:", b"retry:", b":")


def _kind_of(head: bytes) -> str:
    """json, stream or other, from a body's first bytes."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return "stream"  # no body: the stream decoder reports the empty stream
    if text[:1] in (b"{", b"["):
        return "json"
    return "stream" if text.startswith(_SSE_FIELDS) else "other"


def _error_object(body: bytes) -> bool:
    """A JSON body that is an error ({"error": ...}, Anthropic's {"type": "error"})."""
    try:
        data = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeError):  # invalid UTF-8, a lone surrogate
        return False
    if isinstance(data, list) and len(data) == 1:
        data = data[0]  # Gemini wraps an error in a one-element list
    return isinstance(data, dict) and (data.get("error") is not None or data.get("type") == "error")


def _with_limits(error: ProviderError, limits: RateLimits | None) -> ProviderError:
    if limits is None or error.rate_limits is not None:
        return error
    return msgspec.structs.replace(error, rate_limits=limits)


class HttpProvider:
    """A Provider made of a Codec, an httpx.AsyncClient for whole calls and a
    StreamClient for streamed ones (each shared, or owned and closed by aclose)."""

    def __init__(
        self,
        codec: Codec,
        settings: ProviderSettings,
        *,
        client: httpx.AsyncClient | None = None,
        streamer: StreamClient | None = None,
    ) -> None:
        self.codec = codec
        self.settings = settings
        self.name = settings.name
        self._own_client = client is None
        self._own_streamer = streamer is None
        if client is None or streamer is None:
            ssl_context = httpx.create_ssl_context()
            client = client or httpx.AsyncClient(timeout=_timeout(settings), verify=ssl_context)
            streamer = streamer or StreamClient(ssl_context=ssl_context)
        self._client = client
        self._streamer = streamer

    def _scrub(self, error: ProviderError) -> ProviderError:
        """Providers quote the key they refused (whole or its start); it must not travel further.

        This provider's key is scrubbed even when nobody registered it.
        """
        message = scrub(error.message, self.settings.api_key)
        if message == error.message:
            return error
        return msgspec.structs.replace(error, message=message)

    def _transport_failure(self, exc: Exception, what: str) -> ProviderError:
        return self._scrub(_transport_failure(exc, self.name, what))

    def _send_args(self, req: HttpRequest) -> dict[str, Any]:
        return {
            "method": req.method,
            "url": req.url,
            "headers": req.headers,
            "content": req.body,
            "timeout": _timeout(self.settings),
        }

    def _limits(
        self, headers: Mapping[str, str], body: bytes, now: float, on_limits: OnLimits | None
    ) -> RateLimits | None:
        """The answer's rate-limit facts, handed to ``on_limits`` when there are any."""
        limits = self.codec.decode_limits(headers, body, now=now)
        if limits is not None and on_limits is not None:
            on_limits(limits)
        return limits

    @asynccontextmanager
    async def stream(
        self, request: Request, *, on_limits: OnLimits | None = None
    ) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        try:
            http_req = self.codec.encode(request, stream=True)
        except ProviderFailure as failure:
            yield _one(ErrorEvent(error=self._scrub(failure.error)))
            return
        what = f"{http_req.method} {http_req.url.split('?', 1)[0]}"
        try:
            async with self._streamer.stream(
                http_req.method,
                http_req.url,
                http_req.headers,
                http_req.body,
                connect_timeout=self.settings.connect_timeout,
                read_timeout=self.settings.read_timeout,
            ) as response:
                now = time.time()
                limits = None
                if response.status < 300:  # an error's are read with its body
                    limits = self._limits(response.headers, b"", now, on_limits)
                # the deadline's scope encloses this body: a consumer's exception
                # (a Cancelled from that scope included) must reach its exit
                yield self._events(request, response, what, limits, now, on_limits)
                return
        except TransportError as exc:  # before the head (after it, _events reports)
            error = self._scrub(_stream_failure(exc, self.name, what))
        yield _one(ErrorEvent(error=error))

    def _event(self, event: StreamEvent, limits: RateLimits | None) -> StreamEvent:
        if isinstance(event, ErrorEvent):
            return ErrorEvent(error=self._scrub(_with_limits(event.error, limits)))
        return event

    def _redirect(self, response: H1Response) -> ProviderError:
        location = response.headers.get("location", "")
        target = urljoin(response.url, location).split("?", 1)[0].split("#", 1)[0]
        return ProviderError(
            category="invalid_request",
            message=(
                f"HTTP {response.status} redirect to {target}: ikigai does not follow it; "
                "set base_url to the new address"
            ),
            http_status=response.status,
            retryable=False,
            provider=self.name,
        )

    async def _events(
        self,
        request: Request,
        response: H1Response,
        what: str,
        limits: RateLimits | None,
        now: float,
        on_limits: OnLimits | None,
    ) -> AsyncIterator[StreamEvent]:
        ended = False
        try:
            content_type = response.headers.get("content-type", "")
            if 300 <= response.status < 400:
                yield ErrorEvent(error=self._scrub(self._redirect(response)))
                return
            if response.status >= 400:
                body = await response.read(_ERROR_BODY)
                error = self.codec.decode_error(response.status, body, response.headers)
                limits = self._limits(response.headers, body, now, on_limits)
                yield ErrorEvent(error=self._scrub(_with_limits(error, limits)))
                return
            buf = bytearray()
            if "event-stream" in content_type:
                kind = "stream"
            elif "json" in content_type:
                kind = "json"
            else:  # no content type, or an unexpected one: the first bytes tell
                async for chunk in response:
                    buf += chunk
                    if len(buf) >= _SNIFF_MAX or len(buf.lstrip()) >= _SNIFF:
                        break
                kind = _kind_of(bytes(buf))
            if kind != "stream":
                async for chunk in response:
                    buf += chunk
                    if kind == "other" and len(buf) >= 4 * _SHOWN:
                        break
                if kind == "json":
                    for event in self._whole_body(request, bytes(buf), response.headers, limits):
                        yield event
                else:
                    yield ErrorEvent(error=self._unexpected(content_type, bytes(buf[: 4 * _SHOWN])))
                return
            decoder = self.codec.stream_decoder(request)
            if buf:
                events = decoder.feed(bytes(buf))
                ended = bool(events) and isinstance(events[-1], _ENDS)
                for event in events:
                    yield self._event(event, limits)
            async for chunk in response:
                events = decoder.feed(chunk)
                if events:
                    # checked per read, not per event: an end is a read's last event
                    ended = isinstance(events[-1], _ENDS)
                    for event in events:
                        yield self._event(event, limits)
            for event in decoder.close():
                yield self._event(event, limits)
        except TransportError as exc:
            if not ended:  # a cut after the final event leaves a whole answer: one end only
                yield ErrorEvent(error=self._scrub(_stream_failure(exc, self.name, what)))

    def _whole_body(
        self,
        request: Request,
        body: bytes,
        headers: Mapping[str, str],
        limits: RateLimits | None,
    ) -> list[StreamEvent]:
        """A 200 whose body is the whole JSON answer: the events a stream would have sent."""
        if _error_object(body):
            error = _with_limits(self.codec.decode_error(200, body, headers), limits)
            return [ErrorEvent(error=self._scrub(error))]
        try:
            response = self.codec.decode_response(body, request)
        except ProviderFailure as failure:
            return [ErrorEvent(error=self._scrub(_with_limits(failure.error, limits)))]
        return [self._event(event, limits) for event in events_of(response)]

    def _unexpected(self, content_type: str, head: bytes) -> ProviderError:
        text = " ".join(scrub(head.decode("utf-8", "replace"), self.settings.api_key).split())
        shown = text[:_SHOWN] + ("..." if len(text) > _SHOWN else "")
        return ProviderError(
            category="server",
            message=(
                f"HTTP 200 with content-type {content_type or '(none)'!r} instead of an event "
                f"stream or JSON (a proxy or captive portal in the way?); the body begins "
                f"{shown!r}"
            ),
            http_status=200,
            retryable=True,
            provider=self.name,
        )

    async def complete(self, request: Request, *, on_limits: OnLimits | None = None) -> Response:
        limits = None
        try:
            http_req = self.codec.encode(request, stream=False)
            body, limits = await self._call(http_req, on_limits)
            return self.codec.decode_response(body, request)
        except ProviderFailure as failure:
            raise ProviderFailure(self._scrub(_with_limits(failure.error, limits))) from None

    async def count_tokens(self, request: Request, *, on_limits: OnLimits | None = None) -> int:
        if not isinstance(self.codec, TokenCounter):
            raise ProviderFailure(
                ProviderError(
                    category="invalid_request",
                    message=f"{self.name} has no token-count operation",
                    provider=self.name,
                )
            )
        limits = None
        try:
            body, limits = await self._call(self.codec.encode_count_tokens(request), on_limits)
            return self.codec.decode_count_tokens(body)
        except ProviderFailure as failure:
            raise ProviderFailure(self._scrub(_with_limits(failure.error, limits))) from None

    async def _call(
        self, http_req: HttpRequest, on_limits: OnLimits | None
    ) -> tuple[bytes, RateLimits | None]:
        """The body of a successful answer and its rate limits; raise ProviderFailure."""
        what = f"{http_req.method} {http_req.url.split('?', 1)[0]}"
        try:
            response = await self._client.request(**self._send_args(http_req))
        except httpx.HTTPError as exc:
            raise ProviderFailure(self._transport_failure(exc, what)) from None
        # a whole answer's head comes when it is ready: with the body, near enough
        now = time.time()
        if response.status_code >= 400:
            error = self.codec.decode_error(
                response.status_code, response.content, response.headers
            )
            limits = self._limits(response.headers, response.content, now, on_limits)
            raise ProviderFailure(self._scrub(_with_limits(error, limits)))
        return response.content, self._limits(response.headers, b"", now, on_limits)

    async def aclose(self) -> None:
        if self._own_streamer:
            await self._streamer.aclose()
        if self._own_client:
            await self._client.aclose()
