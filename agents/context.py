"""Make a replayed history safe to send to a given provider.

Opaque state (thinking signatures, redacted thinking, encrypted reasoning,
Gemini thought signatures) belongs to the provider that issued it. After a
model switch the history holds blocks from several providers: another
provider's thinking is dropped and its signatures stripped, never sent.

Replies cut off while reasoning end in a thinking block. The stored history
keeps it; the replay drops it, because no API accepts reasoning that nothing
follows (Responses: "reasoning was provided without its required following
item"; Anthropic: "the final block in an assistant message cannot be
thinking").

Some APIs constrain thinking within a tool loop (see ``step_thinking``).

A tool result too large for the window is cut in the replay (``bound_results``).

Consecutive user messages (a compaction summary, then the next prompt) are
sent as one: no API objects to that, and some refuse two user turns in a row.

A turn's calls do not convert the whole history each time: ``replay_into``
continues a conversion with what was appended (agents/_prefix.py keeps it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import msgspec

from providers.tokens import CHARS_PER_TOKEN
from providers.types import (
    Message,
    TextBlock,
    ThinkingBlock,
    ThinkingLevel,
    ToolCallBlock,
    ToolResultBlock,
)


def for_provider(messages: list[Message], provider: str) -> list[Message]:
    return replay_into([], messages, provider)[0]


def replay_into(
    out: list[Message], messages: Iterable[Message], provider: str, room: int | None = None
) -> tuple[list[Message], int]:
    """``for_provider`` continued: ``messages``, which follow the ones ``out``
    was made from, added to ``out`` as converting them all at once would add
    them, with tool results cut to ``room`` characters when given
    (``bound_results``' rule).

    Continuing gives what the whole would because the conversion is a left
    fold that only ever looks at, and replaces, the last element so far (a
    user message after a user message is merged into it), and the cut is a
    rule of each tool message alone. ``out`` may be a list already handed out
    in a request: it is only appended to, never changed in place (a merge
    into an element it held already copies the list first). Returns the list
    (``out`` or that copy) and the index of its first new or changed element.
    """
    first = len(out)
    for msg in messages:
        if msg.role != "assistant":
            if msg.role == "user" and out and out[-1].role == "user":
                merged = msgspec.structs.replace(out[-1], content=[*out[-1].content, *msg.content])
                if len(out) == first:  # made before: maybe in a request sent, so not changed
                    out = out[:-1]
                    first -= 1
                    out.append(merged)
                else:
                    out[-1] = merged
            elif room is not None and msg.role == "tool":
                out.append(_bound_message(msg, room))
            else:
                out.append(msg)
            continue
        content = msg.content
        if msg.provider not in (None, provider):
            content = _foreign(content)
        # trailing reasoning: what a reply cut off while thinking leaves
        end = len(content)
        while end and isinstance(content[end - 1], ThinkingBlock):
            end -= 1
        if not end:
            continue
        if end < len(content):
            content = content[:end]
        if content is msg.content:
            out.append(msg)
        else:
            out.append(
                msgspec.structs.replace(
                    msg,
                    content=content,
                    provider_data=msg.provider_data if msg.provider in (None, provider) else None,
                )
            )
    return out, first


def _foreign(content: list) -> list:
    """Another provider's blocks: its thinking dropped, its signatures stripped."""
    kept = []
    for block in content:
        if isinstance(block, ThinkingBlock):
            continue
        if isinstance(block, TextBlock | ToolCallBlock) and (block.signature or block.provider):
            block = msgspec.structs.replace(block, signature=None, provider=None)
            if isinstance(block, ToolCallBlock):
                block = msgspec.structs.replace(block, provider_data=None)
        kept.append(block)
    return kept


class StepThinking(NamedTuple):
    level: ThinkingLevel
    # why the level was lowered, for a notice; None when it was not
    reason: str | None


def step_thinking(
    messages: list[Message], *, provider: str, api: str, level: ThinkingLevel
) -> StepThinking:
    """The thinking level one model call of a tool loop may use.

    Anthropic (Messages API) with thinking on requires the assistant message
    whose tool calls the request answers to start with that provider's own
    signed thinking block (400 "Expected `thinking` or `redacted_thinking`,
    but found `tool_use`"). A loop that began on another provider, or with
    thinking off, has none: the step runs without thinking, and the next turn
    (a new user message) thinks again. ``messages`` is the replay as sent
    (after ``for_provider``).
    """
    if api != "messages" or level == "none":
        return StepThinking(level, None)
    last = _answered_assistant(messages)
    if last is None or not last.tool_calls:
        return StepThinking(level, None)
    first = last.content[0]
    if isinstance(first, ThinkingBlock) and first.signature and first.provider == provider:
        return StepThinking(level, None)
    made_by = f"{last.provider}/{last.model}" if last.provider and last.model else "another model"
    return StepThinking(
        "none",
        f"thinking is off until this tool loop ends: its last step was made by {made_by} "
        "without Anthropic thinking, and Anthropic only continues a tool loop with "
        "thinking from its own thinking block",
    )


def _answered_assistant(messages: list[Message]) -> Message | None:
    """The assistant message whose tool calls the request's trailing tool
    results answer, if it ends inside a tool loop. A prompt after a turn that
    stopped inside its loop (tool limit, cancel at a boundary) counts: the
    Messages API sends the results and the prompt as one user message."""
    i = len(messages) - 1
    results = False
    while i >= 0 and messages[i].role in ("tool", "user"):
        results = results or messages[i].role == "tool"
        i -= 1
    if not results or i < 0 or messages[i].role != "assistant":
        return None
    return messages[i]


def bound_results(messages: list[Message], max_tokens: int) -> list[Message]:
    """Tool results longer than ``max_tokens`` cut in the replay (head and
    tail kept, with a note saying how much went); the stored row keeps all."""
    room = result_room(max_tokens)
    out: list[Message] | None = None
    for i, msg in enumerate(messages):
        if msg.role != "tool":
            continue
        bounded = _bound_message(msg, room)
        if bounded is msg:
            continue
        if out is None:
            out = list(messages)
        out[i] = bounded
    return messages if out is None else out


def result_room(max_tokens: int) -> int:
    """The characters a tool result may keep in the replay."""
    return max(200, max_tokens * CHARS_PER_TOKEN)


def _bound_message(msg: Message, room: int) -> Message:
    if not any(isinstance(b, ToolResultBlock) and len(b.content) > room for b in msg.content):
        return msg
    return msgspec.structs.replace(
        msg,
        content=[_bounded(b, room) if isinstance(b, ToolResultBlock) else b for b in msg.content],
    )


def _bounded(block: ToolResultBlock, room: int) -> ToolResultBlock:
    if len(block.content) <= room:
        return block
    text = block.content
    head = room * 3 // 4
    tail = room - head
    cut = len(text) - head - tail
    note = (
        f"\n[... {cut:,} of {len(text):,} characters cut from this tool result to fit the "
        "context window; the whole output is kept in the agent's history ...]\n"
    )
    return msgspec.structs.replace(block, content=text[:head] + note + text[-tail:])
