"""Message builders for the store tests: realistic, with the awkward parts
(signatures, redacted thinking, provider data, key order, unicode)."""

from __future__ import annotations

import msgspec

from providers.types import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from store import Store

encode = msgspec.json.encode


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def assistant(
    text: str,
    *,
    provider: str = "anthropic",
    model: str = "claude-test",
    tool_calls: int = 0,
    tag: str = "",
) -> Message:
    blocks: list = [
        ThinkingBlock(
            text=f"thinking about {text!r} ✓",
            signature=f"EqQBCkgIARABGAIiQL{tag}+/=sig{len(text)}",
            provider=provider,
        ),
        ThinkingBlock(redacted=True, signature=f"redacted-{tag}-opaque==", provider=provider),
        TextBlock(text=text),
    ]
    for i in range(tool_calls):
        blocks.append(
            ToolCallBlock(
                id=f"call_{tag}_{i}",
                name="bash",
                # key order on purpose: not sorted, long before short (JSONB would reorder)
                arguments={
                    "zeta_command": f"echo {i}",
                    "a": [1, 2.5, None],
                    "nested": {"y": 1, "x": "é"},
                },
                signature="gemini-thought-sig" if provider == "google" else None,
                provider=provider,
                provider_data={"item_id": f"fc_{tag}_{i}", "status": "completed"},
            )
        )
    return Message(
        role="assistant",
        content=blocks,
        provider=provider,
        model=model,
        thinking_level="high",
        provider_data={"request_id": f"req_{tag}", "zz_last": True, "a_first": 1},
    )


def tool_results(calls: Message) -> Message:
    return Message(
        role="tool",
        content=[
            ToolResultBlock(
                tool_call_id=b.id, content=f"out of {b.id}\n", name=b.name, is_error=i == 1
            )
            for i, b in enumerate(calls.tool_calls)
        ],
    )


def image_user() -> Message:
    return Message(
        role="user",
        content=[
            TextBlock(text="what is this?"),
            ImageBlock(media_type="image/png", data="iVBORw0KGgo="),
        ],
    )


def turn(
    store: Store, uuid: str, text: str, *, tools: int = 0, tag: str = ""
) -> tuple[list[Message], int]:
    """Append one whole turn; returns its Messages (as the agent holds them) and its first row id."""
    u = user(text)
    first = store.append_user(uuid, u).id
    out = [u]
    a = assistant(f"answer to {text}", tool_calls=tools, tag=tag or text)
    store.append_assistant(uuid, a, finish_reason="tool_use" if tools else "stop")
    out.append(a)
    if tools:
        r = tool_results(a)
        store.append_tool_results(uuid, r)
        out.append(r)
        final = assistant(f"done with {text}", tag=(tag or text) + "-final")
        store.append_assistant(uuid, final, finish_reason="stop")
        out.append(final)
    return out, first


def same(got: list[Message], want: list[Message]) -> None:
    """Exact: the msgspec bytes of every message, in order."""
    assert [encode(m) for m in got] == [encode(m) for m in want]
