"""A tool call cut off by the output limit goes back as valid JSON (issue 14, item 9).

A reply that hits the output limit inside a tool call leaves arguments that
do not parse (``ToolCallBlock.raw_arguments``). Sent back as they are, servers
answer 400 or 500 on every retry. Every encoder replays such a call with an
empty JSON object; the block itself (the stored history) keeps the raw text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers.registry import codec_for
from providers.settings import settings_for
from providers.types import Message, Request, TextBlock, ToolCallBlock, ToolResultBlock

ENV = {"ANTHROPIC_API_KEY": "k-a", "OPENAI_API_KEY": "k-o", "GEMINI_API_KEY": "k-g"}
CUT = [
    '{"path": "/etc/hos',  # cut inside a string
    '{"path": "/etc/hostname", "lines": [1, 2',  # inside an array
    '{"path"',  # after a key
    "{",
    '{"a": "\\u00',  # inside an escape
]
# (provider, api, model)
APIS = [
    ("anthropic", "messages", "claude-sonnet-4-5"),
    ("openai", "chat", "gpt-4o"),
    ("openai", "responses", "gpt-5"),
    ("google", "generate_content", "gemini-2.5-flash"),
]


def conversation(raw: str, provider: str, model: str) -> tuple[Request, ToolCallBlock]:
    cut = ToolCallBlock(id="call_cut", name="file_read", raw_arguments=raw)
    good = ToolCallBlock(id="call_ok", name="file_read", arguments={"path": "/tmp/x"})
    request = Request(
        model=model,
        messages=[
            Message(role="user", content=[TextBlock(text="read two files")]),
            Message(role="assistant", provider=provider, content=[good, cut]),
            Message(
                role="tool",
                content=[
                    ToolResultBlock(tool_call_id="call_ok", content="x", name="file_read"),
                    ToolResultBlock(
                        tool_call_id="call_cut", content="cut off", is_error=True, name="file_read"
                    ),
                ],
            ),
        ],
    )
    return request, cut


def sent_arguments(body: dict[str, Any], api: str) -> list[Any]:
    """Each replayed call's arguments as the body carries them, in order:
    parsed from the string for OpenAI (which sends a JSON string), as is for
    Anthropic and Gemini (a JSON object in the body)."""
    if api == "chat":
        calls = [c for m in body["messages"] for c in m.get("tool_calls") or []]
        return [json.loads(c["function"]["arguments"]) for c in calls]
    if api == "responses":
        items = [i for i in body["input"] if i.get("type") == "function_call"]
        return [json.loads(i["arguments"]) for i in items]
    if api == "messages":
        blocks = [b for m in body["messages"] for b in m["content"] if isinstance(b, dict)]
        return [b["input"] for b in blocks if b.get("type") == "tool_use"]
    parts = [p for c in body["contents"] for p in c["parts"]]
    return [p["functionCall"]["args"] for p in parts if "functionCall" in p]


@pytest.mark.parametrize(("provider", "api", "model"), APIS)
@pytest.mark.parametrize("raw", CUT)
def test_a_cut_call_is_replayed_as_an_empty_object(provider, api, model, raw):
    request, cut = conversation(raw, provider, model)
    codec = codec_for(settings_for(provider, env=ENV, api=api))
    body = json.loads(codec.encode(request, stream=True).body)  # the bytes sent: valid JSON
    assert sent_arguments(body, api) == [{"path": "/tmp/x"}, {}]
    # the history keeps what the model wrote
    assert cut.raw_arguments == raw and cut.arguments == {}
