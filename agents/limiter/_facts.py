"""What a provider's response said about its limits, in the shape the
limiter learns from.

The provider side parses the headers (Anthropic
``anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-*``,
OpenAI ``x-ratelimit-*-{requests,tokens}``, ``retry-after``); its struct is
passed as is when it has a window per kind with ``limit`` / ``remaining`` /
``reset_after`` and a ``retry_after`` (the Protocols below), or when it is
flat (``requests_limit``, ``requests_remaining``, ...). Values that are not
finite non-negative numbers are ignored: they come from the network.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

# the kinds of limit a provider reports: tokens is OpenAI's (input + output)
KINDS = ("requests", "input_tokens", "output_tokens", "tokens")


class RateWindowLike(Protocol):
    @property
    def limit(self) -> float | None: ...
    @property
    def remaining(self) -> float | None: ...
    @property
    def reset_after(self) -> float | None: ...


class RateFactsLike(Protocol):
    @property
    def requests(self) -> RateWindowLike | None: ...
    @property
    def input_tokens(self) -> RateWindowLike | None: ...
    @property
    def output_tokens(self) -> RateWindowLike | None: ...
    @property
    def tokens(self) -> RateWindowLike | None: ...
    @property
    def retry_after(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class RateWindow:
    """One kind of limit: its size, what is left, seconds until it is full again."""

    limit: float | None = None
    remaining: float | None = None
    reset_after: float | None = None


@dataclass(frozen=True, slots=True)
class RateFacts:
    requests: RateWindow | None = None
    input_tokens: RateWindow | None = None
    output_tokens: RateWindow | None = None
    tokens: RateWindow | None = None
    retry_after: float | None = None


def number(value: object) -> float | None:
    """A finite non-negative number, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return float(value)


def windows(facts: object) -> Iterator[tuple[str, float, float | None, float | None]]:
    """(kind, limit, remaining, reset_after) of each kind the facts give a limit for."""
    for kind in KINDS:
        window = getattr(facts, kind, None)
        if window is not None:
            raw = (
                getattr(window, "limit", None),
                getattr(window, "remaining", None),
                getattr(window, "reset_after", None),
            )
        else:
            raw = (
                getattr(facts, f"{kind}_limit", None),
                getattr(facts, f"{kind}_remaining", None),
                getattr(facts, f"{kind}_reset_after", None),
            )
        limit, remaining, reset_after = (number(v) for v in raw)
        if limit:  # no limit, or 0 (no bucket can hold nothing)
            yield kind, limit, remaining, reset_after
