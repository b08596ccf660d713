"""A token bucket with the clock passed in, so it is pure and exact under a
mock clock.

Continuously refilled rather than reset at fixed windows: the algorithm
Anthropic documents for its per-minute limits ("your capacity is continuously
replenished up to your maximum limit"), and what OpenAI's reset times
describe. N per minute is a burst of N, then one every 60/N s.
"""

from __future__ import annotations

# below this shortfall (relative) a wait is float noise, not a wait: without
# it a timer set for the exact moment could wake a hair early and re-arm
_SLACK = 1e-9


class Bucket:
    """Holds up to ``capacity``, refills ``rate`` per second. A level under
    zero is a debt: a call that used more than it reserved, or one bigger
    than the whole bucket, is paid for by the calls after it."""

    __slots__ = ("basis", "capacity", "level", "rate", "stamp")

    def __init__(self, capacity: float, rate: float, now: float, level: float | None = None):
        self.capacity = capacity
        self.rate = rate
        self.level = capacity if level is None else min(level, capacity)
        self.stamp = now
        self.basis = -float("inf")  # see learn

    @classmethod
    def per_minute(cls, limit: float, now: float) -> Bucket:
        return cls(limit, limit / 60.0, now)

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def wait(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` may be taken. More than the capacity waits
        for a full bucket (it would never fit otherwise), then takes it all."""
        self.refill(now)
        return self._eta(min(amount, self.capacity))

    def eta(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` has flowed in, uncapped: how long a queue
        whose calls together want ``amount`` takes to drain through here."""
        self.refill(now)
        return self._eta(amount)

    def _eta(self, amount: float) -> float:
        short = amount - self.level
        if short <= _SLACK * max(1.0, amount):
            return 0.0
        return short / self.rate if self.rate > 0 else float("inf")

    def take(self, amount: float, now: float) -> None:
        self.refill(now)
        self.level -= amount

    def give(self, amount: float, now: float) -> None:
        """Correct by ``amount`` (negative: a debt), never above the capacity."""
        self.refill(now)
        self.level = min(self.capacity, self.level + amount)

    def learn(
        self, capacity: float, rate: float, estimate: float | None, basis: float, now: float
    ) -> None:
        """The provider's own view: its limit and refill rate replace ours;
        ``estimate`` (a level no higher than the provider's now) replaces
        our level when it comes from calls started no earlier than the last
        (``basis``: when they started); from the same start, the highest
        estimate is the tightest, as each is a floor."""
        self.refill(now)
        self.capacity = capacity
        self.rate = rate
        self.level = min(self.level, capacity)
        if estimate is None or basis < self.basis:
            return
        estimate = min(estimate, capacity)
        self.level = max(self.level, estimate) if basis == self.basis else estimate
        self.basis = basis
