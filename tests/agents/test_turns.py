"""The turn loop against the fake provider over loopback, on a real SQLite file."""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from agents import AgentConfig, RetryPolicy
from agents.events import (
    Queued,
    RetryScheduled,
    StateChanged,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)
from agents.tools import ToolOutput, ToolRegistry, ToolSpec
from providers.types import (
    ErrorEvent,
    TextBlock,
    TextDelta,
    ToolResultBlock,
    Usage,
)
from tests.agents.conftest import of
from tests.fakes.script import HttpError, Reply, ToolCall

MODEL = "claude-sonnet-4-5/med"


def _tools(log: list | None = None) -> ToolRegistry:
    reg = ToolRegistry()

    async def add(args, ctx):
        if log is not None:
            log.append(("add", trio.current_time()))
        await trio.sleep(0.05)
        return ToolOutput(str(args["a"] + args["b"]))

    async def echo(args, ctx):
        if log is not None:
            log.append(("echo", trio.current_time()))
        await trio.sleep(0.05)
        return ToolOutput(args["text"].upper())

    async def slow(args, ctx):
        await trio.sleep(60)
        return ToolOutput("never")

    num = {"type": "number"}
    reg.register(ToolSpec("add", "Add two numbers", {"type": "object", "properties": {"a": num, "b": num}, "required": ["a", "b"]}, add))
    reg.register(ToolSpec("echo", "Shout", {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}, echo))
    reg.register(ToolSpec("slow", "Takes a minute", {"type": "object", "properties": {}}, slow))
    return reg


async def test_tool_turn_with_two_parallel_calls(harness):
    calls: list = []
    sup = await harness.start(tools=_tools(calls))
    harness.fake.push(
        Reply(thinking="plan", thinking_signature="sig-1", tool_calls=[ToolCall("add", {"a": 2, "b": 3}, id="toolu_1"), ToolCall("echo", {"text": "hi"}, id="toolu_2")]),
        Reply(text="2+3 is 5 and HI"),
    )
    rec, _, _ = await sup.create(model=MODEL, name="main")
    events = await harness.turn("main", "do both")

    [ended] = of(events, TurnEnded)
    assert ended.status == "completed" and ended.error is None
    # two responses of the fake's default usage (12 in, 34 out), priced at claude-sonnet-4-5's $3/$15
    assert ended.usage == Usage(input_tokens=24, output_tokens=68)
    assert ended.cost_usd == pytest.approx((24 * 3 + 68 * 15) / 1e6)
    assert [e.name for e in of(events, ToolStarted)] == ["add", "echo"]
    assert [(e.name, e.content, e.is_error) for e in of(events, ToolFinished)] == [("add", "5", False), ("echo", "HI", False)]
    # the two tools ran at the same time
    assert abs(calls[0][1] - calls[1][1]) < 0.04
    states = [e.state for e in of(events, StateChanged)]
    assert states[:3] == ["waiting_for_llm", "executing_tool", "waiting_for_llm"] and states[-1] == "idle"
    # the second request carries both results, and the signed thinking back unchanged
    second = harness.fake.requests[1].json
    last_user = second["messages"][-1]
    assert [b["type"] for b in last_user["content"]] == ["tool_result", "tool_result"]
    assert [b["tool_use_id"] for b in last_user["content"]] == ["toolu_1", "toolu_2"]
    assistant = second["messages"][-2]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "plan", "signature": "sig-1"}
    # history holds exactly the conversation
    history = harness.store.replay(rec.uuid)
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2].content == [
        ToolResultBlock(tool_call_id="toolu_1", content="5", name="add"),
        ToolResultBlock(tool_call_id="toolu_2", content="HI", name="echo"),
    ]
    assert history[3].content == [TextBlock(text="2+3 is 5 and HI")]
    assert history[1].provider == "anthropic" and history[1].thinking_level == "med"


async def test_invalid_tool_arguments_get_an_error_result_the_model_reads(harness):
    sup = await harness.start(tools=_tools())
    harness.fake.push(Reply(tool_calls=[ToolCall("add", {"a": "two", "b": 3}, id="t1")]), Reply(text="sorry"))
    await sup.create(model=MODEL, name="m")
    events = await harness.turn("m", "add")
    [finished] = of(events, ToolFinished)
    assert finished.is_error and "'a'" in finished.content
    result = harness.fake.requests[1].json["messages"][-1]["content"][0]
    assert result["is_error"] is True
    assert of(events, TurnEnded)[0].status == "completed"


async def test_retry_after_429_honors_retry_after(harness, virtual_clock):
    sup = await harness.start(config=AgentConfig(retry=RetryPolicy(jitter=0.0)))
    harness.fake.push(
        Reply(fault=HttpError(429, "slow down", code="rate_limit_error", headers={"retry-after": "7"})),
        Reply(text="finally"),
    )
    await sup.create(model=MODEL, name="r")
    t0 = trio.current_time()
    events = await harness.turn("r", "hi", limit=60)
    [retry] = of(events, RetryScheduled)
    assert (retry.attempt, retry.delay, retry.error.category, retry.error.retry_after) == (2, 7.0, "rate_limit", 7.0)
    assert trio.current_time() - t0 >= 7.0
    assert of(events, TurnEnded)[0].status == "completed"
    assert "".join(e.text for e in of(events, TextDelta)) == "finally"
    assert len(harness.fake.requests) == 2


async def test_no_retry_on_401_and_missing_key_names_the_variable(harness):
    sup = await harness.start(env={})
    await sup.create(model=MODEL, name="nokey")
    events = await harness.turn("nokey", "hi")
    [ended] = of(events, TurnEnded)
    assert ended.status == "error" and ended.error.category == "auth"
    assert "ANTHROPIC_API_KEY" in ended.error.message
    assert harness.fake.requests == [] and of(events, RetryScheduled) == []


async def test_no_retry_on_server_401(harness):
    sup = await harness.start()
    harness.fake.push(Reply(fault=HttpError(401, "invalid x-api-key", code="authentication_error")), Reply(text="never"))
    await sup.create(model=MODEL, name="bad")
    events = await harness.turn("bad", "hi")
    assert of(events, TurnEnded)[0].error.category == "auth"
    assert len(harness.fake.requests) == 1 and of(events, RetryScheduled) == []
    assert isinstance(of(events, ErrorEvent)[0], ErrorEvent)


async def test_stream_cut_after_output_is_retried_from_the_start(harness):
    from tests.fakes.script import Disconnect

    sup = await harness.start()
    harness.fake.push(Reply(text="partial answer that breaks " * 10, pieces=20, fault=Disconnect(after_bytes=2000)), Reply(text="whole answer"))
    rec, _, _ = await sup.create(model=MODEL, name="cut")
    events = await harness.turn("cut", "hi")
    [retry] = of(events, RetryScheduled)
    assert retry.error.category == "network" and retry.discarded_output is True
    assert harness.store.replay(rec.uuid)[-1].content == [TextBlock(text="whole answer")]
    assert of(events, TurnEnded)[0].status == "completed"


async def test_prompts_queue_in_order_with_positions(harness):
    sup = await harness.start()
    harness.fake.push(Reply(text="one", delay=0.2), Reply(text="two"), Reply(text="three"))
    rec, _, _ = await sup.create(model=MODEL, name="q")
    actor = await sup.live("q")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    _, p1 = await sup.prompt(actor, "first")
    _, p2 = await sup.prompt(actor, "second")
    t3, p3 = await sup.prompt(actor, "third")
    assert (p1, p2, p3) == (0, 1, 2)
    from tests.agents.conftest import collect_turn

    events = await collect_turn(sub, t3)
    assert [q.position for q in of(events, Queued)] == [1, 2]
    assert [e.prompt for e in of(events, TurnStarted)] == ["first", "second", "third"]
    assert [m.text for m in harness.store.replay(rec.uuid)] == ["first", "one", "second", "two", "third", "three"]


async def test_cancel_mid_stream_marks_interrupted_and_agent_stays_usable(harness):
    sup = await harness.start()
    harness.fake.push(Reply(text="x" * 200, pieces=100, delay=0.05), Reply(text="fresh"))
    rec, _, _ = await sup.create(model=MODEL, name="c")
    actor = await sup.live("c")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    await sup.prompt(actor, "long one")
    events = []
    with trio.fail_after(10):
        async for e in sub:
            events.append(e)
            if isinstance(e.event, TextDelta):
                assert actor.cancel()
            if isinstance(e.event, TurnEnded):
                break
    assert of(events, TurnEnded)[0].status == "interrupted"
    kinds = [r.kind for r in harness.store.history(rec.uuid)]
    assert kinds == ["user", "interrupted"]
    assert harness.store.replay(rec.uuid) == []
    events = await harness.turn("c", "again")
    assert of(events, TurnEnded)[0].status == "completed"
    sent = harness.fake.requests[1].json["messages"]
    assert [m["role"] for m in sent] == ["user"] and json.dumps(sent).count("long one") == 0


async def test_cancel_mid_tool_kills_it_and_marks_interrupted(harness):
    sup = await harness.start(tools=_tools())
    harness.fake.push(Reply(tool_calls=[ToolCall("slow", {}, id="s1")]), Reply(text="after"))
    rec, _, _ = await sup.create(model=MODEL, name="t")
    actor = await sup.live("t")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    await sup.prompt(actor, "wait a minute")
    events = []
    with trio.fail_after(10):
        async for e in sub:
            events.append(e)
            if isinstance(e.event, ToolStarted):
                actor.cancel()
            if isinstance(e.event, TurnEnded):
                break
    assert of(events, TurnEnded)[0].status == "interrupted"
    # the yolo policy allowed the call: a permission row says so
    assert [r.kind for r in harness.store.history(rec.uuid)] == ["user", "assistant", "tool_call", "permission", "interrupted"]
    assert harness.store.replay(rec.uuid) == []
    events = await harness.turn("t", "next")
    assert of(events, TurnEnded)[0].status == "completed"


async def test_cancel_at_boundary_lets_the_tool_finish(harness):
    sup = await harness.start(tools=_tools())
    harness.fake.push(Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 1}, id="a1")]), Reply(text="not reached"))
    rec, _, _ = await sup.create(model=MODEL, name="b")
    actor = await sup.live("b")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    await sup.prompt(actor, "add")
    events = []
    with trio.fail_after(10):
        async for e in sub:
            events.append(e)
            if isinstance(e.event, ToolStarted):
                actor.cancel(at_boundary=True)
            if isinstance(e.event, TurnEnded):
                break
    assert of(events, TurnEnded)[0].status == "cancelled"
    assert [(f.name, f.content) for f in of(events, ToolFinished)] == [("add", "2")]
    history = harness.store.replay(rec.uuid)
    assert [m.role for m in history] == ["user", "assistant", "tool"]
    assert len(harness.fake.requests) == 1


async def test_tool_turn_limit(harness):
    sup = await harness.start(tools=_tools(), config=AgentConfig(max_tool_turns=2, retry=RetryPolicy(base_delay=0.01)))
    harness.fake.default = Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 2})])
    rec, _, _ = await sup.create(model=MODEL, name="loop")
    events = await harness.turn("loop", "forever")
    assert of(events, TurnEnded)[0].status == "tool_limit"
    assert len(harness.fake.requests) == 3
    last = harness.store.replay(rec.uuid)[-1]
    assert last.role == "tool" and last.content[0].is_error and "tool-turn limit (2)" in last.content[0].content


async def test_crash_inside_a_turn_is_recorded_and_the_agent_survives(harness):
    # fault injection: the store write of the answer fails once, as a full disk would

    reg = ToolRegistry()
    sup = await harness.start(tools=reg)
    harness.fake.push(Reply(text="ok"))
    rec, _, _ = await sup.create(model=MODEL, name="crashy")
    actor = await sup.live("crashy")

    async def broken(*a, **k):
        raise RuntimeError("disk on fire")

    real = sup.db.append_assistant
    sup.db.append_assistant = broken
    events = await harness.turn("crashy", "hi")
    ended = of(events, TurnEnded)[0]
    assert ended.status == "interrupted" and "disk on fire" in ended.message
    sup.db.append_assistant = real
    harness.fake.push(Reply(text="back"))
    events = await harness.turn("crashy", "again")
    assert of(events, TurnEnded)[0].status == "completed" and actor.alive
    assert harness.store.replay(rec.uuid)[-1].content == [TextBlock(text="back")]


async def test_fallback_model_after_retries_run_out(harness):
    from agents.events import FallbackUsed

    config = AgentConfig(retry=RetryPolicy(base_delay=0.001, jitter=0.0, max_attempts_patient=2), fallbacks=["gpt-4o"])
    sup = await harness.start(config=config)

    def respond(req):
        if req.path == "/v1/messages":
            return Reply(fault=HttpError(529, "Overloaded", code="overloaded_error"))
        return Reply(text="answered by the fallback")

    harness.fake.responder = respond
    rec, _, _ = await sup.create(model=MODEL, name="fb")
    events = await harness.turn("fb", "hello")
    [used] = of(events, FallbackUsed)
    assert (used.from_model, used.to_model, used.error.category) == ("claude-sonnet-4-5", "gpt-4o", "overloaded")
    assert [r.path for r in harness.fake.requests] == ["/v1/messages", "/v1/messages", "/v1/chat/completions"]
    assert of(events, TurnEnded)[0].status == "completed"
    answer = harness.store.replay(rec.uuid)[-1]
    assert (answer.provider, answer.model, answer.text) == ("openai", "gpt-4o", "answered by the fallback")


async def test_no_fallback_for_errors_that_are_not_retryable(harness):
    config = AgentConfig(retry=RetryPolicy(base_delay=0.001), fallbacks=["gpt-4o"])
    sup = await harness.start(config=config)
    harness.fake.push(Reply(fault=HttpError(400, "prompt is too long: 300000 tokens > 200000 maximum", code="invalid_request_error")))
    await sup.create(model=MODEL, name="nofb")
    events = await harness.turn("nofb", "hello")
    assert of(events, TurnEnded)[0].error.category == "context_length"
    assert len(harness.fake.requests) == 1


async def test_clear_mark_rewind_and_system_prompt_shape_the_next_request(harness):
    sup = await harness.start()
    harness.fake.default = Reply(text="ok")
    await sup.create(model=MODEL, name="h")
    await harness.turn("h", "one")
    await sup.history_op("h", "mark", "before-two")
    await harness.turn("h", "two")
    await sup.history_op("h", "rewind", "before-two")
    await harness.turn("h", "three")
    sent = harness.fake.requests[-1].json
    texts = [b["text"] for m in sent["messages"] for b in m["content"] if b.get("type") == "text"]
    assert texts == ["one", "ok", "three"]
    await sup.history_op("h", "clear")
    await sup.set_system("h", "be terse")
    await harness.turn("h", "four")
    sent = harness.fake.requests[-1].json
    assert [b["text"] for m in sent["messages"] for b in m["content"] if b.get("type") == "text"] == ["four"]
    assert sent["system"][0]["text"] == "be terse"
    from agents import AgentError

    with pytest.raises(AgentError, match="nope"):
        await sup.history_op("h", "rewind", "nope")
