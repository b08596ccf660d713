from __future__ import annotations

import random

import pytest

from agents.retry import RetryPolicy
from providers.types import ProviderError


def _err(category, retry_after=None):
    return ProviderError(category=category, message="x", retry_after=retry_after)


def _policy(**kw):
    return RetryPolicy(rng=random.Random(1), jitter=0.0, **kw)


@pytest.mark.parametrize("category", ["auth", "billing", "invalid_request", "context_length", "content_filter", "not_found", "unknown"])
def test_never_retried(category):
    assert _policy().delay(_err(category), 1) is None


def test_rate_limit_backs_off_exponentially_then_gives_up():
    p = _policy(max_attempts_patient=4, base_delay=1.0)
    assert [p.delay(_err("overloaded"), a) for a in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, None]


def test_retry_after_is_honored_exactly_for_rate_limits():
    p = _policy()
    assert p.delay(_err("rate_limit", retry_after=7.5), 1) == 7.5
    assert p.delay(_err("rate_limit", retry_after=0.0), 3) == 0.0
    assert p.delay(_err("rate_limit", retry_after=10_000), 1) is None  # too long to hold a turn


def test_transient_errors_bounded():
    p = _policy(max_attempts_transient=3)
    assert [p.delay(_err("timeout"), a) is not None for a in (1, 2, 3)] == [True, True, False]
    assert p.delay(_err("server", retry_after=5), 1) == 5.0


def test_jitter_stays_within_its_band_and_delay_is_capped():
    p = RetryPolicy(rng=random.Random(3), jitter=0.25, base_delay=1.0, max_delay=8.0, max_attempts_patient=99)
    delays = [p.delay(_err("overloaded"), a) for a in range(1, 10)]
    assert all(0.75 * min(8, 2 ** (a - 1)) <= d <= 1.25 * min(8, 2 ** (a - 1)) for a, d in enumerate(delays, 1))
    assert max(delays) <= 10.0


def test_per_provider_transient_retries_from_config():
    p = _policy(max_attempts_transient=3, transient_retries={"openai": 0, "google": 5})
    err = lambda provider: ProviderError(category="network", message="x", provider=provider)  # noqa: E731
    assert p.delay(err("openai"), 1) is None  # max_retries 0: never retried
    assert [p.delay(err("google"), a) is not None for a in (1, 5, 6)] == [True, True, False]
    assert [p.delay(err("anthropic"), a) is not None for a in (2, 3)] == [True, False]
    # patient categories are not capped by it
    assert p.delay(ProviderError(category="rate_limit", message="x", provider="openai"), 1) is not None
