"""The thin I/O shell: move a Codec's bytes over httpx.

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
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgspec

from .accumulate import events_of
from .base import Codec, HttpRequest, TokenCounter
from .errors import transport_error
from .secrets import scrub
from .settings import ProviderSettings
from .types import ErrorEvent, ProviderError, ProviderFailure, Request, Response, StreamEvent


def _timeout(settings: ProviderSettings) -> httpx.Timeout:
    return httpx.Timeout(
        connect=settings.connect_timeout,
        read=settings.read_timeout,
        write=settings.read_timeout,
        pool=settings.connect_timeout,
    )


def _transport_failure(exc: Exception, provider: str, what: str) -> ProviderError:
    if isinstance(exc, httpx.TimeoutException):
        kind = {
            httpx.ConnectTimeout: "connecting",
            httpx.ReadTimeout: "waiting for data",
            httpx.WriteTimeout: "sending the request",
            httpx.PoolTimeout: "waiting for a connection",
        }.get(type(exc), "waiting")
        return transport_error("timeout", f"timed out {kind} ({what})", provider=provider)
    detail = str(exc) or type(exc).__name__
    return transport_error("network", f"{type(exc).__name__}: {detail} ({what})", provider=provider)


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
    except msgspec.DecodeError:
        return False
    if isinstance(data, list) and len(data) == 1:
        data = data[0]  # Gemini wraps an error in a one-element list
    return isinstance(data, dict) and (data.get("error") is not None or data.get("type") == "error")


class HttpProvider:
    """A Provider made of a Codec and an httpx.AsyncClient (shared or owned)."""

    def __init__(
        self,
        codec: Codec,
        settings: ProviderSettings,
        *,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.codec = codec
        self.settings = settings
        self.name = settings.name
        self._own_client = client is None
        self._client = client or httpx.AsyncClient(timeout=_timeout(settings))

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

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        try:
            http_req = self.codec.encode(request, stream=True)
        except ProviderFailure as failure:
            yield _one(ErrorEvent(error=self._scrub(failure.error)))
            return
        what = f"{http_req.method} {http_req.url.split('?', 1)[0]}"
        try:
            cm = self._client.stream(**self._send_args(http_req))
            response = await cm.__aenter__()
        except httpx.HTTPError as exc:
            yield _one(ErrorEvent(error=self._transport_failure(exc, what)))
            return
        try:
            yield self._events(request, response, what)
        finally:
            await cm.__aexit__(None, None, None)

    async def _events(
        self, request: Request, response: httpx.Response, what: str
    ) -> AsyncIterator[StreamEvent]:
        try:
            content_type = response.headers.get("content-type", "")
            if response.status_code >= 400:
                body = await response.aread()
                yield ErrorEvent(
                    error=self._scrub(
                        self.codec.decode_error(response.status_code, body, response.headers)
                    )
                )
                return
            chunks = response.aiter_bytes()
            buf = bytearray()
            if "event-stream" in content_type:
                kind = "stream"
            elif "json" in content_type:
                kind = "json"
            else:  # no content type, or an unexpected one: the first bytes tell
                async for chunk in chunks:
                    buf += chunk
                    if len(buf) >= _SNIFF_MAX or len(buf.lstrip()) >= _SNIFF:
                        break
                kind = _kind_of(bytes(buf))
            if kind != "stream":
                async for chunk in chunks:
                    buf += chunk
                    if kind == "other" and len(buf) >= 4 * _SHOWN:
                        break
                if kind == "json":
                    for event in self._whole_body(request, bytes(buf), response.headers):
                        yield event
                else:
                    yield ErrorEvent(error=self._unexpected(content_type, bytes(buf[: 4 * _SHOWN])))
                return
            decoder = self.codec.stream_decoder(request)
            if buf:
                for event in decoder.feed(bytes(buf)):
                    yield (
                        ErrorEvent(error=self._scrub(event.error))
                        if isinstance(event, ErrorEvent)
                        else event
                    )
            async for chunk in chunks:
                for event in decoder.feed(chunk):
                    yield (
                        ErrorEvent(error=self._scrub(event.error))
                        if isinstance(event, ErrorEvent)
                        else event
                    )
            for event in decoder.close():
                yield (
                    ErrorEvent(error=self._scrub(event.error))
                    if isinstance(event, ErrorEvent)
                    else event
                )
        except httpx.HTTPError as exc:
            yield ErrorEvent(error=self._transport_failure(exc, what))

    def _whole_body(
        self, request: Request, body: bytes, headers: httpx.Headers
    ) -> list[StreamEvent]:
        """A 200 whose body is the whole JSON answer: the events a stream would have sent."""
        if _error_object(body):
            return [ErrorEvent(error=self._scrub(self.codec.decode_error(200, body, headers)))]
        try:
            response = self.codec.decode_response(body, request)
        except ProviderFailure as failure:
            return [ErrorEvent(error=self._scrub(failure.error))]
        return events_of(response)

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

    async def complete(self, request: Request) -> Response:
        try:
            http_req = self.codec.encode(request, stream=False)
            return self.codec.decode_response(await self._call(http_req), request)
        except ProviderFailure as failure:
            raise ProviderFailure(self._scrub(failure.error)) from None

    async def count_tokens(self, request: Request) -> int:
        if not isinstance(self.codec, TokenCounter):
            raise ProviderFailure(
                ProviderError(
                    category="invalid_request",
                    message=f"{self.name} has no token-count operation",
                    provider=self.name,
                )
            )
        try:
            body = await self._call(self.codec.encode_count_tokens(request))
            return self.codec.decode_count_tokens(body)
        except ProviderFailure as failure:
            raise ProviderFailure(self._scrub(failure.error)) from None

    async def _call(self, http_req: HttpRequest) -> bytes:
        what = f"{http_req.method} {http_req.url.split('?', 1)[0]}"
        try:
            response = await self._client.request(**self._send_args(http_req))
        except httpx.HTTPError as exc:
            raise ProviderFailure(self._transport_failure(exc, what)) from None
        if response.status_code >= 400:
            raise ProviderFailure(
                self._scrub(
                    self.codec.decode_error(
                        response.status_code, response.content, response.headers
                    )
                )
            )
        return response.content

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()
