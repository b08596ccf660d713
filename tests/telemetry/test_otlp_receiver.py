"""The OTLP receiver against the real OpenTelemetry SDK and its OTLP/HTTP
exporter: what the SDK sends decodes to the SDK's own ids and values, and the
waits wake on arrival and fail saying what did arrive. (The misbehaving modes:
test_otlp_receiver_faults.py.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode, Tracer

from .otlp_receiver import METRICS, PROTOBUF, TRACES, Event, OtlpReceiver
from .otlp_receiver import Link as ReceivedLink
from .samples import RESOURCE, SCHEMA, WAIT, connect, post, request_body, span_proto

TracerOf = Callable[[SpanExporter], Tracer]
# one attribute of every type the SDK can send
ATTRIBUTES: dict[str, Any] = {
    "s": "text",
    "b": True,
    "i": 42,
    "f": 0.25,
    "ls": ["a", "b"],
    "lb": [True, False],
    "li": [1, -2],
    "lf": [0.5, 1.5],
}


def _hex(n: int, digits: int = 16) -> str:
    return format(n, f"0{digits}x")


# -- what the SDK sends ------------------------------------------------------------


def test_sdk_spans_decode_to_the_sdk_ids_and_values(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=r.traces_url, timeout=WAIT))
    )
    tracer = provider.get_tracer("tests.telemetry", "1.0", schema_url=SCHEMA)
    try:
        with (
            tracer.start_as_current_span(
                "parent", kind=SpanKind.SERVER, attributes=ATTRIBUTES
            ) as parent,
            tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as child,
        ):
            child.add_event("chunk", {"index": 3, "final": False})
            child.set_status(Status(StatusCode.ERROR, "provider refused"))
        links = [Link(parent.get_span_context(), {"why": "follows"})]
        with tracer.start_as_current_span("linked", links=links) as linked:
            linked.set_status(Status(StatusCode.OK))
        assert provider.force_flush()
    finally:
        provider.shutdown()

    spans = r.wait_for_spans(lambda s: len(s) >= 3, timeout=WAIT)
    by_name = {s.name: s for s in spans}
    assert sorted(by_name) == ["child", "linked", "parent"]
    p, c, k = by_name["parent"], by_name["child"], by_name["linked"]
    pc, cc, kc = parent.get_span_context(), child.get_span_context(), linked.get_span_context()

    assert (p.trace_id, p.span_id, p.parent_span_id) == (
        _hex(pc.trace_id, 32),
        _hex(pc.span_id),
        "",
    )
    assert (c.trace_id, c.span_id, c.parent_span_id) == (p.trace_id, _hex(cc.span_id), p.span_id)
    assert (k.trace_id, k.span_id, k.parent_span_id) == (
        _hex(kc.trace_id, 32),
        _hex(kc.span_id),
        "",
    )
    assert k.trace_id != p.trace_id  # a root of its own, tied to the parent only by the link
    assert k.links == [ReceivedLink(p.trace_id, p.span_id, {"why": "follows"})]

    assert p.attributes == ATTRIBUTES
    assert (p.kind, c.kind, k.kind) == ("SERVER", "CLIENT", "INTERNAL")
    assert (p.status_code, p.status_message) == ("UNSET", "")
    assert (c.status_code, c.status_message) == ("ERROR", "provider refused")
    assert k.status_code == "OK"
    assert c.events == [Event("chunk", {"index": 3, "final": False}, child.events[0].timestamp)]
    assert (p.start_ns, p.end_ns) == (parent.start_time, parent.end_time)
    assert p.start_ns < c.start_ns <= c.end_ns < p.end_ns

    for span in spans:
        assert span.resource["service.name"] == "ikigai-test"
        assert span.resource["telemetry.sdk.language"] == "python"
        assert (span.scope, span.schema_url) == ("tests.telemetry", SCHEMA)
    with pytest.raises(FrozenInstanceError):
        p.name = "renamed"  # type: ignore[misc]
    assert r.requests[TRACES] >= 1
    assert r.bad == []


def test_every_span_kind_arrives_one_request_per_span(
    otlp_receiver: OtlpReceiver, tracer_of: TracerOf
) -> None:
    r = otlp_receiver
    tracer = tracer_of(OTLPSpanExporter(endpoint=r.traces_url, timeout=WAIT))
    for kind in SpanKind:
        tracer.start_span(f"span-{kind.name}", kind=kind).end()

    spans = r.wait_for_spans(lambda s: len(s) >= len(SpanKind), timeout=WAIT)
    assert {s.name: s.kind for s in spans} == {f"span-{k.name}": k.name for k in SpanKind}
    # the simple processor exports each span as it ends: one POST each
    assert r.requests == {TRACES: len(SpanKind)}
    assert [x.content_type for x in r.received] == [PROTOBUF] * len(SpanKind)


def test_histogram_sum_and_gauge_from_the_sdk(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver
    exporter = OTLPMetricExporter(endpoint=r.metrics_url, timeout=WAIT)
    # an hour: only force_flush exports
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(resource=RESOURCE, metric_readers=[reader])
    meter = provider.get_meter("tests.telemetry", "1.0", schema_url=SCHEMA)
    try:
        duration = meter.create_histogram(
            "ikigai.test.duration", unit="s", explicit_bucket_boundaries_advisory=[1.0, 5.0, 10.0]
        )
        for value in (0.5, 3.0, 4.0, 7.0, 100.0):
            duration.record(value, {"agent": "a"})
        calls = meter.create_counter("ikigai.test.calls", unit="{call}")
        calls.add(3, {"agent": "a"})
        calls.add(4, {"agent": "a"})
        meter.create_gauge("ikigai.test.depth").set(2.5)
        assert provider.force_flush()
    finally:
        provider.shutdown()

    wanted = {"ikigai.test.duration", "ikigai.test.calls", "ikigai.test.depth"}
    metrics = r.wait_for_metrics(lambda ms: wanted <= {m.name for m in ms}, timeout=WAIT)
    first = {m.name: m for m in reversed(metrics)}  # the force_flush export, not shutdown's

    h = first["ikigai.test.duration"]
    assert (h.kind, h.unit, h.temporality) == ("histogram", "s", "CUMULATIVE")
    [point] = h.data_points
    assert point["attributes"] == {"agent": "a"}
    assert point["explicit_bounds"] == [1.0, 5.0, 10.0]
    assert point["bucket_counts"] == [1, 2, 1, 1]
    assert (point["count"], point["sum"], point["min"], point["max"]) == (5, 114.5, 0.5, 100.0)

    s = first["ikigai.test.calls"]
    assert (s.kind, s.unit, s.monotonic, s.temporality) == ("sum", "{call}", True, "CUMULATIVE")
    assert [(p["attributes"], p["value"]) for p in s.data_points] == [({"agent": "a"}, 7)]

    g = first["ikigai.test.depth"]
    assert (g.kind, [p["value"] for p in g.data_points]) == ("gauge", [2.5])
    assert (g.scope, g.schema_url, g.resource["service.name"]) == (
        "tests.telemetry",
        SCHEMA,
        "ikigai-test",
    )
    assert r.requests[METRICS] >= 1
    assert TRACES not in r.requests


@pytest.mark.parametrize(
    ("encoding", "via_environment"), [("gzip", False), ("gzip", True), ("deflate", False)]
)
def test_compressed_bodies_are_decoded(
    otlp_receiver: OtlpReceiver,
    tracer_of: TracerOf,
    monkeypatch: pytest.MonkeyPatch,
    encoding: str,
    via_environment: bool,
) -> None:
    r = otlp_receiver
    if via_environment:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", encoding)
        exporter = OTLPSpanExporter(endpoint=r.traces_url, timeout=WAIT)
    else:
        exporter = OTLPSpanExporter(
            endpoint=r.traces_url, timeout=WAIT, compression=Compression(encoding)
        )
    tracer_of(exporter).start_span("squeezed", attributes={"text": "x" * 5000}).end()

    # the simple processor's export is over when end() returns
    assert r.bad == []
    [span] = r.spans
    assert (span.name, span.attributes) == ("squeezed", {"text": "x" * 5000})
    [received] = r.received
    assert received.content_encoding == encoding
    assert received.size < 1000  # it was compressed on the wire


def test_a_chunked_body_is_decoded(otlp_receiver: OtlpReceiver) -> None:
    body = request_body([span_proto("chunked")])
    conn = connect(otlp_receiver)
    try:
        chunks = iter([body[:7], body[7:]])
        conn.request(
            "POST", TRACES, body=chunks, headers={"Content-Type": PROTOBUF}, encode_chunked=True
        )
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    assert [s.name for s in otlp_receiver.spans] == ["chunked"]


# -- what the SDK cannot send ---------------------------------------------------------


def _any(value: Any) -> AnyValue:
    if value is None:
        return AnyValue()
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list):
        return AnyValue(array_value=ArrayValue(values=[_any(v) for v in value]))
    pairs = [KeyValue(key=k, value=_any(v)) for k, v in value.items()]
    return AnyValue(kvlist_value=KeyValueList(values=pairs))


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def test_any_values_of_every_kind_round_trip(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(value=_VALUES)
    def round_trip(value: Any) -> None:
        before = len(r.spans)
        span = span_proto("any", attributes=[KeyValue(key="v", value=_any(value))])
        assert post(r, TRACES, request_body([span]), {"Content-Type": PROTOBUF})[0] == 200
        assert r.spans[before].attributes == {"v": value}

    round_trip()
    assert r.bad == []


def test_unknown_enums_and_empty_fields_decode(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver
    span = span_proto("odd", kind=99, status=trace_pb2.Status(code=7, message="?"))
    assert post(r, TRACES, request_body([span]), {"Content-Type": PROTOBUF})[0] == 200
    [odd] = r.spans
    assert (odd.kind, odd.status_code, odd.parent_span_id) == ("99", "7", "")
    assert (odd.trace_id, odd.span_id) == ("01" * 16, "02" * 8)
    assert (odd.scope, odd.schema_url, odd.resource) == ("raw", SCHEMA, {"service.name": "raw"})


# -- waiting ------------------------------------------------------------------------------


def test_a_wait_that_times_out_names_the_spans_seen(
    otlp_receiver: OtlpReceiver, tracer_of: TracerOf
) -> None:
    r = otlp_receiver
    tracer = tracer_of(OTLPSpanExporter(endpoint=r.traces_url, timeout=WAIT))
    tracer.start_span("alpha").end()
    tracer.start_span("beta").end()
    r.wait_for_requests(TRACES, 2, timeout=WAIT)
    with pytest.raises(AssertionError, match=r"2 spans seen \{'alpha': 1, 'beta': 1\}"):
        r.wait_for_spans(lambda s: any(x.name == "gamma" for x in s), timeout=0.3)
    with pytest.raises(AssertionError, match=r"0 metrics seen"):
        r.wait_for_metrics(lambda ms: len(ms) > 0, timeout=0.3)


def test_modes_and_endpoint_are_checked() -> None:
    r = OtlpReceiver(mode="slow", delay=1.0)
    with pytest.raises(RuntimeError):
        _ = r.endpoint
    with pytest.raises(ValueError, match="flaky"):
        r.mode = "flaky"  # type: ignore[assignment]
    with r:
        assert r.endpoint.startswith("http://127.0.0.1:")
        assert r.traces_url == r.endpoint + TRACES
        assert (r.mode, r.delay) == ("slow", 1.0)
    with pytest.raises(RuntimeError):
        r.start()


async def test_await_spans_wakes_when_the_spans_arrive(
    otlp_receiver: OtlpReceiver, tracer_of: TracerOf
) -> None:
    r = otlp_receiver
    tracer = tracer_of(OTLPSpanExporter(endpoint=r.traces_url, timeout=WAIT))

    async def export_once_waiting() -> None:
        await trio.testing.wait_all_tasks_blocked()
        await trio.to_thread.run_sync(lambda: tracer.start_span("awaited").end())

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(export_once_waiting)
            spans = await r.await_spans(lambda s: any(x.name == "awaited" for x in s), timeout=WAIT)
    assert [s.name for s in spans] == ["awaited"]


async def test_a_cancelled_await_returns_and_its_thread_ends(otlp_receiver: OtlpReceiver) -> None:
    calls = 0
    rechecked = threading.Event()

    def never(spans: list[Any]) -> bool:
        nonlocal calls
        calls += 1
        if calls >= 2:  # the wake-up after the cancel
            rechecked.set()
        return False

    started = time.monotonic()
    with trio.move_on_after(0.2) as scope:
        await otlp_receiver.await_spans(never, timeout=WAIT)
    assert scope.cancelled_caught
    assert time.monotonic() - started < WAIT / 2
    assert await trio.to_thread.run_sync(rechecked.wait, 10.0)
