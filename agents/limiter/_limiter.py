"""One provider key's limiter: the cap, the buckets, the pause and the fair
queue, and the trio waiting that ties them together.

No task of its own and no polling: a waiting call sleeps on its own event.
Whatever changes what may go (a call ends, one is cancelled, a pause or new
facts arrive, a new call queues) runs ``_dispatch`` once, which starts every
call at the head that may go now; if the head must wait for time to pass (a
bucket refilling, a pause ending) its own task sleeps until that moment and
dispatches again. Waiting on the cap needs no timer: a call's end dispatches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypedDict

import trio

from ._bucket import Bucket
from ._config import LimiterConfig, default_max_concurrent
from ._facts import KINDS, RateFactsLike, number, windows
from ._queue import PRIORITIES, FairQueue, Waiter, level_of

Reason = Literal["concurrency", "rate", "paused"]
_INF = float("inf")
# a retry-after longer than this is a quota for the day, not a wall to wait
# at: the turn's retry policy gives up on it; the pause must not outlive that
MAX_PAUSE_S = 3600.0
# the first estimate of how long a call holds its slot, before one has ended
# (a streamed turn of a few hundred tokens), then a moving average
_FIRST_HOLD_S = 15.0
_HOLD_WEIGHT = 0.2
# calls started within this long of each other form a group whose requests
# may reach the provider in any order (see _learn)
_REORDER_S = 1.0
# a new expected wait is reported when it moves this far from the last one
# projected forward in time (or position or reason change): time passing is
# not news
_NEWS_S = 1.0
_NEWS_FRACTION = 0.1


@dataclass(frozen=True, slots=True)
class WaitInfo:
    """Where a waiting call stands: ``position`` 1 is next; ``expected_wait_s``
    is an estimate from the buckets, the pause and the calls in flight."""

    position: int
    expected_wait_s: float
    reason: Reason


class BucketState(TypedDict):
    kind: str  # requests, input_tokens, output_tokens, tokens
    source: Literal["configured", "learned"]
    level: float
    capacity: float
    per_minute: float


class LimiterSnapshot(TypedDict):
    provider: str
    key: str
    in_flight: int
    max_concurrent: int
    queued: dict[str, int]  # priority -> calls waiting
    paused_for_s: float  # 0 when not paused
    pause_reason: str | None
    buckets: list[BucketState]


class ProviderLimiter:
    """Every model call on one provider key goes through ``slot``."""

    def __init__(self, provider: str, key: str = "", config: LimiterConfig | None = None):
        self.provider = provider
        self.key = key  # a key id, never the secret
        self._queue = FairQueue()
        self._in_flight = 0
        self._paused_until = -_INF
        self._pause_reason: str | None = None
        self._configured: dict[str, Bucket] = {}
        self._learned: dict[str, Bucket] = {}
        self._buckets: tuple[tuple[str, Bucket], ...] = ()
        self._timekeeper: Waiter | None = None
        self._observers = 0
        self._hold_s = _FIRST_HOLD_S
        # what every call so far has reserved (less what came back), per
        # kind: what started after a given call is the difference of two
        self._spent = dict.fromkeys(KINDS, 0.0)
        self._group_at = -_INF
        self._group_mark = dict(self._spent)
        self._config = LimiterConfig()
        self.max_concurrent = default_max_concurrent(provider)
        self.configure(config or LimiterConfig())

    # -- the face -----------------------------------------------------------

    def configure(self, config: LimiterConfig) -> None:
        """Apply new limits (a config reload); calls in flight keep their slots."""
        now = trio.current_time()
        self._config = config
        self.max_concurrent = config.max_concurrent or default_max_concurrent(self.provider)
        rates = {
            "requests": config.requests_per_minute,
            "input_tokens": config.input_tokens_per_minute,
            "output_tokens": config.output_tokens_per_minute,
        }
        for kind, per_minute in rates.items():
            old = self._configured.pop(kind, None)
            if per_minute is None:
                continue
            if old is not None and old.capacity == per_minute:
                self._configured[kind] = old
            else:
                self._configured[kind] = Bucket.per_minute(per_minute, now)
        self._rebuild()
        self._dispatch()

    def slot(
        self,
        *,
        tree: object,
        agent: object,
        priority: str = "interactive",
        input_tokens: int = 0,
        max_output_tokens: int = 0,
        on_wait: Callable[[WaitInfo], None] | None = None,
    ) -> Slot:
        """``async with limiter.slot(...) as slot:`` waits for its turn, holds a
        slot until the block ends; call ``slot.done(in, out)`` with the real
        usage. ``on_wait`` is called, in the waiting task, whenever the wait's
        position, reason or expected length changes."""
        level = level_of(priority)
        sizes = (("input_tokens", input_tokens), ("max_output_tokens", max_output_tokens))
        for name, value in sizes:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, not {value!r}")
        demand = {
            "requests": 1.0,
            "input_tokens": float(input_tokens),
            "output_tokens": float(max_output_tokens),
            "tokens": float(input_tokens + max_output_tokens),
        }
        return Slot(self, Waiter(tree, agent, level, demand, on_wait))

    def pause(self, seconds: float, reason: str = "rate_limit") -> None:
        """No call of this key starts for ``seconds`` (a 429 or 529 one call
        saw): the others wait instead of walking into the same wall."""
        s = number(seconds)
        if not s:
            return
        until = trio.current_time() + min(s, MAX_PAUSE_S)
        if until > self._paused_until:
            self._paused_until = until
            self._pause_reason = reason
        self._dispatch()

    def learn(self, facts: RateFactsLike | object) -> None:
        """Tighten the buckets to what a response said of the key's limits,
        so calls slow down before the provider answers 429. Taken as the
        provider's view now; ``slot.learn`` knows when the call it came
        from started, and counts the calls started since."""
        self._learn(facts, None)

    def _learn(self, facts: object, w: Waiter | None) -> None:
        now = trio.current_time()
        for kind, limit, remaining, reset_after in windows(facts):
            # the providers' limits are per minute; a reset further off than
            # a minute is a longer window (a daily quota), refilling only as
            # fast as it is full again at the reset. A shorter reset is not
            # trusted for the rate: rounded to whole seconds it would claim
            # a slower refill than the real one
            rate = limit / 60.0
            if remaining is not None and reset_after and reset_after > 60 and remaining < limit:
                rate = (limit - remaining) / reset_after
            estimate, basis = remaining, now
            if remaining is not None and w is not None and w.mark:
                # the provider counted this call when it arrived, and
                # perhaps not the calls started alongside it (the network
                # may reorder them): a floor of its level now is what it
                # said, plus the refill since, less every call started
                # since this call's group began, this call excepted
                later = self._spent[kind] - w.mark[kind] - w.reserved.get(kind, 0.0)
                refill = (now - w.granted_at) * rate
                estimate, basis = min(limit, remaining + refill) - later, w.group
            bucket = self._learned.get(kind)
            if bucket is None:
                bucket = self._learned[kind] = Bucket(limit, rate, now)
            bucket.learn(limit, rate, estimate, basis, now)
        self._rebuild()
        retry_after = number(getattr(facts, "retry_after", None))
        if retry_after:
            self.pause(retry_after, "retry_after")
        else:
            self._dispatch()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def queued(self) -> int:
        return len(self._queue)

    def snapshot(self) -> LimiterSnapshot:
        """The state for ``ikictl top``: in flight / cap, queue, pause, buckets."""
        now = trio.current_time()
        buckets: list[BucketState] = []
        for source, table in (("configured", self._configured), ("learned", self._learned)):
            for kind, b in table.items():
                b.refill(now)
                buckets.append(
                    {
                        "kind": kind,
                        "source": source,  # type: ignore[typeddict-item]
                        "level": b.level,
                        "capacity": b.capacity,
                        "per_minute": b.rate * 60.0,
                    }
                )
        paused_for = max(0.0, self._paused_until - now)
        return {
            "provider": self.provider,
            "key": self.key,
            "in_flight": self._in_flight,
            "max_concurrent": self.max_concurrent,
            "queued": self._queue.counts(),
            "paused_for_s": paused_for,
            "pause_reason": self._pause_reason if paused_for else None,
            "buckets": buckets,
        }

    # -- the machinery ------------------------------------------------------

    def _rebuild(self) -> None:
        self._buckets = (*self._configured.items(), *self._learned.items())

    def _blocked(self, w: Waiter, now: float) -> tuple[Reason | None, float]:
        """Why ``w`` may not start now, and when to look again (inf: at the
        next call's end)."""
        if now < self._paused_until:
            return "paused", self._paused_until
        if self._in_flight >= self.max_concurrent:
            return "concurrency", _INF
        wait = 0.0
        for kind, bucket in self._buckets:
            wait = max(wait, bucket.wait(w.demand[kind], now))
        if wait > 0:
            return "rate", now + wait
        return None, 0.0

    def _grant(self, w: Waiter, now: float) -> None:
        for kind, bucket in self._buckets:
            bucket.take(w.demand[kind], now)
            w.taken.append((bucket, kind))
        w.reserved = dict(w.demand)
        spent = self._spent
        if now - self._group_at > _REORDER_S:
            # calls started this close together may reach the provider in
            # any order: a response is read as if its group all came after it
            self._group_at = now
            self._group_mark = dict(spent)
        w.group = self._group_at
        w.mark = self._group_mark
        for kind, amount in w.demand.items():
            spent[kind] += amount
        self._in_flight += 1
        w.granted = True
        w.granted_at = now
        if w is self._timekeeper:
            self._timekeeper = None
        if w.wake is not None:
            w.wake.set()

    def _try_now(self, w: Waiter) -> bool:
        """The fast path: nothing waits and nothing blocks, so ``w`` goes."""
        if self._queue:
            return False
        now = trio.current_time()
        if self._blocked(w, now)[0] is not None:
            return False
        self._grant(w, now)
        return True

    def _dispatch(self) -> None:
        now = trio.current_time()
        queue = self._queue
        keeper: Waiter | None = None
        wake_at = _INF
        while queue:
            head = queue.head()
            assert head is not None
            reason, until = self._blocked(head, now)
            if reason is None:
                queue.pop()
                self._grant(head, now)
                continue
            keeper, wake_at = head, until
            break
        # only the head keeps a timer: the calls behind it cannot go before it
        old = self._timekeeper
        if old is not None and old is not keeper and not old.granted:
            old.wake_at = _INF
            old.wake.set()
        self._timekeeper = keeper
        if keeper is not None and keeper.wake_at != wake_at:
            keeper.wake_at = wake_at
            keeper.wake.set()
        if self._observers and queue:
            self._report(now)

    async def _wait(self, w: Waiter) -> None:
        if w.on_wait is not None:
            self._observers += 1
        try:
            w.wake = trio.Event()
            self._queue.push(w)
            self._dispatch()
            while True:
                # reported here, in the waiting task, so an observer's error
                # is this call's, not that of whichever call dispatched
                if w.info is not None and not w.granted:
                    info, w.info = w.info, None
                    w.on_wait(info)  # type: ignore[misc]
                if w.granted:
                    return
                w.wake = trio.Event()
                with trio.move_on_at(w.wake_at) as timer:
                    await w.wake.wait()
                if timer.cancelled_caught and not w.granted:
                    self._dispatch()
        except BaseException:
            if w.granted:
                # started but never got to use it: the slot and the buckets back
                self._release(w, dict.fromkeys(w.reserved, 0.0), count_hold=False)
            else:
                self._queue.remove(w)
                if self._timekeeper is w:
                    self._timekeeper = None
                # the next call may fit where this one did not
                self._dispatch()
            raise
        finally:
            if w.on_wait is not None:
                self._observers -= 1

    def _correct(self, w: Waiter, used: dict[str, float]) -> None:
        """Give back (or charge) the difference between what ``w`` reserved
        and what it used; ``used`` then becomes its reservation."""
        now = trio.current_time()
        back: dict[str, float] = {}
        for kind, real in used.items():
            held = w.reserved.get(kind)
            if held is not None and real != held:
                back[kind] = held - real
                w.reserved[kind] = real
                self._spent[kind] -= held - real
        if back:
            for bucket, kind in w.taken:
                if kind in back:
                    bucket.give(back[kind], now)

    def _release(self, w: Waiter, used: dict[str, float], *, count_hold: bool = True) -> None:
        self._correct(w, used)
        self._in_flight -= 1
        w.granted = False
        if count_hold:
            held = trio.current_time() - w.granted_at
            self._hold_s += _HOLD_WEIGHT * (held - self._hold_s)
        self._dispatch()

    def _report(self, now: float) -> None:
        """Each observing waiter's position and expected wait, in one walk
        of the queue in service order; news goes to its task."""
        free = max(0, self.max_concurrent - self._in_flight)
        pause = max(0.0, self._paused_until - now)
        per_release = self._hold_s / self.max_concurrent
        ahead = dict.fromkeys(self._queue_kinds(), 0.0)
        for position, w in enumerate(self._queue.order(), start=1):
            for kind in ahead:
                ahead[kind] += w.demand[kind]
            if w.on_wait is None:
                continue
            rate = 0.0
            for kind, bucket in self._buckets:
                rate = max(rate, bucket.eta(ahead[kind], now))
            slots = max(0, position - free) * per_release
            wait = max(pause, rate, slots)
            reason: Reason = (
                "paused"
                if pause and pause >= wait
                else "rate"
                if rate and rate >= slots
                else "concurrency"
            )
            info = WaitInfo(position, wait, reason)
            if self._is_news(w, info, now):
                w.reported = (info, now)
                w.info = info
                w.wake.set()

    def _queue_kinds(self) -> tuple[str, ...]:
        return tuple(kind for kind, _ in self._buckets)

    @staticmethod
    def _is_news(w: Waiter, info: WaitInfo, now: float) -> bool:
        if w.reported is None:
            return True
        last, at = w.reported
        if last.position != info.position or last.reason != info.reason:
            return True
        projected = max(0.0, last.expected_wait_s - (now - at))
        if math.isinf(projected) or math.isinf(info.expected_wait_s):
            return projected != info.expected_wait_s
        return abs(info.expected_wait_s - projected) > max(_NEWS_S, _NEWS_FRACTION * projected)


class Slot:
    """A call's place: an async context manager that waits on entry and
    gives the slot back on exit, correcting the buckets by the real usage."""

    __slots__ = ("_done", "_limiter", "_w")

    def __init__(self, limiter: ProviderLimiter, w: Waiter):
        self._limiter = limiter
        self._w = w
        self._done = False

    @property
    def priority(self) -> str:
        return PRIORITIES[self._w.level]

    async def __aenter__(self) -> Slot:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._limiter._try_now(self._w):
            await trio.lowlevel.cancel_shielded_checkpoint()
        else:
            await self._limiter._wait(self._w)
        return self

    def learn(self, facts: RateFactsLike | object) -> None:
        """What this call's response said of the limits (see ``ProviderLimiter.learn``)."""
        self._limiter._learn(facts, self._w)

    def done(self, input_tokens: int, output_tokens: int) -> None:
        """The call's real usage (from the response): the buckets are
        corrected by the difference from the estimate at once."""
        used_in, used_out = float(input_tokens), float(output_tokens)
        self._limiter._correct(
            self._w,
            {
                "input_tokens": used_in,
                "output_tokens": used_out,
                "tokens": used_in + used_out,
            },
        )
        self._done = True
        # tokens given back may let the head go
        self._limiter._dispatch()

    async def __aexit__(self, *exc: object) -> None:
        if not self._w.granted:
            return
        # no usage known (the call failed or was cut before its end): the
        # input estimate stands (the provider may have counted it), the
        # output reservation comes back (nothing was delivered to count)
        used: dict[str, float] = {}
        if not self._done:
            used = {"output_tokens": 0.0, "tokens": self._w.demand["input_tokens"]}
        self._limiter._release(self._w, used)
