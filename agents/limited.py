"""A model call's passage through its provider key's limiter (agents/limiter).

Every model call an agent makes (a turn's, a compaction summary, an exact
token count) enters ``passage(...)`` first: it waits there, in the queue of
the provider key the pool names, until the key may take it, and holds its
slot while the call runs. Meanwhile the agent's state is
``waiting_for_provider`` and its log gets ``provider_wait`` events (a few a
second at most); once let in, its state is what it was. The call's answer
teaches the limiter (``learn``: each answer's rate-limit headers), its usage
corrects the buckets (``done``), and a 429 or 529 pauses the key for every
agent (``wall``), so the retry waits in the queue like everyone else rather
than on its own timer.

With the pool's limiting off, a passage lets every call through at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import trio

from providers.ratelimits import RateLimits
from providers.types import ProviderError, Usage

from .events import ProviderWait

if TYPE_CHECKING:
    from .limiter import ProviderLimiter, Slot, WaitInfo

Priority = Literal["interactive", "background"]
PRIORITIES: tuple[Priority, ...] = ("interactive", "background")
_PATIENT = frozenset({"rate_limit", "overloaded"})
# provider_wait events of one agent at most this often (the limiter already
# reports only news); the last word before the call goes is its state change
_REPORT_EVERY_S = 0.25


class Passage:
    """One call's place in the limiter; ``learn`` is the call's ``on_limits``."""

    __slots__ = ("_done", "_limiter", "_slot")

    def __init__(self, limiter: ProviderLimiter | None, slot: Slot | None) -> None:
        self._limiter = limiter
        self._slot = slot
        self._done = False

    def learn(self, facts: RateLimits) -> None:
        if self._slot is not None:
            if facts.retry_after is not None:
                # whether a retry-after pauses the key is wall()'s call, as the
                # retry policy judges it: a wait longer than the policy holds
                # a turn for fails that turn and holds nobody else
                facts = msgspec.structs.replace(facts, retry_after=None)
            self._slot.learn(facts)

    def done(self, usage: Usage) -> None:
        """The call's real usage: the buckets are corrected by it."""
        if self._slot is not None and not self._done:
            self._done = True
            self._slot.done(max(0, usage.input_tokens), max(0, usage.output_tokens))

    def wall(self, error: ProviderError, delay: float) -> bool:
        """A 429 or 529 (``error``) with the retry policy's ``delay``: pause the
        key for everyone until the provider's wall ends (its retry-after, else
        the reset of the limit it hit, else ``delay``). True when paused: the
        retry should go straight back into the queue, not sleep as well."""
        if self._limiter is None or error.category not in _PATIENT:
            return False
        seconds = error.retry_after
        if seconds is None:
            seconds = _reset_of_exhausted(error.rate_limits)
        if seconds is None:
            seconds = delay
        self._limiter.pause(max(seconds, 0.0), error.category)
        return True


def _reset_of_exhausted(limits: RateLimits | None) -> float | None:
    """When the first limit the answer says is used up refills."""
    if limits is None:
        return None
    resets = [
        a.reset_after
        for a in (limits.requests, limits.input_tokens, limits.output_tokens, limits.tokens)
        if a is not None and a.remaining == 0 and a.reset_after is not None
    ]
    return max(resets) if resets else None


@asynccontextmanager
async def passage(
    host: Any,
    limiter: ProviderLimiter | None,
    *,
    provider: str,
    tree: str,
    priority: str,
    input_tokens: int,
    max_output_tokens: int,
    turn: str | None = None,
) -> AsyncIterator[Passage]:
    """``async with passage(...) as p:`` waits for the key, then the call runs
    in the block (its deadline starts inside, so the wait counts toward no
    timeout). ``host``: the actor (publish, set_state, state)."""
    if limiter is None:
        yield Passage(None, None)
        return
    before = host.state
    waited = False
    last_report = -float("inf")

    def on_wait(info: WaitInfo) -> None:
        nonlocal waited, last_report
        if not waited:
            waited = True
            # a retry held by the key's pause is still "retrying" to whoever
            # watches the agent; the provider_wait events say what it waits on
            if before != "retrying":
                host.set_state("waiting_for_provider")
        now = trio.current_time()
        if now - last_report < _REPORT_EVERY_S:
            return
        last_report = now
        host.publish(
            ProviderWait(
                provider=provider,
                position=info.position,
                expected_wait_s=round(info.expected_wait_s, 3),
                reason=info.reason,
            ),
            turn,
        )

    slot = limiter.slot(
        tree=tree,
        agent=host.uuid,
        priority=priority,
        input_tokens=max(0, input_tokens),
        max_output_tokens=max(0, max_output_tokens),
        on_wait=on_wait,
    )
    async with slot:
        if waited:
            host.set_state(before)
        yield Passage(limiter, slot)
