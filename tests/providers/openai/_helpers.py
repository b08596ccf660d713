"""Shared bits of the OpenAI adapter tests: recorded files and SSE framing."""

from __future__ import annotations

import json
from pathlib import Path

from providers.settings import settings_for
from providers.types import Message, Request, StreamEvent, TextBlock

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "recorded"
FOLDERS = ("openai", "deepseek", "xai", "openai-compatible")
KEY = "sk-test-not-a-real-key-0123456789"

ERROR_FILES = {
    "openai/gpt-image-response-format-error.json",
    "openai/openai-error.1.json",
    "openai/reasoning-model-legacy-parameter-error.json",
    "openai/reasoning-model-temperature-error.json",
}


def all_files() -> list[str]:
    return sorted(
        f"{folder}/{p.name}"
        for folder in FOLDERS
        for p in (RECORDED / folder).iterdir()
        if p.suffix in (".txt", ".json")
    )


def read(name: str) -> bytes:
    return (RECORDED / name).read_bytes()


def is_responses(name: str) -> bool:
    """Responses API payloads name their event type or object 'response'."""
    raw = read(name)
    return any(
        marker in raw
        for marker in (
            b'"type":"response.',
            b'"object": "response"',
            b'"object":"response"',
            b'"response":{',
        )
    )


def lines(name: str) -> list[bytes]:
    return [line for line in read(name).splitlines() if line.strip()]


def chat_sse(name: str, *, done: bool = True) -> bytes:
    body = b"".join(b"data: " + line + b"\n\n" for line in lines(name))
    return body + (b"data: [DONE]\n\n" if done else b"")


def _type(line: bytes) -> str | None:
    try:
        kind = json.loads(line).get("type")
    except ValueError:
        return None
    return kind if isinstance(kind, str) else None


def responses_segments(name: str) -> list[bytes]:
    """The SSE body of each response in a Responses recording (some hold several turns)."""
    segments: list[list[bytes]] = []
    for line in lines(name):
        kind = _type(line)
        if kind == "response.created" or not segments:
            segments.append([])
        head = f"event: {kind}\n".encode() if kind else b""
        segments[-1].append(head + b"data: " + line + b"\n\n")
    return [b"".join(s) for s in segments]


def completed_payloads(name: str) -> list[dict]:
    """The final response object of each turn of a Responses recording."""
    out = []
    for line in lines(name):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if data.get("type") in ("response.completed", "response.incomplete"):
            out.append(data["response"])
    return out


def request(model: str = "gpt-4o", text: str = "hi") -> Request:
    return Request(model=model, messages=[Message(role="user", content=[TextBlock(text=text)])])


def openai_settings(base_url: str | None = None, **kw: object):
    return settings_for("openai", env={"OPENAI_API_KEY": KEY}, base_url=base_url, **kw)


def feed_all(decoder, body: bytes, sizes: list[int] | None = None) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    if sizes is None:
        events += decoder.feed(body)
    else:
        pos = 0
        for size in sizes:
            events += decoder.feed(body[pos : pos + size])
            pos += size
        events += decoder.feed(body[pos:])
    events += decoder.close()
    return events
