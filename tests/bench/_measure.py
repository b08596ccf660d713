"""How every benchmark measures: equal repetitions for every contender, run
interleaved (A B A B ...) so drift hits both alike, and the median kept.

    from tests.bench._measure import interleaved, median, pct

A "floor" is always measured with the same repetitions as what it is compared
with; no benchmark keeps a best-of or gives one side more rounds.
"""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def pct(xs: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank, as p50/p99 are reported."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(q * len(s) + 0.5) - 1))]


def interleaved(
    reps: int, contenders: dict[str, Callable[[], T]], *, warmup: int = 1
) -> dict[str, list[T]]:
    """Run each contender ``warmup`` times, then ``reps`` times each, in turn;
    every contender gets exactly ``reps`` results."""
    for _ in range(warmup):
        for fn in contenders.values():
            fn()
    out: dict[str, list[T]] = {name: [] for name in contenders}
    for _ in range(reps):
        for name, fn in contenders.items():
            out[name].append(fn())
    return out


async def ainterleaved(
    reps: int, contenders: dict[str, Callable[[], Awaitable[T]]], *, warmup: int = 1
) -> dict[str, list[T]]:
    """``interleaved`` for async contenders, awaited one at a time in one event
    loop (so connections and clients stay warm across repetitions)."""
    for _ in range(warmup):
        for fn in contenders.values():
            await fn()
    out: dict[str, list[T]] = {name: [] for name in contenders}
    for _ in range(reps):
        for name, fn in contenders.items():
            out[name].append(await fn())
    return out
