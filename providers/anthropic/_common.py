"""Pieces of the Messages wire shared by the request encoder and the decoders."""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import classify, provider_error
from ..types import FinishReason, ProviderError, Usage

PROVIDER = "anthropic"
API_VERSION = "2023-06-01"

STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    # the context window filled up before max_tokens: the answer was cut short all the same
    "model_context_window_exceeded": "length",
    "tool_use": "tool_use",
    "refusal": "content_filter",
    # pause_turn (a long server-tool turn to be resumed) and anything new
}


def finish_reason(stop_reason: str | None) -> FinishReason:
    if stop_reason is None:
        return "unknown"
    return STOP_REASONS.get(stop_reason, "unknown")


def stop_data(reason: str | None, sequence: str | None, details: Any) -> dict[str, Any]:
    """How the message stopped, as sent (for provider_data): the fields present."""
    data: dict[str, Any] = {}
    if reason is not None:
        data["stop_reason"] = reason
    if sequence is not None:
        data["stop_sequence"] = sequence
    if details is not None:
        data["stop_details"] = details
    return data


class WireUsage(msgspec.Struct):
    """``usage`` of message_start / message_delta / a whole message. In a
    message_delta every field is cumulative and a missing one keeps its value."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    output_tokens_details: dict[str, Any] | None = None


class UsageTally:
    """Folds the usage objects of one stream; the last value of each field wins."""

    __slots__ = ("cache_creation", "cache_read", "input", "output", "thinking")

    def __init__(self) -> None:
        self.input = 0
        self.output = 0
        self.cache_read = 0
        self.cache_creation = 0
        self.thinking = 0

    def update(self, u: WireUsage | None) -> None:
        if u is None:
            return
        if u.input_tokens is not None:
            self.input = u.input_tokens
        if u.output_tokens is not None:
            self.output = u.output_tokens
        if u.cache_read_input_tokens is not None:
            self.cache_read = u.cache_read_input_tokens
        if u.cache_creation_input_tokens is not None:
            self.cache_creation = u.cache_creation_input_tokens
        details = u.output_tokens_details
        if details:
            thinking = details.get("thinking_tokens")
            if isinstance(thinking, int):
                self.thinking = thinking

    def usage(self) -> Usage:
        # Anthropic's input_tokens leaves out the cached part and the part
        # written to the cache; ours counts the whole prompt.
        return Usage(
            input_tokens=self.input + self.cache_read + self.cache_creation,
            output_tokens=self.output,
            thinking_tokens=self.thinking,
            cached_tokens=self.cache_read,
            cache_write_tokens=self.cache_creation,
        )


def stream_error(kind: str | None, message: str | None, provider: str = PROVIDER) -> ProviderError:
    """An ``error`` event inside a 200 stream (overloaded_error, api_error...)."""
    text = message or f"{kind or 'unknown'} error in the stream"
    category = classify(status=None, message=text, kind=kind)
    return provider_error(
        "server" if category == "unknown" else category, text, provider_code=kind, provider=provider
    )
