from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from providers.google.codec import GeminiCodec
from providers.http import HttpProvider
from providers.settings import ProviderSettings, settings_for
from tests.fakes.server import FakeProvider

KEY = "AIzaTEST-gemini-key-0123456789"
RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "recorded" / "google"


def settings(base_url: str, **kw) -> ProviderSettings:
    s = settings_for("google", env={"GEMINI_API_KEY": KEY}, base_url=base_url)
    return dataclasses.replace(s, **kw) if kw else s


def counter_ids(prefix: str = "call_") -> Callable[[], str]:
    c = itertools.count()
    return lambda: f"{prefix}{next(c)}"


@pytest.fixture
async def gemini(fake_provider: FakeProvider) -> AsyncIterator[HttpProvider]:
    """A Gemini provider pointed at the fake server's /v1beta."""
    from providers.registry import make_provider

    provider = make_provider(settings(fake_provider.base_url + "/v1beta"))
    assert isinstance(provider.codec, GeminiCodec)
    try:
        yield provider
    finally:
        await provider.aclose()
