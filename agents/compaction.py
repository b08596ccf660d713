"""When to compact a context, what to keep, and how to ask for the summary.

Pure: sizes in, decisions out. The compactor (compactor.py) does the I/O.

A compaction replaces a *prefix* of the replayed context by a summary. The
cut is made only just before a user prompt, so a tool call is never split
from its result and every kept message is replayed exactly as stored (its
signatures and provider data intact); the current turn is never cut. The
stored history stays whole: the summary is a ``compaction`` row covering the
prefix (store/_replay.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from providers.catalog import ModelLimits
from providers.tokens import CHARS_PER_TOKEN, estimate_text
from providers.types import (
    DocumentBlock,
    ImageBlock,
    Message,
    ProviderError,
    Request,
    TextBlock,
    ThinkingBlock,
    ThinkingConfig,
    ToolCallBlock,
    ToolResultBlock,
)

# the kept part after a compaction, as a share of what the context may hold:
# low enough that a long conversation compacts every few dozen turns, not every turn
KEEP_SHARE = 0.4
SUMMARY_SHARE = 0.15  # the summary's output cap, same base
MIN_SUMMARY_TOKENS = 128
_RESULT_CHARS = 2000  # characters of one tool result a transcript shows
_ARGS_CHARS = 1000

SUMMARY_SYSTEM = (
    "You compact the history of a long-running agent conversation so the agent can "
    "continue without its full context. Write a faithful, dense summary of the "
    "conversation you are given: the user's goals and instructions, decisions made, "
    "facts learned, files and commands involved, tool results that matter, open "
    "questions and what was about to happen next. Keep names, paths, numbers and "
    "identifiers exactly. Write it for the agent itself, in plain text, without "
    "preamble. Do not call tools."
)


@dataclass(frozen=True)
class Budget:
    """How many input tokens a request may hold on a model."""

    window: int
    output: int  # tokens reserved for the answer (the request's max output)
    compact_at: float

    @property
    def limit(self) -> int:
        """Input tokens above which the context is compacted before the call."""
        return max(0, min(int(self.window * self.compact_at), self.window - self.output))

    def keep(self, fixed: int) -> int:
        """Tokens of recent messages a compaction keeps as they are."""
        return max(0, int((self.limit - fixed) * KEEP_SHARE))

    def summary_cap(self, fixed: int) -> int:
        return max(MIN_SUMMARY_TOKENS, min(self.output, int((self.limit - fixed) * SUMMARY_SHARE)))


# the window a context-length refusal names: Anthropic "... > 200000 maximum",
# "... exceed context limit: 190000 + 20000 > 200000"; OpenAI "maximum context
# length is 128000 tokens"; Gemini "maximum number of tokens allowed (1048576)"
_WINDOW_IN_ERROR = (
    re.compile(r"maximum context length is (\d[\d,]*)"),
    re.compile(r"> ?(\d[\d,]*)(?: tokens)? maximum"),
    re.compile(r"context limit: [\d, +]+> ?(\d[\d,]*)"),
    re.compile(r"tokens allowed \((\d[\d,]*)\)"),
    re.compile(r"context window of (\d[\d,]*)"),
)


def window_from_error(message: str) -> int | None:
    """The context window a provider's context-length refusal states, if it does."""
    for pattern in _WINDOW_IN_ERROR:
        found = pattern.search(message)
        if found:
            value = int(found.group(1).replace(",", ""))
            if value >= 256:
                return value
    return None


# a summarizing model not heard from yet: assume its tokenizer is denser than the estimate
UNCALIBRATED_RATIO = 1.5


def summary_parts(budget: Budget, ratio: float) -> tuple[int, int]:
    """(raw estimate tokens of conversation per summary call, the summary's
    output cap) on a summarizing model with this budget, whose tokens are
    ``ratio`` times the raw estimate."""
    fixed = estimate_text(SUMMARY_SYSTEM) + 200
    cap = budget.summary_cap(fixed)
    room = max(256, int((budget.limit - fixed - cap * 2) / ratio))
    return room, cap


def too_long(error: ProviderError, provider: str, model: str, limits: ModelLimits) -> ProviderError:
    """A context-length refusal compaction could not cure, with what to do."""
    hint = (
        f"{error.message} — the context did not fit {provider}/{model}'s window "
        f"({limits.context_window:,} tokens, from the {limits.source}) "
        "and compacting did not make it fit: set providers."
        f"{provider}.models.{model}.context_window in config.json if that is wrong, "
        "or run ikictl compact AGENT --keep 0, ikictl clear AGENT, "
        "or switch to a model with a larger window"
    )
    return msgspec.structs.replace(error, message=hint)


def is_prompt(msg: Message) -> bool:
    """A message a turn (or a mail) begins with: where a cut may fall."""
    return msg.role == "user"


def choose_cut(
    messages: Sequence[Message],
    sizes: Sequence[int],
    *,
    first_is_summary: bool,
    protect_from: int,
    keep_tokens: int | None = None,
    keep_turns: int | None = None,
) -> int | None:
    """How many leading messages to compact, or None when nothing can be.

    ``protect_from``: the index of the current turn's first message (len when
    no turn runs); nothing from it on is compacted. ``keep_turns``: keep that
    many of the newest turns before it as they are; else keep the newest
    turns whose sizes fit in ``keep_tokens`` (all of them compacted if none fits).
    The prefix must hold at least one message that is not an earlier summary.
    """
    lowest = 2 if first_is_summary else 1
    protect_from = min(protect_from, len(messages))
    if protect_from < lowest:
        return None
    prompts = [i for i in range(lowest, protect_from) if is_prompt(messages[i])]
    if keep_turns is not None:
        if keep_turns <= 0:
            return protect_from
        return prompts[-keep_turns] if keep_turns <= len(prompts) else None
    budget = keep_tokens if keep_tokens is not None else 0
    if sum(sizes) <= budget:
        return None  # all of it fits in what a compaction keeps: nothing worth summarizing
    suffix = 0  # tokens of messages[i:]
    best = protect_from
    at = len(sizes)
    for i in reversed(prompts):
        suffix += sum(sizes[i:at])
        at = i
        if suffix > budget:
            break
        best = i
    return best


def transcript(messages: Sequence[Message]) -> str:
    """The messages as a plain text a summarizing model reads: every role and
    tool call, tool results shortened, thinking left out (opaque to others)."""
    parts: list[str] = []
    for msg in messages:
        if msg.role == "user":
            head = "## User"
        elif msg.role == "assistant":
            head = "## Assistant"
        else:
            head = "## Tool results"
        lines = [head]
        for block in msg.content:
            if isinstance(block, TextBlock):
                lines.append(block.text)
            elif isinstance(block, ToolCallBlock):
                args = _short(_json(block.arguments), _ARGS_CHARS)
                lines.append(f"[called tool {block.name} with {args}]")
            elif isinstance(block, ToolResultBlock):
                status = "error" if block.is_error else "result"
                lines.append(
                    f"[{block.name or 'tool'} {status}]\n{_short(block.content, _RESULT_CHARS)}"
                )
            elif isinstance(block, ImageBlock):
                lines.append(f"[image {block.media_type}]")
            elif isinstance(block, DocumentBlock):
                lines.append(_document(block))
            elif isinstance(block, ThinkingBlock):
                continue
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _document(block: DocumentBlock) -> str:
    """An attached file as the transcript shows it: a text file's text
    (shortened as a tool result is), a PDF by its name only (the summarizing
    request carries no attachment: it must be valid on every API)."""
    name = block.name or block.url or ""
    head = f"[attached {block.media_type} {name}".rstrip() + "]"
    if block.text is not None:
        return f"{head}\n{_short(block.text, _RESULT_CHARS)}"
    return head


def chunks(messages: Sequence[Message], sizes: Sequence[int], budget: int) -> list[list[Message]]:
    """Consecutive runs of messages each within ``budget`` tokens (a message
    larger than the budget alone in its run: the transcript shortens it)."""
    out: list[list[Message]] = []
    run: list[Message] = []
    used = 0
    for msg, size in zip(messages, sizes, strict=True):
        if run and used + size > budget:
            out.append(run)
            run, used = [], 0
        run.append(msg)
        used += size
    if run:
        out.append(run)
    return out


def fit_text(text: str, tokens: int) -> str:
    """``text`` shortened to about ``tokens``, its middle cut with a note."""
    room = max(200, tokens * CHARS_PER_TOKEN)
    return _short(text, room)


def summary_request(
    model: str, text: str, *, previous: str | None, max_output_tokens: int
) -> Request:
    """One summarizing call: the conversation as a transcript in one user
    message (valid on every API, whatever tools and signatures it held)."""
    intro = ""
    if previous:
        intro = (
            f"Summary of the conversation before this part:\n<summary>\n{previous}\n</summary>\n\n"
        )
    prompt = (
        f"{intro}The conversation to summarize:\n<conversation>\n{text}\n</conversation>\n\n"
        "Write the summary now" + (" (covering the earlier summary too)." if previous else ".")
    )
    return Request(
        model=model,
        messages=[Message(role="user", content=[TextBlock(text=prompt)])],
        system=[TextBlock(text=SUMMARY_SYSTEM)],
        thinking=ThinkingConfig(level="none"),
        tools=[],
        max_output_tokens=max_output_tokens,
    )


def _short(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}"


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)
