"""The thin I/O shell: move a Codec's bytes over httpx.

Every failure becomes data: a streaming call ends with an ErrorEvent, a
non-streaming call raises ProviderFailure. Nothing here knows a wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import msgspec

from .base import Codec, HttpRequest, TokenCounter
from .errors import transport_error
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
        """Providers sometimes quote the key they refused; it must not travel further."""
        key = self.settings.api_key
        if key and key in error.message:
            return msgspec.structs.replace(error, message=error.message.replace(key, "[REDACTED]"))
        return error

    def _send_args(self, req: HttpRequest) -> dict:
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
            yield _one(ErrorEvent(error=failure.error))
            return
        what = f"{http_req.method} {http_req.url.split('?', 1)[0]}"
        try:
            cm = self._client.stream(**self._send_args(http_req))
            response = await cm.__aenter__()
        except httpx.HTTPError as exc:
            yield _one(ErrorEvent(error=_transport_failure(exc, self.name, what)))
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
            if response.status_code >= 400 or ("json" in content_type and "event-stream" not in content_type):
                # an HTTP error, or a 200 whose body is an error object and not a stream
                body = await response.aread()
                status = response.status_code if response.status_code >= 400 else 200
                yield ErrorEvent(error=self._scrub(self.codec.decode_error(status, body, response.headers)))
                return
            decoder = self.codec.stream_decoder(request)
            async for chunk in response.aiter_bytes():
                for event in decoder.feed(chunk):
                    yield ErrorEvent(error=self._scrub(event.error)) if isinstance(event, ErrorEvent) else event
            for event in decoder.close():
                yield ErrorEvent(error=self._scrub(event.error)) if isinstance(event, ErrorEvent) else event
        except httpx.HTTPError as exc:
            yield ErrorEvent(error=_transport_failure(exc, self.name, what))

    async def complete(self, request: Request) -> Response:
        http_req = self.codec.encode(request, stream=False)
        return self.codec.decode_response(await self._call(http_req), request)

    async def count_tokens(self, request: Request) -> int:
        if not isinstance(self.codec, TokenCounter):
            raise ProviderFailure(
                ProviderError(
                    category="invalid_request",
                    message=f"{self.name} has no token-count operation",
                    provider=self.name,
                )
            )
        body = await self._call(self.codec.encode_count_tokens(request))
        return self.codec.decode_count_tokens(body)

    async def _call(self, http_req: HttpRequest) -> bytes:
        what = f"{http_req.method} {http_req.url.split('?', 1)[0]}"
        try:
            response = await self._client.request(**self._send_args(http_req))
        except httpx.HTTPError as exc:
            raise ProviderFailure(_transport_failure(exc, self.name, what)) from None
        if response.status_code >= 400:
            raise ProviderFailure(
                self._scrub(self.codec.decode_error(response.status_code, response.content, response.headers))
            )
        return response.content

    async def aclose(self) -> None:
        if self._own_client:
            await self._client.aclose()
