"""Requests every provider accepts (issue 21 items 1, 3, 4): through the real
turn loop, over loopback, with the fake answering 400 exactly where the real
API does (tests/fakes/rules.py)."""

from __future__ import annotations

import json

from agents import AgentConfig, RetryPolicy
from agents.events import FallbackUsed, Notice, TurnEnded
from agents.tools import ToolOutput, ToolRegistry, ToolSpec
from tests.agents.conftest import of
from tests.fakes import rules
from tests.fakes.script import HttpError, Reply, ToolCall


def _echo_tools() -> ToolRegistry:
    reg = ToolRegistry()

    async def echo(args, ctx):
        return ToolOutput(str(args.get("text", "")).upper())

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    reg.register(ToolSpec("echo", "Shout", schema, echo))
    return reg


def _checked(respond):
    """A responder that first refuses what the real API refuses."""
    check = {"/v1/messages": rules.anthropic, "/v1/chat/completions": rules.openai_chat, "/v1/responses": rules.openai_responses}

    def wrapped(req):
        rule = check.get(req.path)
        problem = rule(req.json) if rule else None
        if problem is not None:
            return Reply(fault=HttpError(400, problem, code="invalid_request_error"))
        return respond(req)

    return wrapped


async def test_a_tool_loop_that_fell_back_to_openai_continues_on_anthropic_with_thinking(harness):
    config = AgentConfig(
        retry=RetryPolicy(base_delay=0.001, jitter=0.0, max_attempts_patient=1), fallbacks=["gpt-4o"]
    )
    sup = await harness.start(config=config, tools=_echo_tools())
    anthropic_calls = []

    def respond(req):
        if req.path == "/v1/messages":
            anthropic_calls.append(req.json)
            if len(anthropic_calls) == 1:  # overloaded: the step falls back to OpenAI
                return Reply(fault=HttpError(529, "Overloaded", code="overloaded_error"))
            return Reply(text="finished on anthropic")
        return Reply(tool_calls=[ToolCall("echo", {"text": "hi"}, id="call_a")])

    harness.fake.responder = _checked(respond)
    await sup.create(model="claude-sonnet-4-5/high", name="fb")
    events = await harness.turn("fb", "shout hi")
    assert of(events, FallbackUsed)
    [ended] = of(events, TurnEnded)
    assert ended.status == "completed", ended.error
    # the step after the tool ran went back to Anthropic, thinking off, and said why
    last = anthropic_calls[-1]
    assert "thinking" not in last or last["thinking"].get("type") != "enabled"
    notes = [n.text for n in of(events, Notice)]
    assert any("thinking is off until this tool loop ends" in t and "openai/gpt-4o" in t for t in notes)
    # the next turn thinks again
    harness.fake.responder = _checked(lambda req: Reply(text="again", thinking="hmm", thinking_signature="sig"))
    events = await harness.turn("fb", "and now?")
    assert of(events, TurnEnded)[0].status == "completed"
    assert harness.fake.requests[-1].json["thinking"]["type"] == "enabled"


async def test_a_reply_cut_off_while_thinking_is_replayed_as_the_api_accepts(harness):
    sup = await harness.start()
    harness.fake.responder = _checked(
        lambda req: Reply(thinking="deep thoughts", thinking_signature="sig-1", finish="length")
    )
    rec, _, _ = await sup.create(model="claude-sonnet-4-5/high", name="cut")
    events = await harness.turn("cut", "think hard")
    assert of(events, TurnEnded)[0].status == "completed"
    # stored whole
    stored = harness.store.replay(rec.uuid)[-1]
    assert stored.role == "assistant" and stored.content and stored.content[-1].signature == "sig-1"
    harness.fake.responder = _checked(lambda req: Reply(text="fine"))
    events = await harness.turn("cut", "go on")
    [ended] = of(events, TurnEnded)
    assert ended.status == "completed", ended.error
    sent = harness.fake.requests[-1].json["messages"]
    assert all(m["role"] == "user" for m in sent)


async def test_responses_cut_off_while_reasoning_is_replayed_as_the_api_accepts(harness):
    sup = await harness.start()
    harness.fake.responder = _checked(
        lambda req: Reply(thinking="reasoning...", thinking_signature="enc-1", finish="length")
    )
    await sup.create(model="gpt-5/high", name="rcut")
    events = await harness.turn("rcut", "think")
    assert of(events, TurnEnded)[0].status == "completed"
    harness.fake.responder = _checked(lambda req: Reply(text="ok"))
    events = await harness.turn("rcut", "again")
    [ended] = of(events, TurnEnded)
    assert ended.status == "completed", ended.error
    body = harness.fake.requests[-1].json
    assert harness.fake.requests[-1].path == "/v1/responses"
    assert not [i for i in body["input"] if i.get("type") == "reasoning"]


async def test_responses_output_cap_below_16_is_raised_with_a_notice(harness):
    sup = await harness.start(config=AgentConfig(max_output_tokens=8))
    harness.fake.responder = _checked(lambda req: Reply(text="short"))
    await sup.create(model="gpt-5", name="cap")
    events = await harness.turn("cap", "hi")
    assert of(events, TurnEnded)[0].status == "completed"
    assert harness.fake.requests[-1].json["max_output_tokens"] == 16
    assert any("below the responses API's minimum" in n.text for n in of(events, Notice))
    # Chat has no such floor: 8 is sent as it is
    await sup.create(model="gpt-4o", name="cap2")
    await harness.turn("cap2", "hi")
    assert json.loads(harness.fake.requests[-1].body)["max_completion_tokens"] == 8
