"""What the receiver's tests send: SDK spans, hand-built OTLP bodies, raw POSTs."""

from __future__ import annotations

import http.client
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as ProtoResource
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from .otlp_receiver import OtlpReceiver

SCHEMA = "https://opentelemetry.io/schemas/1.37.0"
RESOURCE = Resource.create({"service.name": "ikigai-test", "deployment.environment.name": "ci"})
WAIT = 60.0  # generous: CI machines are loaded


def ended_span(name: str) -> ReadableSpan:
    """A finished SDK span, for calling an exporter's export() by hand."""
    span = TracerProvider(resource=RESOURCE).get_tracer("tests.telemetry").start_span(name)
    span.end()
    assert isinstance(span, ReadableSpan)
    return span


def connect(r: OtlpReceiver) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", int(r.endpoint.rsplit(":", 1)[1]), timeout=WAIT)


def post(r: OtlpReceiver, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """One POST on a fresh connection: (status, body)."""
    conn = connect(r)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def request_body(spans: list[trace_pb2.Span]) -> bytes:
    """A serialized ExportTraceServiceRequest of resource "raw", scope "raw"."""
    request = ExportTraceServiceRequest(
        resource_spans=[
            trace_pb2.ResourceSpans(
                resource=ProtoResource(
                    attributes=[KeyValue(key="service.name", value=AnyValue(string_value="raw"))]
                ),
                scope_spans=[
                    trace_pb2.ScopeSpans(scope=InstrumentationScope(name="raw"), spans=spans)
                ],
                schema_url=SCHEMA,
            )
        ]
    )
    return request.SerializeToString()


def span_proto(name: str, **fields: Any) -> trace_pb2.Span:
    return trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name=name, **fields)
