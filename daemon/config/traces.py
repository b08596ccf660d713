"""The ``traces`` section of config.json: OpenTelemetry traces and metrics
of agents (agents/tracing), and how the standard ``OTEL_*`` variables of the
daemon's environment turn them on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta

__all__ = ["TracesConfig", "TracesPlan", "traces_fault", "traces_plan"]

_TRUE = {"true", "1", "yes", "on"}


class TracesConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``traces``: spans and metrics exported over OTLP/HTTP (protobuf)."""

    # null: on when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set
    enabled: bool | None = None
    # the collector's base URL (http://host:4318); null: the OTEL_* variables',
    # else the exporter's default http://localhost:4318
    endpoint: Annotated[str, Meta(min_length=1, max_length=2048)] | None = None
    # prompts, replies, tool arguments and results in the spans (scrubbed of
    # secrets); also on with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
    content: bool = False
    service_name: Annotated[str, Meta(min_length=1, max_length=256)] = "ikigaid"


def traces_fault(config: TracesConfig) -> str | None:
    """What is wrong with the section, or None."""
    if config.endpoint is not None:
        parts = urlsplit(config.endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return (
                "traces.endpoint: expected an http:// or https:// URL of an OTLP/HTTP "
                "collector, e.g. http://localhost:4318"
            )
    return None


@dataclass(frozen=True)
class TracesPlan:
    """What the daemon does about traces, the config and environment read."""

    enabled: bool
    traces_url: str | None  # None: the exporter reads the OTEL_* variables itself
    metrics_url: str | None
    content: bool
    service_name: str
    why: str  # what turned them on or left them off, for the log


def traces_plan(config: TracesConfig, env: Mapping[str, str]) -> TracesPlan:
    endpoint = config.endpoint
    from_env = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    content = config.content or (
        env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").lower() in _TRUE
    )
    service = env.get("OTEL_SERVICE_NAME") or config.service_name
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true" and config.enabled is not True:
        enabled, why = False, "OTEL_SDK_DISABLED=true"
    elif config.enabled is not None:
        enabled, why = config.enabled, f"traces.enabled is {str(config.enabled).lower()}"
    elif endpoint:
        enabled, why = True, "traces.endpoint is set"
    elif from_env:
        enabled, why = True, "OTEL_EXPORTER_OTLP_ENDPOINT is set"
    else:
        enabled, why = False, "no OTLP endpoint configured"
    base = endpoint.rstrip("/") if endpoint else None
    return TracesPlan(
        enabled=enabled,
        traces_url=f"{base}/v1/traces" if base else None,
        metrics_url=f"{base}/v1/metrics" if base else None,
        content=content,
        service_name=service,
        why=why,
    )
