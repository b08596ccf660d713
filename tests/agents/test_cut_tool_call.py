"""A reply cut off by the output limit inside a tool call (issue 14, item 9).

Through the fake provider over loopback, on a real SQLite file: the call is
not run, its error result says the arguments were cut off by the output
limit, the next request carries valid JSON for the call (servers refuse
invalid JSON, and would on every retry), nothing is retried, and the stored
history keeps the text the model wrote.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.events import RetryScheduled, ToolFinished, TurnEnded
from agents.tools import ToolOutput, ToolRegistry, ToolSpec
from providers.types import ToolCallBlock
from tests.agents.conftest import of
from tests.fakes.script import Reply, ToolCall

CUT = '{"path": "/etc/hostname", "note": "a long note that the output limit cut in the mid'
# (model, the wire's name for the call's arguments in the next request)
MODELS = [
    ("claude-sonnet-4-5/low", "messages"),
    ("gpt-4o", "chat"),
    ("gpt-5/low", "responses"),
]


def replayed(body: dict[str, Any], api: str) -> list[Any]:
    """The replayed calls' arguments in the request body (parsed: they must be JSON)."""
    if api == "chat":
        calls = [c for m in body["messages"] for c in m.get("tool_calls") or []]
        return [json.loads(c["function"]["arguments"]) for c in calls]
    if api == "responses":
        items = [i for i in body["input"] if i.get("type") == "function_call"]
        return [json.loads(i["arguments"]) for i in items]
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    return [b["input"] for b in blocks if b.get("type") == "tool_use"]


@pytest.mark.parametrize(("model", "api"), MODELS)
async def test_a_call_cut_by_the_output_limit_is_not_run_and_goes_back_as_json(harness, model, api):
    ran: list[dict[str, Any]] = []

    async def note(args: dict[str, Any], ctx: Any) -> ToolOutput:
        ran.append(args)
        return ToolOutput("noted")

    reg = ToolRegistry()
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "note": {"type": "string"}},
    }
    reg.register(ToolSpec("note", "Take a note", schema, note))
    sup = await harness.start(tools=reg)
    harness.fake.push(
        Reply(tool_calls=[ToolCall("note", CUT, id="call_cut")], finish="length"),
        Reply(text="I will keep it short."),
    )
    rec, _, _ = await sup.create(model=model, name="cut")
    events = await harness.turn("cut", "take a note")

    [ended] = of(events, TurnEnded)
    assert ended.status == "completed", ended.error
    assert of(events, RetryScheduled) == [] and len(harness.fake.requests) == 2
    assert ran == []  # the call was not run
    [finished] = of(events, ToolFinished)
    assert finished.is_error
    assert "cut off by the output limit" in finished.content
    assert "max_output_tokens" in finished.content
    # the next request is valid JSON for the call, and carries the error result
    body = harness.fake.requests[1].json
    assert replayed(body, api) == [{}]
    assert "cut off by the output limit" in harness.fake.requests[1].body.decode()
    # what the model wrote is kept in history
    history = harness.store.replay(rec.uuid)
    [call] = [b for m in history for b in m.content if isinstance(b, ToolCallBlock)]
    assert call.raw_arguments == CUT
