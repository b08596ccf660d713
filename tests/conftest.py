from __future__ import annotations

import os

import pytest
import trio
import trio.testing

from tests.fakes.server import FakeProvider

# The soak test runs for minutes: collected only when asked for, so the normal
# run neither runs it nor reports a skip.
collect_ignore = [] if os.environ.get("IKIGAI_SOAK") == "1" else ["soak"]


@pytest.fixture
async def fake_provider(nursery: trio.Nursery) -> FakeProvider:
    """A fake provider server on loopback for the length of one test."""
    fake = FakeProvider()
    await nursery.start(fake.serve)
    return fake


@pytest.fixture
def virtual_clock() -> trio.testing.MockClock:
    """Virtual time that skips over sleeps (retry backoff, timeouts) but, unlike
    ``autojump_clock``, only after 0.1 s of real idleness: real loopback I/O
    and store threads finish long before that, so their timeouts don't fire."""
    return trio.testing.MockClock(autojump_threshold=0.1)
