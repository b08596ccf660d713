"""A wall-clock bound for CPU work: trio cannot cancel a running regex or
parser, but SIGALRM interrupts it. For freeze detectors (a generous bound the
old quadratic code misses by far), not for timing."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Frozen(Exception):
    pass


@contextmanager
def wall_clock(seconds: float) -> Iterator[None]:
    def alarm(_signum: int, _frame: Any) -> None:
        raise Frozen(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
