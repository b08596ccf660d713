from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Tracer

from .otlp_receiver import OtlpReceiver
from .samples import RESOURCE, SCHEMA


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """An OTLP/HTTP receiver on loopback for the length of one test."""
    with OtlpReceiver() as receiver:
        yield receiver


@pytest.fixture
def tracer_of() -> Iterator[Callable[[SpanExporter], Tracer]]:
    """``tracer_of(exporter)``: a tracer that exports each span as it ends
    (a simple processor: one POST per span, done when ``end()`` returns)."""
    providers: list[TracerProvider] = []

    def make(exporter: SpanExporter) -> Tracer:
        provider = TracerProvider(resource=RESOURCE)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers.append(provider)
        return provider.get_tracer("tests.telemetry", "1.0", schema_url=SCHEMA)

    yield make
    for provider in providers:
        provider.shutdown()
