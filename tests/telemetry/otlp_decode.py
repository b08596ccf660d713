"""OTLP protobuf requests -> plain frozen dataclasses the tests compare.

The receiver (tests/telemetry/otlp_receiver.py) decodes every accepted body
with these, so a test reads ``span.parent_span_id == format(id, "016x")``
instead of walking protobuf messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


@dataclass(frozen=True)
class Event:
    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    time_ns: int = 0


@dataclass(frozen=True)
class Link:
    trace_id: str
    span_id: str
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Span:
    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    parent_span_id: str  # "" for a root span
    name: str
    kind: str  # "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER", "UNSPECIFIED"
    attributes: dict[str, Any]
    events: list[Event]
    links: list[Link]
    status_code: str  # "UNSET", "OK", "ERROR"
    status_message: str
    start_ns: int
    end_ns: int
    resource: dict[str, Any]
    scope: str
    schema_url: str


@dataclass(frozen=True)
class Metric:
    """One metric of one export: a cumulative metric arrives again, with its
    new totals, in every later export."""

    name: str
    unit: str
    kind: str  # "histogram", "sum", "gauge", "exponential_histogram", "summary"
    data_points: list[dict[str, Any]]
    description: str = ""
    temporality: str = ""  # "CUMULATIVE" or "DELTA" for sums and histograms
    monotonic: bool | None = None  # sums only
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    schema_url: str = ""


def any_value(value: common_pb2.AnyValue) -> Any:
    """An AnyValue as str/bool/int/float/bytes/list/dict (None when unset)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, which)


def attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


def _enum_name(enum: EnumTypeWrapper, number: int, prefix: str) -> str:
    # proto3 enums are open: a number this proto version does not know stays a number
    try:
        return enum.Name(number).removeprefix(prefix)
    except ValueError:
        return str(number)


def _span(s: trace_pb2.Span, resource: dict[str, Any], scope: str, schema_url: str) -> Span:
    return Span(
        trace_id=s.trace_id.hex(),
        span_id=s.span_id.hex(),
        parent_span_id=s.parent_span_id.hex(),
        name=s.name,
        kind=_enum_name(trace_pb2.Span.SpanKind, s.kind, "SPAN_KIND_"),
        attributes=attributes(s.attributes),
        events=[Event(e.name, attributes(e.attributes), e.time_unix_nano) for e in s.events],
        links=[Link(k.trace_id.hex(), k.span_id.hex(), attributes(k.attributes)) for k in s.links],
        status_code=_enum_name(trace_pb2.Status.StatusCode, s.status.code, "STATUS_CODE_"),
        status_message=s.status.message,
        start_ns=s.start_time_unix_nano,
        end_ns=s.end_time_unix_nano,
        resource=resource,
        scope=scope,
        schema_url=schema_url,
    )


def decode_spans(body: bytes) -> list[Span]:
    """The spans of a serialized ExportTraceServiceRequest (DecodeError if it is not one)."""
    request = ExportTraceServiceRequest.FromString(body)
    spans = []
    for rs in request.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            schema_url = ss.schema_url or rs.schema_url
            spans.extend(_span(s, resource, ss.scope.name, schema_url) for s in ss.spans)
    return spans


def _point(p: Any) -> dict[str, Any]:
    return {
        "attributes": attributes(p.attributes),
        "start_ns": p.start_time_unix_nano,
        "time_ns": p.time_unix_nano,
    }


def _number_point(p: metrics_pb2.NumberDataPoint) -> dict[str, Any]:
    which = p.WhichOneof("value")
    return {**_point(p), "value": None if which is None else getattr(p, which)}


def _histogram_point(p: metrics_pb2.HistogramDataPoint) -> dict[str, Any]:
    return {
        **_point(p),
        "count": p.count,
        "sum": p.sum if p.HasField("sum") else None,
        "bucket_counts": list(p.bucket_counts),
        "explicit_bounds": list(p.explicit_bounds),
        "min": p.min if p.HasField("min") else None,
        "max": p.max if p.HasField("max") else None,
    }


def _exponential_point(p: metrics_pb2.ExponentialHistogramDataPoint) -> dict[str, Any]:
    return {
        **_point(p),
        "count": p.count,
        "sum": p.sum if p.HasField("sum") else None,
        "scale": p.scale,
        "zero_count": p.zero_count,
        "positive": {"offset": p.positive.offset, "bucket_counts": list(p.positive.bucket_counts)},
        "negative": {"offset": p.negative.offset, "bucket_counts": list(p.negative.bucket_counts)},
        "min": p.min if p.HasField("min") else None,
        "max": p.max if p.HasField("max") else None,
    }


def _summary_point(p: metrics_pb2.SummaryDataPoint) -> dict[str, Any]:
    quantiles = [(q.quantile, q.value) for q in p.quantile_values]
    return {**_point(p), "count": p.count, "sum": p.sum, "quantile_values": quantiles}


def _temporality(number: int) -> str:
    return _enum_name(metrics_pb2.AggregationTemporality, number, "AGGREGATION_TEMPORALITY_")


def _metric(m: metrics_pb2.Metric, resource: dict[str, Any], scope: str, schema_url: str) -> Metric:
    kind = m.WhichOneof("data") or ""
    points: list[dict[str, Any]] = []
    temporality = ""
    monotonic: bool | None = None
    if kind == "gauge":
        points = [_number_point(p) for p in m.gauge.data_points]
    elif kind == "sum":
        points = [_number_point(p) for p in m.sum.data_points]
        temporality = _temporality(m.sum.aggregation_temporality)
        monotonic = m.sum.is_monotonic
    elif kind == "histogram":
        points = [_histogram_point(p) for p in m.histogram.data_points]
        temporality = _temporality(m.histogram.aggregation_temporality)
    elif kind == "exponential_histogram":
        points = [_exponential_point(p) for p in m.exponential_histogram.data_points]
        temporality = _temporality(m.exponential_histogram.aggregation_temporality)
    elif kind == "summary":
        points = [_summary_point(p) for p in m.summary.data_points]
    return Metric(
        name=m.name,
        unit=m.unit,
        kind=kind,
        data_points=points,
        description=m.description,
        temporality=temporality,
        monotonic=monotonic,
        resource=resource,
        scope=scope,
        schema_url=schema_url,
    )


def decode_metrics(body: bytes) -> list[Metric]:
    """The metrics of a serialized ExportMetricsServiceRequest (DecodeError if it is not one)."""
    request = ExportMetricsServiceRequest.FromString(body)
    metrics = []
    for rm in request.resource_metrics:
        resource = attributes(rm.resource.attributes)
        for sm in rm.scope_metrics:
            schema_url = sm.schema_url or rm.schema_url
            metrics.extend(_metric(m, resource, sm.scope.name, schema_url) for m in sm.metrics)
    return metrics
