from __future__ import annotations

import pytest
import trio

from tests.fakes.server import FakeProvider


@pytest.fixture
async def fake_provider(nursery: trio.Nursery) -> FakeProvider:
    """A fake provider server on loopback for the length of one test."""
    fake = FakeProvider()
    await nursery.start(fake.serve)
    return fake
