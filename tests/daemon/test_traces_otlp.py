"""Traces end to end: the real daemon exports over OTLP/HTTP to a real
receiver on loopback (tests/telemetry/otlp_receiver.py, decoding the
protobuf with opentelemetry-proto), turned on by the standard
``OTEL_EXPORTER_OTLP_ENDPOINT``.

A script traces with the OpenTelemetry SDK and prompts through the client
library, which sends its current span as the prompt's ``traceparent``: the
agent's turn, its model calls, its fork tool call, the child's own turn and
the wait all arrive in the script's trace, joined by links. A collector that
misbehaves changes nothing for the agents; a daemon without the SDK runs
with traces off and says why."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ikigai.client import Client
from tests.fakes.script import Reply, ToolCall, Usage
from tests.fakes.server import ThreadedFakeProvider
from tests.ikictl.conftest import Daemon, start_daemon, stop_daemon, write_config
from tests.telemetry.otlp_decode import Span
from tests.telemetry.otlp_receiver import OtlpReceiver

MODEL = "claude-sonnet-4-5"
FAST = {"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_METRIC_EXPORT_INTERVAL": "300"}


def _first_text(req: Any) -> str:
    first = req.json["messages"][0]["content"]
    return first if isinstance(first, str) else first[0]["text"]


def _orchestrate(req: Any) -> Reply:
    """The boss forks a kid, waits for it, and answers; the kid answers."""
    msgs = req.json["messages"]
    if _first_text(req) == "compute 6*7":
        return Reply(text="forty-two", usage=Usage(input=11, output=3))
    last = json.dumps(msgs[-1]["content"])
    if len(msgs) == 1:
        return Reply(tool_calls=[ToolCall("fork", {"prompt": "compute 6*7", "name": "kid"}, id="f1")])
    if '"f1"' in last:
        return Reply(tool_calls=[ToolCall("wait", {"agents": ["kid"], "timeout": 60}, id="w1")])
    return Reply(text="the kid says forty-two")


@pytest.fixture
def home() -> Iterator[Path]:
    h = Path(tempfile.mkdtemp(prefix="iktr"))
    try:
        yield h
    finally:
        shutil.rmtree(h, ignore_errors=True)


def _named(spans: list[Span], name: str) -> list[Span]:
    return [s for s in spans if s.name == name]


def test_a_scripts_trace_continues_through_the_agent_tree(home: Path) -> None:
    with OtlpReceiver() as rx, ThreadedFakeProvider(responder=_orchestrate) as fake:
        write_config(home, fake.base_url, default_model=MODEL)
        d = start_daemon(home, {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, **FAST})
        script = TracerProvider(resource=Resource.create({"service.name": "the-script"}))
        script.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(rx.traces_url)))
        try:
            with Client.connect(str(d.socket), autostart=False) as c:
                assert c.status()["traces"] == {
                    "enabled": True,
                    "endpoint": rx.endpoint,
                    "content": False,
                    "why": "OTEL_EXPORTER_OTLP_ENDPOINT is set",
                }
                boss = c.create(model=MODEL, name="boss")["agent"]["uuid"]
                tracer = script.get_tracer("script")
                with tracer.start_as_current_span("fan out") as mine:
                    outcome = c.ask(boss, "orchestrate")
                ours = mine.get_span_context()
            assert outcome["status"] == "completed", outcome
            assert outcome["reply"] == "the kid says forty-two"
            trace_id = f"{ours.trace_id:032x}"

            def complete(spans: list[Span]) -> bool:
                names = {s.name for s in spans if s.trace_id == trace_id}
                return {"invoke_agent boss", "invoke_agent kid", "execute_tool wait"} <= names

            spans = [s for s in rx.wait_for_spans(complete) if s.trace_id == trace_id]
        finally:
            stop_daemon(d)
            script.shutdown()
    [script_span] = _named(spans, "fan out")
    [top] = _named(spans, "invoke_agent boss")
    [kid] = _named(spans, "invoke_agent kid")
    [fork] = _named(spans, "execute_tool fork")
    [wait] = _named(spans, "execute_tool wait")
    assert top.parent_span_id == script_span.span_id
    assert top.resource["service.name"] == "ikigaid"
    assert top.scope == "ikigai"
    assert top.schema_url.startswith("https://opentelemetry.io/schemas/")
    assert top.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert top.attributes["gen_ai.conversation.id"] == boss
    assert top.attributes["ikigai.turn.status"] == "completed"
    chats = [s for s in _named(spans, f"chat {MODEL}") if s.parent_span_id == top.span_id]
    assert len(chats) == 3
    assert all(s.kind == "CLIENT" and s.attributes["gen_ai.provider.name"] == "anthropic" for s in chats)
    assert fork.parent_span_id == wait.parent_span_id == top.span_id
    assert kid.parent_span_id == fork.span_id
    assert [(link.span_id, link.attributes["ikigai.link.type"]) for link in kid.links] == [(fork.span_id, "fork")]
    assert [(link.span_id, link.attributes["ikigai.link.type"]) for link in wait.links] == [(kid.span_id, "wait")]
    kid_chat = [s for s in _named(spans, f"chat {MODEL}") if s.parent_span_id == kid.span_id]
    assert len(kid_chat) == 1 and kid_chat[0].attributes["gen_ai.usage.output_tokens"] == 3
    # metrics beside the spans
    metrics = rx.wait_for_metrics(lambda ms: any(m.name == "gen_ai.client.token.usage" for m in ms))
    usage = [m for m in metrics if m.name == "gen_ai.client.token.usage"]
    assert usage[0].kind == "histogram" and usage[0].unit == "{token}"
    kinds = {p["attributes"]["gen_ai.token.type"] for m in usage for p in m.data_points}
    assert kinds == {"input", "output"}


def _prompted(d: Daemon, text: str = "hi") -> dict[str, Any]:
    with Client.connect(str(d.socket), autostart=False) as c:
        agent = c.create(model=MODEL)["agent"]["uuid"]
        started = time.monotonic()
        outcome = c.ask(agent, text, timeout=60)
        outcome["seconds"] = time.monotonic() - started  # type: ignore[typeddict-unknown-key]
        return dict(outcome)


@pytest.mark.parametrize("mode", ["slow", "garbage", "error", "reset"])
def test_a_misbehaving_collector_changes_nothing_for_the_agents(home: Path, mode: str) -> None:
    with OtlpReceiver(mode=mode, delay=30) as rx, ThreadedFakeProvider(default=Reply(text="hello")) as fake:  # type: ignore[arg-type]
        write_config(home, fake.base_url, default_model=MODEL)
        d = start_daemon(home, {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, **FAST})
        try:
            for _ in range(3):
                outcome = _prompted(d)
                assert outcome["status"] == "completed" and outcome["reply"] == "hello"
            rx.wait_for_requests("/v1/traces")  # the exporter did try the collector
        finally:
            stopped = time.monotonic()
            stop_daemon(d)
            took = time.monotonic() - stopped
        # the last export is bounded (daemon/process/traces.py SHUTDOWN_WAIT, 5 s)
        assert d.proc.returncode == 0, (home / "ikigaid.stderr").read_text()[-2000:]
        assert took < 9.5


def test_traces_asked_for_without_the_sdk_stay_off_and_say_why(home: Path) -> None:
    hidden = home / "hidden"
    (hidden / "opentelemetry").mkdir(parents=True)
    (hidden / "opentelemetry" / "__init__.py").write_text(
        'raise ImportError("opentelemetry hidden: not installed", name="opentelemetry")\n'
    )
    from tests.ikictl.conftest import ROOT

    with OtlpReceiver() as rx, ThreadedFakeProvider(default=Reply(text="hello")) as fake:  # type: ignore[arg-type]
        write_config(home, fake.base_url, default_model=MODEL, traces={"endpoint": rx.endpoint})
        d = start_daemon(home, {"PYTHONPATH": f"{hidden}:{ROOT}"})
        try:
            assert _prompted(d)["status"] == "completed"
            with Client.connect(str(d.socket), autostart=False) as c:
                state = c.status()["traces"]
            assert not state["enabled"] and "not installed" in state["why"]
            assert "traces:      off (the OpenTelemetry SDK is not installed" in d.ikictl("status").out
        finally:
            stop_daemon(d)
        assert rx.requests.get("/v1/traces", 0) == 0
    log = (home / "logs" / "ikigaid.log").read_text()
    assert "OpenTelemetry SDK is not installed" in log
    assert "pip install 'ikigai[traces]'" in log


def test_ikictl_send_continues_the_trace_in_TRACEPARENT(home: Path) -> None:
    """A traced shell script hands its context to ikictl in the environment;
    a malformed one is ignored, and the turn runs as ever."""
    import dataclasses

    given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    with OtlpReceiver() as rx, ThreadedFakeProvider(default=Reply(text="hello")) as fake:  # type: ignore[arg-type]
        write_config(home, fake.base_url, default_model=MODEL)
        d = start_daemon(home, {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, **FAST})
        try:
            traced = dataclasses.replace(d, env={**d.env, "TRACEPARENT": given})
            assert f"traces:      on, to {rx.endpoint}\n" in d.ikictl("status").out
            traced.ikictl("new", "--name", "shell")
            assert "hello" in traced.ikictl("send", "shell", "hi").out
            bad = dataclasses.replace(d, env={**d.env, "TRACEPARENT": "00-nonsense"})
            assert "hello" in bad.ikictl("send", "shell", "again").out
            spans = rx.wait_for_spans(
                lambda ss: len([s for s in ss if s.name == "invoke_agent shell"]) == 2
            )
        finally:
            stop_daemon(d)
    turns = sorted(_named(spans, "invoke_agent shell"), key=lambda s: s.start_ns)
    assert turns[0].trace_id == given.split("-")[1]
    assert turns[0].parent_span_id == given.split("-")[2]
    assert turns[1].trace_id != turns[0].trace_id and turns[1].parent_span_id == ""


_W3C = st.builds(
    lambda v, t, s, f: f"{v}-{t}-{s}-{f}",
    st.sampled_from(["00", "01", "ff", "0", "zz"]),
    st.text("0123456789abcdefABCDEF", min_size=0, max_size=34),
    st.text("0123456789abcdef", min_size=0, max_size=18),
    st.sampled_from(["01", "00", "1", "xx"]),
)
_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def test_any_traceparent_leaves_the_prompt_accepted(home: Path) -> None:
    """Malformed, huge, of any type: never an error for the prompt, and the
    daemon goes on tracing."""
    with OtlpReceiver() as rx, ThreadedFakeProvider(default=Reply(text="hello")) as fake:  # type: ignore[arg-type]
        write_config(home, fake.base_url, default_model=MODEL)
        d = start_daemon(home, {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, **FAST})
        try:
            with Client.connect(str(d.socket), autostart=False) as c:
                agent = c.create(model=MODEL, name="any")["agent"]["uuid"]

                @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
                @given(value=_W3C | _ANY | st.text(min_size=600, max_size=5000))
                def run(value: object) -> None:
                    try:
                        queued = c.call("agent.prompt", {"agent": agent, "text": "hi", "traceparent": value})
                    except Exception as e:
                        raise AssertionError(f"traceparent {value!r:.300} refused: {e!r}") from e
                    assert queued["turn"]

                run()
                done = c.ask(agent, "last", traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
                assert done["status"] == "completed"
            spans = rx.wait_for_spans(
                lambda ss: any(s.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736" for s in ss)
            )
        finally:
            stop_daemon(d)
    continued = [s for s in spans if s.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"]
    turn = [s for s in continued if s.name == "invoke_agent any"]
    assert len(turn) == 1 and turn[0].parent_span_id == "00f067aa0ba902b7"


def test_a_scripts_fan_out_is_in_its_trace(home: Path) -> None:
    """agent.fork {prompts} from a traced script: each child's first turn is
    a child of the script's span, linked to it as a fork; agent.create with a
    prompt continues it too (a child, no link)."""
    script_span = "00f067aa0ba902b7"
    given = f"00-4bf92f3577b34da6a3ce929d0e0e4736-{script_span}-01"
    with OtlpReceiver() as rx, ThreadedFakeProvider(default=Reply(text="done")) as fake:  # type: ignore[arg-type]
        write_config(home, fake.base_url, default_model=MODEL)
        d = start_daemon(home, {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, **FAST})
        try:
            with Client.connect(str(d.socket), autostart=False) as c:
                parent = c.create(model=MODEL, name="root")["agent"]["uuid"]
                made = c.fork_many(parent, prompts=["a", "b", "c"], name="kid", wait=True, traceparent=given)
                assert [k["outcome"]["status"] for k in made["children"]] == ["completed"] * 3
                c.call("agent.create", {"model": MODEL, "name": "solo", "prompt": "x", "wait": True, "traceparent": given})
            spans = rx.wait_for_spans(
                lambda ss: len([s for s in ss if s.name.startswith("invoke_agent ")]) == 4
            )
        finally:
            stop_daemon(d)
    turns = {s.name: s for s in spans if s.name.startswith("invoke_agent ")}
    assert set(turns) == {"invoke_agent kid-1", "invoke_agent kid-2", "invoke_agent kid-3", "invoke_agent solo"}
    for name, turn in turns.items():
        assert turn.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736" and turn.parent_span_id == script_span
        links = [(link.span_id, link.attributes["ikigai.link.type"]) for link in turn.links]
        assert links == ([] if name == "invoke_agent solo" else [(script_span, "fork")])
