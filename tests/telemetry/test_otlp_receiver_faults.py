"""The OTLP receiver's misbehaving modes against the real OTLP/HTTP exporter
(each fails an export the way a broken collector would, and is still
counted), hostile requests, and closing while requests hang."""

from __future__ import annotations

import gzip
import time

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from .otlp_receiver import METRICS, PROTOBUF, TRACES, OtlpReceiver
from .samples import WAIT, connect, ended_span, post, request_body, span_proto


def test_error_mode_fails_the_export_and_counts_it(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver
    r.mode = "error"
    exporter = OTLPSpanExporter(endpoint=r.traces_url, timeout=2)
    try:
        assert exporter.export([ended_span("refused")]) is SpanExportResult.FAILURE
        refused = r.requests[TRACES]
        assert refused >= 1
        assert {x.mode for x in r.received} == {"error"}
        assert r.spans == []  # a refused body is not recorded

        r.mode = "ok"  # switched between two exports of the same exporter
        assert exporter.export([ended_span("accepted")]) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert [s.name for s in r.spans] == ["accepted"]
    assert r.requests[TRACES] == refused + 1
    status, body = post(r, TRACES, b"", {"Content-Type": PROTOBUF})
    assert (status, body) == (200, b"")  # an empty request is a valid (empty) export


def test_reset_mode_fails_the_export_and_counts_it(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver
    r.mode = "reset"
    exporter = OTLPSpanExporter(endpoint=r.traces_url, timeout=2)
    try:
        assert exporter.export([ended_span("dropped")]) is SpanExportResult.FAILURE
    finally:
        exporter.shutdown()
    assert r.requests[TRACES] >= 1  # the exporter retries a dead connection
    assert {x.mode for x in r.received} == {"reset"}
    assert r.spans == []
    with pytest.raises(ConnectionError):
        post(r, TRACES, request_body([span_proto("raw")]), {"Content-Type": PROTOBUF})
    assert r.in_flight == 0


def test_garbage_mode_answers_200_with_bytes_that_are_not_protobuf(
    otlp_receiver: OtlpReceiver,
) -> None:
    r = otlp_receiver
    r.mode = "garbage"
    exporter = OTLPSpanExporter(endpoint=r.traces_url, timeout=2)
    try:
        # the exporter judges by the status alone, so garbage after a 200 is a success
        assert exporter.export([ended_span("garbled")]) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    status, body = post(r, TRACES, request_body([span_proto("raw")]), {"Content-Type": PROTOBUF})
    assert status == 200
    assert body
    with pytest.raises(DecodeError):
        ExportTraceServiceResponse.FromString(body)
    assert [s.name for s in r.spans] == ["garbled", "raw"]  # the bodies were accepted
    assert r.requests[TRACES] == 2


def test_slow_mode_times_the_exporter_out_and_close_ends_the_sleep(
    otlp_receiver: OtlpReceiver,
) -> None:
    r = otlp_receiver
    r.mode = "slow"
    assert r.delay == 30.0
    exporter = OTLPSpanExporter(endpoint=r.traces_url, timeout=2)
    try:
        started = time.monotonic()
        assert exporter.export([ended_span("late")]) is SpanExportResult.FAILURE
        assert time.monotonic() - started < r.delay  # gave up before the answer
    finally:
        exporter.shutdown()
    # decoded on arrival although the answer never reached the exporter
    assert [s.name for s in r.wait_for_spans(lambda s: len(s) >= 1, timeout=WAIT)] == ["late"]
    assert r.requests[TRACES] >= 1
    assert r.in_flight >= 1  # still sleeping

    started = time.monotonic()
    r.close()
    assert time.monotonic() - started < 10.0  # far less than the 30 s sleep
    assert r.in_flight == 0


def test_slow_mode_answers_after_its_delay(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver
    r.mode, r.delay = "slow", 0.5
    exporter = OTLPSpanExporter(endpoint=r.traces_url, timeout=WAIT)
    try:
        started = time.monotonic()
        assert exporter.export([ended_span("patient")]) is SpanExportResult.SUCCESS
        assert time.monotonic() - started >= 0.5
    finally:
        exporter.shutdown()
    assert [s.name for s in r.spans] == ["patient"]


_VALID = request_body([span_proto("valid")])


@pytest.mark.parametrize(
    ("path", "body", "headers", "status"),
    [
        (TRACES, b"\xff" * 11, {"Content-Type": PROTOBUF}, 400),
        (METRICS, b"not protobuf", {"Content-Type": PROTOBUF}, 400),
        (TRACES, _VALID, {"Content-Type": "application/json"}, 415),
        (TRACES, _VALID, {}, 415),
        ("/v1/logs", _VALID, {"Content-Type": PROTOBUF}, 404),
        (TRACES, _VALID, {"Content-Type": PROTOBUF, "Content-Encoding": "gzip"}, 400),
        (
            TRACES,
            gzip.compress(_VALID)[:-9],
            {"Content-Type": PROTOBUF, "Content-Encoding": "gzip"},
            400,
        ),
        (TRACES, _VALID, {"Content-Type": PROTOBUF, "Content-Encoding": "br"}, 415),
    ],
)
def test_bad_requests_are_answered_4xx_and_recorded(
    otlp_receiver: OtlpReceiver, path: str, body: bytes, headers: dict[str, str], status: int
) -> None:
    r = otlp_receiver
    assert post(r, path, body, headers)[0] == status
    [bad] = r.bad
    assert (bad.path, bad.status, bad.body) == (path, status, body)
    assert r.requests == {path: 1}
    assert r.spans == [] and r.metrics == []
    # and the receiver still serves
    assert post(r, TRACES, _VALID, {"Content-Type": PROTOBUF})[0] == 200
    assert [s.name for s in r.spans] == ["valid"]


def test_a_post_without_length_is_answered_411(otlp_receiver: OtlpReceiver) -> None:
    conn = connect(otlp_receiver)
    try:
        conn.putrequest("POST", TRACES)
        conn.putheader("Content-Type", PROTOBUF)
        conn.endheaders()
        assert conn.getresponse().status == 411
    finally:
        conn.close()
    assert [b.status for b in otlp_receiver.bad] == [411]
    assert otlp_receiver.requests == {TRACES: 1}  # counted although unreadable


def test_hostile_bodies_never_stop_the_receiver(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        body=st.binary(max_size=200) | st.just(_VALID).map(lambda b: b[: len(b) // 2]),
        path=st.sampled_from([TRACES, METRICS]),
        encoding=st.sampled_from(["", "gzip", "deflate"]),
    )
    def hostile(body: bytes, path: str, encoding: str) -> None:
        headers = {"Content-Type": PROTOBUF}
        if encoding:
            headers["Content-Encoding"] = encoding
        bad = len(r.bad)
        status = post(r, path, body, headers)[0]
        assert status in (200, 400)  # never a 500: decoding never breaks the receiver
        assert len(r.bad) == bad + (status == 400)

    hostile()
    assert post(r, TRACES, _VALID, {"Content-Type": PROTOBUF})[0] == 200
    assert r.spans[-1].name == "valid"


def test_close_drops_a_kept_alive_connection(otlp_receiver: OtlpReceiver) -> None:
    r = otlp_receiver
    conn = connect(r)
    try:
        conn.request("POST", TRACES, body=_VALID, headers={"Content-Type": PROTOBUF})
        response = conn.getresponse()
        assert (response.status, response.read()) == (200, b"")
        assert not response.will_close  # HTTP/1.1 keep-alive: the handler waits for more
        r.close()
        # the handler let go of the connection: the client reads its end, not a hang
        assert conn.sock is not None
        assert conn.sock.recv(1) == b""
    finally:
        conn.close()
    assert r.in_flight == 0
