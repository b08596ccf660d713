"""The Anthropic Messages codec: Request -> POST /v1/messages, bytes -> events.

Pure: no I/O, no clock. ``providers.http.HttpProvider`` moves the bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from ..base import HttpRequest
from ..catalog import Catalog, ModelEntry, default_catalog
from ..errors import error_from_http
from ..ratelimits import RateLimits, anthropic_limits
from ..secrets import scrub
from ..settings import ProviderSettings
from ..types import (
    RETRYABLE_CATEGORIES,
    Block,
    ProviderError,
    ProviderFailure,
    Request,
    Response,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from ._common import API_VERSION, UsageTally, WireUsage, finish_reason, stop_data
from ._encode import build_body
from ._stream import AnthropicStreamDecoder

_encode = msgspec.json.encode


class _Content(msgspec.Struct):
    # Any: blocks we do not model may reuse these names with other types
    type: Any = ""
    text: Any = None
    thinking: Any = None
    signature: Any = None
    data: Any = None
    id: Any = None
    name: Any = None
    input: Any = None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _WireMessage(msgspec.Struct):
    type: str = ""
    id: str | None = None
    model: str | None = None
    content: list[_Content] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stop_details: Any = None
    usage: WireUsage | None = None


class _Count(msgspec.Struct):
    # a count below zero or beyond any window is a broken answer, not a count
    input_tokens: Annotated[int, msgspec.Meta(ge=0, le=1 << 40)]


_decode_message = msgspec.json.Decoder(_WireMessage).decode
_decode_count = msgspec.json.Decoder(_Count).decode


class AnthropicCodec:
    """Codec and TokenCounter for the Anthropic Messages API."""

    def __init__(self, settings: ProviderSettings, catalog: Catalog | None = None) -> None:
        self.settings = settings
        self.provider = settings.name
        self.catalog = catalog or default_catalog()
        base = settings.base_url.rstrip("/")
        root = base if base.endswith("/v1") else f"{base}/v1"
        self._messages_url = f"{root}/messages"
        self._count_url = f"{root}/messages/count_tokens"

    # ------------------------------------------------------------ encoding

    def entry(self, model: str) -> ModelEntry:
        return self.catalog.entry_or_default(self.provider, model)[0]

    def _headers(self, accept: str) -> dict[str, str]:
        key = self.settings.require_key()
        headers = {
            "content-type": "application/json",
            "accept": accept,
            "anthropic-version": API_VERSION,
        }
        if key:
            headers["x-api-key"] = key
        for name, value in self.settings.extra_headers.items():
            headers[name.lower()] = value
        return headers

    def body(self, request: Request, *, stream: bool) -> dict[str, Any]:
        """The JSON body as a dict (what ``encode`` sends)."""
        return build_body(request, self.entry(request.model), self.provider, stream=stream)

    def encode(self, request: Request, *, stream: bool) -> HttpRequest:
        headers = self._headers("text/event-stream" if stream else "application/json")
        body = _encode(self.body(request, stream=stream))
        return HttpRequest("POST", self._messages_url, headers, body)

    def encode_count_tokens(self, request: Request) -> HttpRequest:
        headers = self._headers("application/json")
        body = build_body(
            request, self.entry(request.model), self.provider, stream=None, count_only=True
        )
        return HttpRequest("POST", self._count_url, headers, _encode(body))

    def decode_count_tokens(self, body: bytes) -> int:
        try:
            return _decode_count(body).input_tokens
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise ProviderFailure(self._bad_body("count_tokens answer", body)) from None

    # ------------------------------------------------------------ decoding

    def stream_decoder(self, request: Request) -> AnthropicStreamDecoder:
        return AnthropicStreamDecoder(self.provider)

    def decode_response(self, body: bytes, request: Request) -> Response:
        try:
            message = _decode_message(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise ProviderFailure(self._bad_body("response", body)) from None
        if message.type == "error":
            raise ProviderFailure(self.decode_error(200, body, {}))
        blocks: list[Block] = []
        model = message.model or ""
        for c in message.content or ():
            kind = c.type
            if kind == "text":
                if _str(c.text):
                    blocks.append(TextBlock(text=c.text))
            elif kind == "thinking":
                if _str(c.thinking) or _str(c.signature):
                    blocks.append(
                        ThinkingBlock(
                            text=_str(c.thinking),
                            signature=_str(c.signature) or None,
                            provider=self.provider,
                        )
                    )
            elif kind == "redacted_thinking":
                blocks.append(
                    ThinkingBlock(signature=_str(c.data), redacted=True, provider=self.provider)
                )
            elif kind == "tool_use":
                arguments = c.input if isinstance(c.input, dict) else {}
                blocks.append(ToolCallBlock(id=_str(c.id), name=_str(c.name), arguments=arguments))
            # server tools, their results and other blocks are not modelled
        tally = UsageTally()
        tally.update(message.usage)
        start = {"id": message.id} if message.id else {}
        data = {
            **start,
            **stop_data(message.stop_reason, message.stop_sequence, message.stop_details),
        }
        return Response(
            blocks=blocks,
            finish_reason=finish_reason(message.stop_reason),
            usage=tally.usage(),
            model=model,
            provider=self.provider,
            provider_data=data or None,
        )

    def decode_limits(
        self, headers: Mapping[str, str], body: bytes, *, now: float
    ) -> RateLimits | None:
        return anthropic_limits(headers, now=now)

    def decode_error(self, status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError:
        error = error_from_http(status, body, headers, provider=self.provider)
        category = error.category
        lower = error.message.lower()
        if category == "invalid_request" and "credit balance" in lower:
            category = "billing"  # "Your credit balance is too low to access the Anthropic API"
        elif category == "invalid_request" and "exceed context limit" in lower:
            # "input length and `max_tokens` exceed context limit: 188240 + 21333 >
            # 200000, decrease input length or `max_tokens` and try again": the
            # prompt fits alone, not with the output room asked for
            category = "context_length"
        elif error.provider_code == "overloaded_error" or status == 529:
            category = "overloaded"
        if category != error.category:
            error = msgspec.structs.replace(
                error, category=category, retryable=category in RETRYABLE_CATEGORIES
            )
        request_id = _header(headers, "request-id") or _request_id(body)
        if request_id:
            error = msgspec.structs.replace(
                error, message=f"{error.message} (request id {request_id})"
            )
        return error

    def _bad_body(self, what: str, body: bytes) -> ProviderError:
        # scrubbed before the cut, which could split a key; a 4 KiB window is plenty
        text = scrub(body[:4096].decode("utf-8", "replace"), self.settings.api_key)[:200]
        return ProviderError(
            category="server",
            message=f"unreadable {what} from {self.provider}: {text!r}",
            retryable=True,
            provider=self.provider,
        )


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        for k, v in headers.items():
            if k.lower() == name:
                return v
    return value


class _ErrorBody(msgspec.Struct):
    request_id: str | None = None


def _request_id(body: bytes) -> str | None:
    try:
        return msgspec.json.decode(body, type=_ErrorBody).request_id
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
