"""OpenTelemetry for the daemon: the SDK's tracer and meter providers with
OTLP/HTTP exporters, built only when traces are on (``traces_plan``): off,
nothing of the SDK is imported.

Spans go through a batch processor and metrics through a periodic reader,
each exporting on its own thread: a slow or unreachable collector costs
the agents nothing, and the exporter's own log lines say it failed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import structlog
import trio

from daemon.config.traces import TracesConfig, traces_plan
from protocol.version import __version__

if TYPE_CHECKING:
    from agents.tracing import Tracer

log = structlog.get_logger("ikigai.traces")

SHUTDOWN_WAIT = 5.0  # seconds the last export may take at a daemon stop


def _env_endpoint(env: Mapping[str, str] | None) -> str | None:
    env = os.environ if env is None else env
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return traces.removesuffix("/v1/traces") if traces else env.get("OTEL_EXPORTER_OTLP_ENDPOINT")


def _shown(url: str | None) -> str:
    """A URL for the log and status: no user or password in it."""
    if not url:
        return "from the OTEL_* variables (default http://localhost:4318)"
    parts = urlsplit(url)
    if not parts.username:
        return url
    host = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname or ""
    return parts._replace(netloc=host).geturl()


def start_traces(
    config: TracesConfig, env: Mapping[str, str] | None = None
) -> tuple[Tracer | None, dict[str, Any]]:
    """The daemon's tracer (None when traces are off, or the SDK is missing),
    and what ``daemon.status`` says of them."""
    plan = traces_plan(config, os.environ if env is None else env)
    state: dict[str, Any] = {
        "enabled": False,
        "endpoint": None,
        "content": plan.content,
        "why": plan.why,
    }
    if not plan.enabled:
        log.debug("traces off", why=plan.why)
        return None, state
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from agents.tracing._otel import otel_tracer
    except ImportError as e:
        log.warning(
            "traces asked for but the OpenTelemetry SDK is not installed: "
            "pip install 'ikigai[traces]' (traces stay off)",
            why=plan.why,
            missing=str(e.name or e),
        )
        state["why"] = "the OpenTelemetry SDK is not installed (pip install 'ikigai[traces]')"
        return None, state
    resource = Resource.create(
        {"service.name": plan.service_name, "service.version": __version__}
    )
    # shut down by stop_traces, bounded: the SDK's own exit hook would wait on
    # a collector that does not answer
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(plan.traces_url)))
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(plan.metrics_url))
    meter_provider = MeterProvider(
        resource=resource, metric_readers=[reader], shutdown_on_exit=False
    )
    log.info(
        "traces on",
        why=plan.why,
        endpoint=_shown(plan.traces_url),
        content=plan.content,
        service=plan.service_name,
    )
    tracer = otel_tracer(tracer_provider, meter_provider, content=plan.content, version=__version__)
    base = plan.traces_url.removesuffix("/v1/traces") if plan.traces_url else _env_endpoint(env)
    return tracer, {**state, "enabled": True, "endpoint": _shown(base) if base else None}


async def stop_traces(tracer: Tracer | None) -> None:
    """Export what is left, waiting at most SHUTDOWN_WAIT: a collector that
    does not answer never holds a daemon stop."""
    if tracer is None:
        return
    with trio.move_on_after(SHUTDOWN_WAIT) as waited:
        await trio.to_thread.run_sync(tracer.shutdown, abandon_on_cancel=True)
    if waited.cancelled_caught:
        log.warning("traces: the last export did not finish in time", seconds=SHUTDOWN_WAIT)
