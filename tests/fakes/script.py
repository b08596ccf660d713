"""What the fake provider answers, and how: one Reply per request.

A Reply is provider-neutral: the same script is rendered in the wire format of
whichever API the request came in on (tests/fakes/wire/). Faults describe how
the answer goes wrong on the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    name: str
    # a dict is sent as JSON; a str is sent verbatim (to fake invalid JSON)
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # None: the wire makes one up (Gemini sends none)
    signature: str | None = None  # Gemini thoughtSignature on the functionCall part


@dataclass
class Usage:
    input: int = 12
    output: int = 34
    thinking: int = 0
    cached: int = 0
    cache_write: int = 0


# ------------------------------------------------------------------ faults


@dataclass
class HttpError:
    """Answer with this status. ``body`` None: the wire's own error body with ``message``."""

    status: int
    message: str = "scripted failure"
    code: str | None = None  # the provider's error type/code/status word
    body: bytes | dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Disconnect:
    """Close the connection after this many body bytes."""

    after_bytes: int = 0


@dataclass
class Stall:
    """Send this many body bytes, then nothing for ``seconds`` (None: until the client leaves)."""

    after_bytes: int = 0
    seconds: float | None = None


@dataclass
class NeverAnswer:
    """Read the request and never send a status line."""


@dataclass
class Malformed:
    """Insert ``garbage`` before the stream event numbered ``before_event``."""

    garbage: bytes = b"data: {not json\n\n"
    before_event: int = 1


@dataclass
class Raw:
    """Send exactly this body (with this status and content type) whatever the wire."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RawStream:
    """Send these pre-rendered SSE events whatever the wire, as a chunked body:
    one HTTP chunk and one socket write per event, as real providers flush."""

    events: list[bytes]
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)


Fault = HttpError | Disconnect | Stall | NeverAnswer | Malformed | Raw | RawStream


@dataclass
class Reply:
    text: str = ""
    thinking: str = ""
    thinking_signature: str | None = None  # Anthropic signature / Gemini thought signature
    redacted_thinking: str | None = None  # opaque data of a redacted thinking block
    text_signature: str | None = None  # Gemini signature on the text part
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    # canonical finish reason: stop, length, tool_use, content_filter, error, unknown.
    # None: tool_use when there are tool calls, else stop.
    finish: str | None = None
    model: str | None = None  # the model the answer reports; None: the requested one
    # how
    stream: bool | None = None  # None: as the request asks
    pieces: int = 3  # deltas the text and thinking are split into
    chunk_size: int | None = None  # bytes per write; None: one write per event
    delay: float = 0.0  # seconds before each write
    fault: Fault | None = None
    # extra response headers (rate limits...), sent with the answer or with its
    # HttpError fault (whose own headers win); a wire's own headers are overridden
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def finish_reason(self) -> str:
        if self.finish is not None:
            return self.finish
        return "tool_use" if self.tool_calls else "stop"


def split(text: str, pieces: int) -> list[str]:
    """Cut text into up to ``pieces`` non-empty parts (a wire sends one delta each)."""
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]
