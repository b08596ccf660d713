"""Traces of agents (agents/tracing): the spans a turn, its model calls, its
tool calls, a fork that runs its own turn, mail, a wait and a compaction
make, read from the SDK's in-memory exporter.

The real supervisor on a real SQLite file, the fake provider over loopback;
only the exporter is in memory (tests/daemon/test_traces_otlp.py sends them
to a real OTLP receiver)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents.events import TurnEnded
from agents.tools import ToolOutput, ToolRegistry, ToolSpec, agent_tools
from agents.tracing import Cause, format_traceparent, parse_traceparent, prompt_causes
from agents.tracing._otel import OtelTracer
from providers.secrets import register_secret
from tests.agents.conftest import collect_turn, of
from tests.fakes.script import HttpError, Reply, ToolCall, Usage

MODEL = "claude-sonnet-4-5"
SCRIPT_TRACE = 0x0AF7651916CD43DD8448EB211C80319C
SCRIPT_SPAN = 0xB7AD6B7169203331


class Traces:
    def __init__(self, content: bool = False) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.metrics = InMemoryMetricReader()
        self.tracer = OtelTracer(
            provider, MeterProvider(metric_readers=[self.metrics]), content=content, version="t"
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [s.name for s in self.spans()])
        return found[0]

    def points(self, metric: str) -> list[object]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [
            p
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == metric
            for p in m.data.data_points
        ]


def _tools() -> ToolRegistry:
    reg = ToolRegistry()
    for spec in agent_tools():
        reg.register(spec)

    async def echo(args: dict, ctx: object) -> ToolOutput:
        return ToolOutput(args["text"])

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    reg.register(ToolSpec("echo", "echo", schema, echo))
    return reg


def _first_text(req) -> str:  # type: ignore[no-untyped-def]
    first = req.json["messages"][0]["content"]
    return first if isinstance(first, str) else first[0]["text"]


def _ids(span: ReadableSpan) -> tuple[int, int]:
    return span.context.trace_id, span.context.span_id


def _parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


@pytest.fixture
def traces() -> Iterator[Traces]:
    yield Traces()


async def test_a_tree_of_agents_is_one_trace_with_links(harness, traces: Traces) -> None:  # type: ignore[no-untyped-def]
    """A script's trace continues into the turn; its model calls and tools
    are children; the fork's child runs its turn in the same trace, linked
    to the fork call; the wait links to the child's turn."""
    sup = await harness.start(tools=_tools())
    sup.deps.tracer = traces.tracer

    def respond(req):  # type: ignore[no-untyped-def]
        msgs = req.json["messages"]
        if _first_text(req) == "compute 6*7":  # the child
            return Reply(text="forty-two", usage=Usage(input=11, output=3))
        last = json.dumps(msgs[-1]["content"])
        if len(msgs) == 1:
            return Reply(
                tool_calls=[
                    ToolCall("fork", {"prompt": "compute 6*7", "name": "kid"}, id="f1"),
                    ToolCall("echo", {"text": "hello"}, id="e1"),
                ],
                usage=Usage(input=100, output=20, cached=40),
            )
        if '"f1"' in last:
            child = harness.store.resolve("kid").uuid
            return Reply(tool_calls=[ToolCall("wait", {"agents": [child], "timeout": 30}, id="w1")])
        return Reply(text="the child says forty-two", usage=Usage(input=200, output=7))

    harness.fake.responder = respond
    boss, _, _ = await sup.create(model=MODEL, name="boss")
    actor = await sup.live("boss")
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    cause = Cause(format_traceparent(SCRIPT_TRACE, SCRIPT_SPAN), "prompt")
    turn, _ = await sup.prompt(actor, "orchestrate", causes=(cause,))
    events = await collect_turn(sub, turn, 20)
    assert of(events, TurnEnded)[0].status == "completed"
    kid = harness.store.resolve("kid")

    top = traces.one("invoke_agent boss")
    assert _ids(top)[0] == SCRIPT_TRACE and _parent(top) == SCRIPT_SPAN
    assert top.parent is not None and top.parent.is_remote
    assert top.links == ()  # a script's context is the parent, not a link
    a = top.attributes
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.id"] == boss.uuid == a["gen_ai.conversation.id"]
    assert a["gen_ai.agent.name"] == "boss"
    assert a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.request.model"] == MODEL
    assert a["ikigai.turn.id"] == turn
    assert a["ikigai.turn.status"] == "completed"
    assert "gen_ai.input.messages" not in a  # content is off by default

    chats = [s for s in traces.named(f"chat {MODEL}") if _parent(s) == top.context.span_id]
    assert len(chats) == 3
    first = min(chats, key=lambda s: s.start_time)
    assert first.kind.name == "CLIENT"
    assert first.attributes["gen_ai.usage.input_tokens"] == 100
    assert first.attributes["gen_ai.usage.output_tokens"] == 20
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 40
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert first.attributes["gen_ai.request.max_tokens"] > 0
    assert "ikigai.cost_usd" in first.attributes
    # the turn's totals are its calls'
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert a[key] == sum(c.attributes[key] for c in chats)
    assert a["gen_ai.usage.output_tokens"] == 20 + 34 + 7

    fork = traces.one("execute_tool fork")
    echo = traces.one("execute_tool echo")
    wait = traces.one("execute_tool wait")
    for tool in (fork, echo, wait):
        assert _parent(tool) == top.context.span_id
        assert tool.attributes["gen_ai.tool.type"] == "function"
        assert tool.attributes["ikigai.permission.decision"] == "allow"
    assert fork.attributes["gen_ai.tool.call.id"] == "f1"
    assert echo.attributes["gen_ai.tool.name"] == "echo"

    child = traces.one("invoke_agent kid")
    assert child.attributes["gen_ai.agent.id"] == kid.uuid
    assert _ids(child)[0] == SCRIPT_TRACE  # the tree reads as one trace
    assert _parent(child) == fork.context.span_id
    assert [(link.context.span_id, link.attributes["ikigai.link.type"]) for link in child.links] == [
        (fork.context.span_id, "fork")
    ]
    kid_chat = [s for s in traces.named(f"chat {MODEL}") if _parent(s) == child.context.span_id]
    assert len(kid_chat) == 1
    assert [(link.context.span_id, link.attributes["ikigai.link.type"]) for link in wait.links] == [
        (child.context.span_id, "wait")
    ]
    # every span of the tree is in the script's trace
    assert {s.context.trace_id for s in traces.spans()} == {SCRIPT_TRACE}

    tokens = traces.points("gen_ai.client.token.usage")
    kinds = {(p.attributes["gen_ai.token.type"], p.attributes["gen_ai.operation.name"]) for p in tokens}
    assert kinds == {("input", "chat"), ("output", "chat")}
    assert sum(p.sum for p in tokens if p.attributes["gen_ai.token.type"] == "output") == 20 + 34 + 7 + 3
    durations = traces.points("gen_ai.client.operation.duration")
    assert sum(p.count for p in durations) == 4


async def test_mail_between_agents_links_the_reading_turn_to_the_sender(harness, traces: Traces) -> None:  # type: ignore[no-untyped-def]
    sup = await harness.start(tools=_tools())
    sup.deps.tracer = traces.tracer

    def respond(req):  # type: ignore[no-untyped-def]
        msgs = req.json["messages"]
        if "[mail from" in _first_text(req):
            return Reply(text="got it")
        if len(msgs) == 1:
            return Reply(tool_calls=[ToolCall("send", {"to": "reader", "text": "psst"}, id="s1")])
        return Reply(text="sent")

    harness.fake.responder = respond
    await sup.create(model=MODEL, name="writer")
    reader, _, _ = await sup.create(model=MODEL, name="reader")
    reading = await sup.live("reader")
    sub = reading.log.subscribe(from_seq=reading.log.next_seq)
    await harness.turn("writer", "tell the reader")
    send = traces.one("execute_tool send")
    with trio.fail_after(20):
        async for entry in sub:  # until the reader's mail turn has ended
            if isinstance(entry.event, TurnEnded):
                break
    sub.close()
    got = traces.one("invoke_agent reader")
    assert [(link.context.span_id, link.attributes["ikigai.link.type"]) for link in got.links] == [
        (send.context.span_id, "mail")
    ]
    assert got.context.trace_id == send.context.trace_id
    assert got.attributes["gen_ai.agent.id"] == reader.uuid


async def test_retries_are_events_and_errors_are_marked(harness, traces: Traces) -> None:  # type: ignore[no-untyped-def]
    sup = await harness.start(tools=_tools())
    sup.deps.tracer = traces.tracer
    calls = []

    def respond(req):  # type: ignore[no-untyped-def]
        calls.append(req)
        if len(calls) == 1:
            return Reply(fault=HttpError(529, "overloaded", code="overloaded_error"))
        if len(calls) == 2:
            return Reply(text="fine now")
        return Reply(fault=HttpError(400, "bad thing", code="invalid_request_error"))

    harness.fake.responder = respond
    await sup.create(model=MODEL, name="flaky")
    events = await harness.turn("flaky", "hello")
    assert of(events, TurnEnded)[0].status == "completed"
    ok = traces.one(f"chat {MODEL}")
    assert [e.name for e in ok.events] == ["ikigai.retry"]
    assert ok.events[0].attributes["error.type"] == "overloaded"
    assert ok.events[0].attributes["ikigai.retry.attempt"] == 2
    assert ok.status.status_code.name == "UNSET"

    events = await harness.turn("flaky", "again")
    assert of(events, TurnEnded)[0].status == "error"
    failed = [s for s in traces.named(f"chat {MODEL}") if s is not ok]
    assert len(failed) == 1
    assert failed[0].status.status_code.name == "ERROR"
    assert failed[0].attributes["error.type"] == "invalid_request"
    assert failed[0].attributes["http.response.status_code"] == 400
    turn = [s for s in traces.named("invoke_agent flaky") if s.attributes["ikigai.turn.status"] == "error"]
    assert len(turn) == 1 and turn[0].status.status_code.name == "ERROR"
    assert turn[0].attributes["error.type"] == "invalid_request"


async def test_a_compaction_is_its_own_span_with_its_model_call(harness, traces: Traces) -> None:  # type: ignore[no-untyped-def]
    def respond(req):  # type: ignore[no-untyped-def]
        system = json.dumps(req.json.get("system", ""))
        if "summar" in system.lower() or "summar" in json.dumps(req.json["messages"][-1]).lower():
            return Reply(text="SUMMARY")
        return Reply(text="answer")

    harness.fake.responder = respond
    sup = await harness.start(tools=_tools())
    sup.deps.tracer = traces.tracer
    rec, _, _ = await sup.create(model=MODEL, name="long")
    for i in range(3):
        await harness.turn("long", f"prompt #{i}")
    outcome = await sup.compact(rec.uuid, keep_turns=1)
    assert outcome.compacted
    span = traces.one("compact long")
    assert span.parent is None  # asked for between turns: a trace of its own
    assert span.attributes["ikigai.compaction.reason"] == "manual"
    assert span.attributes["gen_ai.agent.id"] == rec.uuid
    summary = [s for s in traces.named(f"chat {MODEL}") if _parent(s) == span.context.span_id]
    assert len(summary) == 1
    assert summary[0].context.trace_id == span.context.trace_id


async def test_content_is_recorded_only_when_asked_and_scrubbed(harness) -> None:  # type: ignore[no-untyped-def]
    secret = "sk-test-" + "s3cr3t" * 6
    register_secret(secret)
    traces = Traces(content=True)

    def respond(req):  # type: ignore[no-untyped-def]
        if len(req.json["messages"]) == 1:
            return Reply(tool_calls=[ToolCall("echo", {"text": f"key {secret}"}, id="e1")])
        return Reply(text=f"the reply mentions {secret}")

    harness.fake.responder = respond
    sup = await harness.start(tools=_tools())
    sup.deps.tracer = traces.tracer
    await sup.create(model=MODEL, name="talker")
    await harness.turn("talker", f"the prompt holds {secret}")
    turn = traces.one("invoke_agent talker")
    given_in = json.loads(turn.attributes["gen_ai.input.messages"])
    assert given_in[0]["role"] == "user"
    assert given_in[0]["parts"][0]["content"].startswith("the prompt holds ")
    out = json.loads(turn.attributes["gen_ai.output.messages"])
    assert out[0]["parts"][0]["content"].startswith("the reply mentions ")
    echo = traces.one("execute_tool echo")
    assert "key " in echo.attributes["gen_ai.tool.call.arguments"]
    assert "key " in echo.attributes["gen_ai.tool.call.result"]
    for span in traces.spans():
        assert secret not in json.dumps(dict(span.attributes or {}))


def test_a_traceparent_round_trips() -> None:
    text = format_traceparent(SCRIPT_TRACE, SCRIPT_SPAN, 1)
    assert text == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert parse_traceparent(text) == (SCRIPT_TRACE, SCRIPT_SPAN, 1)
    assert prompt_causes(text) == (Cause(text, "prompt"),)
    # a future version may add fields
    assert parse_traceparent("01-" + text[3:] + "-extra") is not None


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # zero trace id
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  # zero span id
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # forbidden version
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",  # 00 has four fields
        "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",  # upper case
        42,
        ["00"],
        {"traceparent": "x"},
    ],
)
def test_a_malformed_traceparent_is_ignored(bad: object) -> None:
    assert parse_traceparent(bad) is None
    assert prompt_causes(bad) == ()


@given(st.one_of(st.text(max_size=600), st.binary(max_size=64), st.integers(), st.none()))
def test_any_value_is_a_cause_or_nothing(value: object) -> None:
    causes = prompt_causes(value)
    assert causes == () or (len(causes) == 1 and parse_traceparent(causes[0].traceparent))


async def test_a_compaction_inside_a_turn_is_a_child_of_the_turn(harness, traces: Traces) -> None:  # type: ignore[no-untyped-def]
    """Auto compaction (the context would not fit the window) happens inside
    the turn that needs it: its span is that turn's child, its summary call
    the compaction's."""
    from providers.catalog import load_catalog

    fake = harness.fake
    fake.windows[MODEL] = 4000
    filler = "lorem ipsum dolor sit amet " * 6

    def respond(req):  # type: ignore[no-untyped-def]
        if "You compact the history" in req.body.decode():
            return Reply(text="The user sent numbered prompts with filler; each was answered.")
        return Reply(text="noted.")

    fake.responder = respond
    catalog = load_catalog()
    catalog.set_limits("anthropic", MODEL, context_window=4000, max_output_tokens=300)
    sup = await harness.start(tools=_tools(), catalog=catalog)
    sup.deps.tracer = traces.tracer
    await sup.create(model=MODEL, name="long")
    for i in range(40):
        await harness.turn("long", f"prompt #{i}: {filler}", limit=30)
        if traces.named("compact long"):
            break
    compaction = traces.named("compact long")[0]
    assert compaction.attributes["ikigai.compaction.reason"] == "auto"
    turns = {s.context.span_id: s for s in traces.named("invoke_agent long")}
    assert _parent(compaction) in turns
    assert compaction.context.trace_id == turns[_parent(compaction)].context.trace_id
    summary = [s for s in traces.named(f"chat {MODEL}") if _parent(s) == compaction.context.span_id]
    assert len(summary) == 1


async def test_a_call_a_budget_refused_says_so(harness, traces: Traces) -> None:  # type: ignore[no-untyped-def]
    from store import Budget

    harness.fake.responder = lambda req: Reply(text="ok")
    sup = await harness.start(tools=_tools())
    sup.deps.tracer = traces.tracer
    await sup.create(model=MODEL, name="thrifty", budget=Budget(max_turns=1))
    assert of(await harness.turn("thrifty", "one"), TurnEnded)[0].status == "completed"
    assert of(await harness.turn("thrifty", "two"), TurnEnded)[0].status == "budget_exceeded"
    calls = sorted(traces.named(f"chat {MODEL}"), key=lambda s: s.start_time)
    assert len(calls) == 2 and "ikigai.budget.refused" not in calls[0].attributes
    assert "turns" in calls[1].attributes["ikigai.budget.refused"]
    assert "gen_ai.usage.input_tokens" not in calls[1].attributes
    turn = [s for s in traces.named("invoke_agent thrifty") if s.attributes["ikigai.turn.status"] == "budget_exceeded"]
    assert len(turn) == 1 and turn[0].status.status_code.name == "ERROR"
    # a call never made is no sample of the duration histogram
    assert sum(p.count for p in traces.points("gen_ai.client.operation.duration")) == 1
