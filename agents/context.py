"""Make a replayed history safe to send to a given provider.

Opaque state (thinking signatures, redacted thinking, encrypted reasoning,
Gemini thought signatures) belongs to the provider that issued it. After a
model switch the history holds blocks from several providers: another
provider's thinking is dropped and its signatures stripped, never sent.
"""

from __future__ import annotations

import msgspec

from providers.types import Message, TextBlock, ThinkingBlock, ToolCallBlock


def for_provider(messages: list[Message], provider: str) -> list[Message]:
    out: list[Message] = []
    for msg in messages:
        if msg.role != "assistant" or msg.provider in (None, provider):
            out.append(msg)
            continue
        content = []
        for block in msg.content:
            if isinstance(block, ThinkingBlock):
                continue
            if isinstance(block, TextBlock | ToolCallBlock) and (block.signature or block.provider):
                block = msgspec.structs.replace(block, signature=None, provider=None)
                if isinstance(block, ToolCallBlock):
                    block = msgspec.structs.replace(block, provider_data=None)
            content.append(block)
        if content:
            out.append(msgspec.structs.replace(msg, content=content, provider_data=None))
    return out
