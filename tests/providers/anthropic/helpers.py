"""Shared bits of the Anthropic adapter tests."""

from __future__ import annotations

import json
from pathlib import Path

from providers.anthropic import AnthropicCodec
from providers.settings import ProviderSettings, settings_for
from providers.types import StreamEvent

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "recorded" / "anthropic"
KEY = "sk-ant-test-0123456789"


def settings(base_url: str = "https://api.anthropic.com", **kw: object) -> ProviderSettings:
    return settings_for("anthropic", env={"ANTHROPIC_API_KEY": KEY}, base_url=base_url, **kw)  # type: ignore[arg-type]


def codec(base_url: str = "https://api.anthropic.com") -> AnthropicCodec:
    return AnthropicCodec(settings(base_url))


def payloads(name: str) -> list[bytes]:
    """The SSE data payloads of a recorded stream, in order."""
    return [line.strip() for line in (FIXTURES / name).read_bytes().splitlines() if line.strip()]


def frame(payloads: list[bytes], newline: bytes = b"\n", named: bool = True) -> bytes:
    """Rebuild the SSE body: ``event: <type>`` (as the API names events) and ``data:``."""
    out = bytearray()
    for p in payloads:
        if named:
            kind = json.loads(p)["type"]
            out += b"event: " + kind.encode() + newline
        out += b"data: " + p + newline + newline
    return bytes(out)


def messages_of(name: str) -> list[list[bytes]]:
    """A recording may hold several responses one after another (multi-step
    runs): split it at each message_stop."""
    out: list[list[bytes]] = [[]]
    for p in payloads(name):
        out[-1].append(p)
        if p == b'{"type":"message_stop"}':
            out.append([])
    return [m for m in out if m]


def decode(body: bytes, chunks: list[int] | None = None) -> list[StreamEvent]:
    """Feed a body to a fresh decoder, whole or cut at the given offsets."""
    dec = codec().stream_decoder(None)  # type: ignore[arg-type]
    events: list[StreamEvent] = []
    if chunks is None:
        events += dec.feed(body)
    else:
        start = 0
        for cut in [*chunks, len(body)]:
            events += dec.feed(body[start:cut])
            start = cut
    events += dec.close()
    return events


def recorded_streams() -> list[str]:
    return sorted(p.name for p in FIXTURES.glob("*.chunks.txt"))


def recorded_bodies() -> list[str]:
    return sorted(p.name for p in FIXTURES.glob("*.json"))
