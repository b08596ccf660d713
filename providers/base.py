"""The two halves of every adapter: a pure Codec, and the Provider the agents call.

A Codec turns a Request into HTTP bytes and HTTP bytes into StreamEvents or a
Response, with no I/O. ``providers.http.HttpProvider`` is the thin shell that
moves those bytes: streamed calls over ``providers.h1`` (a lean HTTP/1.1 client
that pays per read, not per layer), whole calls over httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import NamedTuple, Protocol, runtime_checkable

from .ratelimits import OnLimits, RateLimits
from .types import ProviderError, Request, Response, StreamEvent


class HttpRequest(NamedTuple):
    method: str
    url: str
    headers: dict[str, str]
    body: bytes


class StreamDecoder(Protocol):
    """Decodes one streamed HTTP body. Bytes may arrive in any chunking."""

    def feed(self, data: bytes) -> list[StreamEvent]: ...

    def close(self) -> list[StreamEvent]:
        """End of body. Must end the stream with a DoneEvent or an ErrorEvent:
        a body that stopped before the provider's final event yields an
        ErrorEvent (category network), never silence."""
        ...


class Codec(Protocol):
    """One wire API, pure: a Request to the HTTP request that asks it, and the
    HTTP answer (streamed, whole or an error) to StreamEvents, a Response or a
    ProviderError. No I/O and no clock: HttpProvider moves the bytes. One per
    adapter (ChatCodec, ResponsesCodec, AnthropicCodec, GeminiCodec)."""

    provider: str

    def encode(self, request: Request, *, stream: bool) -> HttpRequest:
        """Raise ProviderFailure (category auth) when the API key is missing."""
        ...

    def stream_decoder(self, request: Request) -> StreamDecoder: ...

    def decode_response(self, body: bytes, request: Request) -> Response:
        """The whole JSON answer. Also read when a streaming request gets one
        (a proxy or server that ignored ``stream: true``)."""
        ...

    def decode_error(
        self, status: int, body: bytes, headers: Mapping[str, str]
    ) -> ProviderError: ...

    def decode_limits(
        self, headers: Mapping[str, str], body: bytes, *, now: float
    ) -> RateLimits | None:
        """The rate-limit facts of an answer (any status): its headers, and for an
        error its body (b"" otherwise). ``now``: time.time() when the head came,
        for resets given as dates. None: the answer said nothing about limits."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Codecs whose provider can count a request's input tokens."""

    def encode_count_tokens(self, request: Request) -> HttpRequest: ...

    def decode_count_tokens(self, body: bytes) -> int: ...


class Provider(Protocol):
    """What the agents layer holds: one per provider service."""

    name: str

    def stream(
        self, request: Request, *, on_limits: OnLimits | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """``async with provider.stream(req) as events: async for ev in events``.

        Failures never raise: they arrive as a final ErrorEvent. Leaving the
        block closes the HTTP response at once (that is how a turn is cancelled);
        a response read to its end leaves its connection to the next call.
        The read timeout's deadline encloses the block: after a timeout's
        ErrorEvent, leave it (a checkpoint in it is cancelled, and absorbed).

        ``on_limits``: called once with the answer's rate-limit facts
        (providers.ratelimits), if it had any: for a success before the block
        is entered, for an HTTP error before its ErrorEvent (whose error
        carries them too). Not called when no answer came. It must not raise
        or block: it runs inside the exchange.
        """
        ...

    async def complete(self, request: Request, *, on_limits: OnLimits | None = None) -> Response:
        """Non-streaming call; raises ProviderFailure (an HTTP error's carries
        the rate limits, as ``on_limits`` gets them: see ``stream``)."""
        ...

    async def count_tokens(self, request: Request, *, on_limits: OnLimits | None = None) -> int:
        """The input tokens of ``request``; ``on_limits`` as for ``complete``."""
        ...

    async def aclose(self) -> None: ...
