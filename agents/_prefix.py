"""The replay of an agent's context as last sent, kept between model calls.

Before each call the context is converted for the provider (``for_provider``),
its long tool results are cut (``bound_results``) and its size is estimated
(the meter). Walking the whole history three times cost ~1 ms at 1,100
messages on every call, growing with the history; a turn only appends to the
context, so the replay already made is kept and only what was appended since
is converted, cut and measured.

What makes that exact (the same list of equal messages as the whole walk):

- the conversion is a left fold whose only look back is at its last element
  (a user message after a user message is merged into it): continuing the
  fold over the new messages is the fold over all of them
  (``context.replay_into``), and only the last element made before can change;
- the cut of a tool result depends on that result and the bound alone, never
  on the messages around it or after it: a result cut once stays cut the same;
- a message's size estimate depends on that message alone: the running total
  is the sum of what was added, less the size of a last element replaced.

What the kept replay holds for, checked on every call: the same context list
(the actor's, replaced, never rewritten, by a compaction, rewind, clear or
reload), at least as long, whose message at the end of the kept part is the
same object; the same provider (another provider's blocks are converted
differently) and the same bound (another model's window, or
``tool_result_share`` reloaded). Anything else starts over from the first
message. References to the list and to that message are held so their ids
cannot be reused by others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from providers.types import Message

from .context import replay_into, result_room


class _Sizes(Protocol):
    def sizes(
        self, messages: Sequence[Message], *, within: Sequence[Message] | None = None
    ) -> list[int]: ...


class ContextPrefix:
    """One agent's replay as last sent: converted, cut and measured."""

    __slots__ = (
        "_bound",
        "_last",
        "_last_size",
        "_len",
        "_n",
        "_out",
        "_provider",
        "_source",
        "_total",
    )

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget it (the context was replaced): the next call walks it all."""
        self._source: list[Message] | None = None
        self._provider = ""
        self._bound = -1
        self._n = 0  # messages of the source converted so far
        self._last: Message | None = None  # the source's message n - 1
        # a new list, never the old one emptied: a request may still hold that
        self._out: list[Message] = []
        self._len = 0
        self._total = 0  # the raw size estimate of _out
        self._last_size = 0  # of _out[-1], the one element a merge may replace

    def prepare(
        self, context: list[Message], provider: str, max_tokens: int, meter: _Sizes
    ) -> list[Message]:
        """``bound_results(for_provider(context, provider), max_tokens)``,
        walking only what was appended since the last call.

        The list returned is kept and appended to by later calls (never
        changed in place): a request built from it is sent before the next
        one is prepared, as a turn does."""
        n = self._n
        if (
            context is not self._source
            or provider != self._provider
            or max_tokens != self._bound
            or len(context) < n
            or (n and context[n - 1] is not self._last)
        ):
            self.clear()
            self._source, self._provider, self._bound = context, provider, max_tokens
            n = 0
        if len(context) == n:
            return self._out
        kept = len(self._out)
        out, first = replay_into(self._out, context[n:], provider, result_room(max_tokens))
        total = self._total
        if first < kept:  # the last element was merged into: its old size goes
            total -= self._last_size
        sizes = meter.sizes(out[first:], within=out)
        if sizes:
            total += sum(sizes)
            self._last_size = sizes[-1]
        self._out, self._len, self._total = out, len(out), total
        self._n = len(context)
        self._last = context[-1]
        return out

    def total_of(self, messages: Sequence[Message]) -> int | None:
        """The raw size of ``messages`` if they are the replay last prepared."""
        if messages is self._out and len(messages) == self._len and self._source is not None:
            return self._total
        return None
