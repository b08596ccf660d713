"""A thinking level on a model OpenRouter routes reaches it (issue 14 item 11):
``openrouter/anthropic/claude-sonnet-4.5/high`` used to send no reasoning."""

from __future__ import annotations

import pytest

from agents.events import TurnEnded
from tests.agents.conftest import KEYS, of
from tests.fakes.script import Reply


@pytest.mark.parametrize(("level", "effort"), [("high", "high"), ("low", "low"), ("med", "medium")])
async def test_the_level_is_sent_as_openrouter_reasoning(harness, level, effort):
    sup = await harness.start(env={**KEYS, "OPENROUTER_API_KEY": "test-openrouter-key"})
    harness.fake.push(Reply(text="hi"))
    _, resolved, _ = await sup.create(model=f"openrouter/anthropic/claude-sonnet-4.5/{level}", name="r")
    assert (resolved.model, resolved.thinking.level) == ("anthropic/claude-sonnet-4.5", level)
    assert of(await harness.turn("r", "hello"), TurnEnded)[0].status == "completed"
    body = harness.fake.requests[-1].json
    assert body["model"] == "anthropic/claude-sonnet-4.5"
    assert body["reasoning"]["effort"] == effort


async def test_none_turns_openrouter_reasoning_off(harness):
    sup = await harness.start(env={**KEYS, "OPENROUTER_API_KEY": "test-openrouter-key"})
    harness.fake.push(Reply(text="hi"))
    await sup.create(model="openrouter/anthropic/claude-sonnet-4.5/none", name="r0")
    await harness.turn("r0", "hello")
    assert harness.fake.requests[-1].json.get("reasoning") in (None, {"enabled": False})
