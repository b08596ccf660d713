"""A provider key's limits shared by several daemons on one database: each
takes 1/N of every configured rate and of the cap, so together they never
pass the key's limit (agents/limiter/_registry.py)."""

from __future__ import annotations

import pytest

from agents.limiter import LimiterConfig, Limiters
from agents.limiter._config import default_max_concurrent
from agents.limiter._registry import shared


def test_one_daemon_keeps_the_limits_as_configured() -> None:
    config = LimiterConfig(max_concurrent=6, requests_per_minute=60)
    assert shared(config, "anthropic", 1) is config


@pytest.mark.parametrize("daemons", [2, 3, 7])
def test_n_daemons_each_take_a_share_that_sums_to_at_most_the_limit(daemons: int) -> None:
    config = LimiterConfig(
        max_concurrent=12,
        requests_per_minute=50,
        input_tokens_per_minute=30_000,
        output_tokens_per_minute=8_000,
    )
    part = shared(config, "anthropic", daemons)
    assert part.max_concurrent is not None and part.max_concurrent * daemons <= 12
    assert part.max_concurrent >= 1
    assert part.requests_per_minute == pytest.approx(50 / daemons)
    assert part.input_tokens_per_minute == pytest.approx(30_000 / daemons)
    assert part.output_tokens_per_minute == pytest.approx(8_000 / daemons)


def test_the_default_cap_is_shared_too_and_never_below_one() -> None:
    part = shared(LimiterConfig(), "google", 3)
    assert part.max_concurrent == max(1, default_max_concurrent("google") // 3)
    assert shared(LimiterConfig(max_concurrent=2), "openai", 5).max_concurrent == 1
    assert part.requests_per_minute is None  # unlimited stays unlimited


async def test_live_limiters_take_their_share_when_daemons_come_and_go() -> None:
    limiters = Limiters({"anthropic": LimiterConfig(max_concurrent=8, requests_per_minute=40)})
    one = limiters.get("anthropic", "k1")
    assert one.max_concurrent == 8
    limiters.set_daemons(2)
    assert one.max_concurrent == 4
    later = limiters.get("anthropic", "k2")  # made after: its share too
    assert later.max_concurrent == 4
    other = limiters.get("openai")
    assert other.max_concurrent == default_max_concurrent("openai") // 2
    limiters.set_daemons(1)
    assert one.max_concurrent == 8 and other.max_concurrent == default_max_concurrent("openai")
    limiters.configure("anthropic", LimiterConfig(max_concurrent=6))
    limiters.set_daemons(3)
    assert one.max_concurrent == 2
