"""The superset internal format every provider adapter speaks.

Blocks, messages, requests, responses and stream events are msgspec Structs
with tagged unions (``type`` is the tag), so they encode to JSON and back
without loss; that is how the store persists them and how the daemon ships
events to subscribers.

Conventions that every adapter follows:

* Block indices: each response numbers its content blocks from 0 in the order
  they first appear (typically thinking 0, text 1, then one index per tool
  call). Every stream delta carries the index of the block it extends, and the
  numbering restarts with each response.
* Usage: ``input_tokens`` counts the whole prompt, cached reads and cache
  writes included; ``cached_tokens`` is the part read from a cache;
  ``output_tokens`` counts everything generated, thinking included;
  ``thinking_tokens`` is the thinking part of it. A figure the provider does
  not report is 0.
* Opaque provider state (Anthropic thinking signatures and redacted thinking,
  Gemini thoughtSignature, OpenAI encrypted reasoning) lives on the block
  together with the ``provider`` that issued it. It goes back to that provider
  unchanged and never to another one.
"""

from __future__ import annotations

import binascii
from typing import Any, Literal

import msgspec

from .ratelimits import Allowance, RateLimits

ThinkingLevel = Literal["none", "low", "med", "high"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("none", "low", "med", "high")

Role = Literal["user", "assistant", "tool"]

FinishReason = Literal["stop", "length", "tool_use", "content_filter", "error", "unknown"]

ErrorCategory = Literal[
    "auth",
    "rate_limit",
    "invalid_request",
    "context_length",
    "content_filter",
    "billing",
    "not_found",
    "server",
    "overloaded",
    "timeout",
    "network",
    "unknown",
    # not the provider's: an answer that does not match the prompt's schema
    # after one corrective retry (agents/_answer.py)
    "invalid_output",
]

RETRYABLE_CATEGORIES: frozenset[str] = frozenset(
    {"rate_limit", "overloaded", "server", "timeout", "network"}
)

# ---------------------------------------------------------------- blocks

# Every struct here is frozen and holds values, other structs and containers of
# them (JSON arguments, provider_data), never anything pointing back at itself:
# gc=False keeps them out of the cyclic collector, which otherwise walks every
# message of every agent's context and every kept event on a full collection.


class TextBlock(
    msgspec.Struct, tag="text", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    text: str
    # Gemini may sign a text part; the signature goes back on the same part.
    signature: str | None = None
    provider: str | None = None


class ThinkingBlock(
    msgspec.Struct, tag="thinking", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    """Model reasoning. For redacted thinking ``redacted`` is true, ``text`` is
    empty and ``signature`` holds the provider's opaque data."""

    text: str = ""
    signature: str | None = None
    redacted: bool = False
    provider: str | None = None
    # e.g. the OpenAI reasoning item id
    provider_data: dict[str, Any] | None = None


class ToolCallBlock(
    msgspec.Struct, tag="tool_call", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    id: str
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    # The model's argument text when it was not a JSON object; ``arguments`` is
    # then empty and the tool layer answers the model with an error result.
    raw_arguments: str | None = None
    signature: str | None = None
    provider: str | None = None
    provider_data: dict[str, Any] | None = None


class ToolResultBlock(
    msgspec.Struct, tag="tool_result", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    tool_call_id: str
    content: str
    is_error: bool = False
    # Gemini's functionResponse needs the function name, not only the id.
    name: str | None = None
    # pictures the tool returned (MCP): sent inside the result where the API
    # takes them, else named in a note line (``tool_result_images``)
    images: list[ImageBlock] = msgspec.field(default_factory=list)


class ImageBlock(
    msgspec.Struct, tag="image", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    media_type: str
    data: str | None = None  # base64
    url: str | None = None
    name: str | None = None  # the file's name, for an attached picture (shown in history)


class DocumentBlock(
    msgspec.Struct, tag="document", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    """A file the user attached that is not a picture: a PDF (base64 ``data``,
    ``media_type`` application/pdf), or a text file (``text``, media_type
    text/plain, text/markdown...). ``name`` is the file's name, shown to the
    model where the API takes one and in history."""

    media_type: str
    data: str | None = None  # base64, for binary documents (PDF)
    text: str | None = None  # the content of a text document
    url: str | None = None
    name: str | None = None


Block = TextBlock | ThinkingBlock | ToolCallBlock | ToolResultBlock | ImageBlock | DocumentBlock


class Message(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    role: Role
    content: list[Block]
    # who produced an assistant message, so replay and cost are exact per turn
    provider: str | None = None
    model: str | None = None
    thinking_level: ThinkingLevel | None = None
    provider_data: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        return [b for b in self.content if isinstance(b, ToolCallBlock)]


# ---------------------------------------------------------------- requests


class Tool(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    strict: bool = False


class ToolChoice(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """auto: the model decides; none: no tool; required: some tool; tool: the named one."""

    mode: Literal["auto", "none", "required", "tool"] = "auto"
    name: str | None = None

    def __post_init__(self) -> None:
        if (self.mode == "tool") != (self.name is not None):
            raise ValueError("ToolChoice: a name goes with mode 'tool' and only with it")


class ThinkingConfig(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    level: ThinkingLevel = "none"
    include_summary: bool = True


class Request(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    model: str
    messages: list[Message]
    system: list[TextBlock] = msgspec.field(default_factory=list)
    thinking: ThinkingConfig = msgspec.field(default_factory=ThinkingConfig)
    tools: list[Tool] = msgspec.field(default_factory=list)
    tool_choice: ToolChoice = msgspec.field(default_factory=ToolChoice)
    parallel_tool_calls: bool = True
    max_output_tokens: int = 4096
    response_schema: dict[str, Any] | None = None
    provider_data: dict[str, Any] | None = None


# ---------------------------------------------------------------- responses


class Usage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            thinking_tokens=self.thinking_tokens + other.thinking_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class Response(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    blocks: list[Block]
    finish_reason: FinishReason
    usage: Usage = msgspec.field(default_factory=Usage)
    model: str = ""
    provider: str | None = None
    provider_data: dict[str, Any] | None = None  # request id, opaque extras

    def to_message(self, *, thinking_level: ThinkingLevel | None = None) -> Message:
        return Message(
            role="assistant",
            content=list(self.blocks),
            provider=self.provider,
            model=self.model or None,
            thinking_level=thinking_level,
            provider_data=self.provider_data,
        )


class ProviderError(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    category: ErrorCategory
    message: str
    http_status: int | None = None
    provider_code: str | None = None
    retry_after: float | None = None  # seconds
    retryable: bool = False
    provider: str | None = None
    # the rate-limit facts of the HTTP answer that failed (a 429 or 529 above
    # all), when it had any: providers.ratelimits
    rate_limits: RateLimits | None = None

    def __str__(self) -> str:
        where = f"{self.provider} " if self.provider else ""
        status = f"HTTP {self.http_status} " if self.http_status else ""
        return f"{where}{status}{self.category}: {self.message}"


class ProviderFailure(Exception):
    """Raised by non-streaming calls; streaming calls yield an ErrorEvent instead."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(str(error))
        self.error = error


# ---------------------------------------------------------------- stream events


class StartEvent(
    msgspec.Struct, tag="start", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    model: str = ""
    provider_data: dict[str, Any] | None = None


class TextDelta(
    msgspec.Struct, tag="text_delta", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    index: int
    text: str
    signature: str | None = None


class ThinkingDelta(
    msgspec.Struct, tag="thinking_delta", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    """Text and signature pieces are concatenated in order; provider_data is merged."""

    index: int
    text: str = ""
    signature: str | None = None
    redacted: bool = False
    provider_data: dict[str, Any] | None = None


class ToolCallStart(
    msgspec.Struct, tag="tool_call_start", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    index: int
    id: str
    name: str
    signature: str | None = None
    provider_data: dict[str, Any] | None = None


class ToolCallDelta(
    msgspec.Struct, tag="tool_call_delta", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    index: int
    arguments: str  # a fragment of the JSON text


class ToolCallDone(
    msgspec.Struct, tag="tool_call_done", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    index: int


class DoneEvent(
    msgspec.Struct, tag="done", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    finish_reason: FinishReason
    usage: Usage = msgspec.field(default_factory=Usage)
    model: str | None = None
    provider_data: dict[str, Any] | None = None


class ErrorEvent(
    msgspec.Struct, tag="error", frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    error: ProviderError


StreamEvent = (
    StartEvent
    | TextDelta
    | ThinkingDelta
    | ToolCallStart
    | ToolCallDelta
    | ToolCallDone
    | DoneEvent
    | ErrorEvent
)

# ---------------------------------------------------------------- images in tool results

# Anthropic's limit for one image, the smallest of the APIs': a larger image
# would make the API refuse the request, and every later one, since history is
# replayed. The stored block keeps it whole.
MAX_TOOL_IMAGE_BASE64 = 5 * 1024 * 1024
# what every API that takes images names this way (MCP servers write both)
_MEDIA_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
_SHOWN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./+-_;=:?&%#~@")


def _shown(text: str, limit: int) -> str:
    """A tool's string as a note may quote it: safe characters, bounded."""
    out = "".join(c for c in text[: limit * 4] if c in _SHOWN)[:limit]
    return out or "?"


def _size(data: str) -> str:
    """The decoded size of base64 ``data``, for people."""
    n = len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def valid_base64(data: str) -> bool:
    """Strict base64 (no whitespace, padded): what every API's decoder takes."""
    if not data or len(data) % 4 or not data.isascii():
        return False
    try:
        binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return False
    return True


def tool_result_images(
    block: ToolResultBlock, media_types: frozenset[str], *, urls: bool = False
) -> tuple[list[ImageBlock], list[str]]:
    """The images of a tool result an API can take inside it, and a note line
    for each other one (so the model knows a picture was there).

    ``media_types``: the types the API accepts in a tool result (empty: it
    takes no image there); ``urls``: whether it takes an image by URL. An image
    over ``MAX_TOOL_IMAGE_BASE64`` or whose data is not base64 is a note: the
    API would refuse the whole request, and the next ones."""
    sent: list[ImageBlock] = []
    notes: list[str] = []
    for image in block.images:
        kind = image.media_type.strip().lower()
        kind = _MEDIA_ALIASES.get(kind, kind)
        shown = _shown(image.media_type, 60)
        if image.data is None and image.url:
            url = image.url
            web = url.startswith(("https://", "http://")) and len(url) <= 2048 and url.isprintable()
            if urls and web and " " not in url:
                sent.append(ImageBlock(media_type=kind, url=url))
            else:
                notes.append(
                    f"[the tool returned an image at {_shown(url, 200)}; "
                    "it cannot be sent to this API in a tool result]"
                )
            continue
        data = image.data or ""
        if not media_types:
            notes.append(
                f"[the tool returned an image ({shown}, {_size(data)}); "
                "this API cannot take images in a tool result]"
            )
        elif len(data) > MAX_TOOL_IMAGE_BASE64:
            notes.append(
                f"[the tool returned an image ({shown}, {_size(data)}), over the "
                f"{MAX_TOOL_IMAGE_BASE64 // (1024 * 1024)} MB of base64 an image may take; "
                "it was not sent]"
            )
        elif kind not in media_types:
            notes.append(
                f"[the tool returned an image of type {shown}, which this API does not "
                f"take (it takes {', '.join(sorted(media_types))}); it was not sent]"
            )
        elif not valid_base64(data):
            notes.append(
                f"[the tool returned an image ({shown}) whose data is not valid base64; "
                "it was not sent]"
            )
        elif kind == image.media_type:
            sent.append(image)
        else:
            sent.append(ImageBlock(media_type=kind, data=data))
    return sent, notes


def with_notes(text: str, notes: list[str]) -> str:
    """A tool result's text with the note lines after it."""
    return "\n".join([text, *notes]) if text else "\n".join(notes)


__all__ = [
    "MAX_TOOL_IMAGE_BASE64",
    "RETRYABLE_CATEGORIES",
    "THINKING_LEVELS",
    "Allowance",
    "Block",
    "DoneEvent",
    "ErrorCategory",
    "ErrorEvent",
    "FinishReason",
    "ImageBlock",
    "Message",
    "ProviderError",
    "ProviderFailure",
    "RateLimits",
    "Request",
    "Response",
    "Role",
    "StartEvent",
    "StreamEvent",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingConfig",
    "ThinkingDelta",
    "ThinkingLevel",
    "Tool",
    "ToolCallBlock",
    "ToolCallDelta",
    "ToolCallDone",
    "ToolCallStart",
    "ToolChoice",
    "ToolResultBlock",
    "Usage",
    "tool_result_images",
    "with_notes",
]
