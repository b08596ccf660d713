"""The client's trace context (ikigai/_trace.py): the caller's current
OpenTelemetry span, else TRACEPARENT, sent as ``agent.prompt``'s
``traceparent``; and nothing of OpenTelemetry imported by ikictl."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from ikigai._trace import current_traceparent, with_trace

ROOT = Path(__file__).resolve().parents[2]
GIVEN = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_the_current_span_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEPARENT", GIVEN)
    tracer = TracerProvider().get_tracer("t")
    with tracer.start_as_current_span("mine") as span:
        ctx = span.get_span_context()
        sent = with_trace({"agent": "a", "text": "hi"}, None)
    assert sent["traceparent"] == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    # outside any span, the environment's
    assert current_traceparent() == GIVEN


def test_an_explicit_traceparent_wins_and_none_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACEPARENT", raising=False)
    assert with_trace({}, GIVEN) == {"traceparent": GIVEN}
    assert with_trace({}, None) == {}
    monkeypatch.setenv("TRACEPARENT", "")
    assert with_trace({}, None) == {}


def test_ikictl_imports_nothing_of_opentelemetry() -> None:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import ikictl.cli, ikictl.stream, ikigai._trace"],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=True,
    )
    loaded = {ln.split("|")[-1].strip().split(".")[0] for ln in r.stderr.splitlines() if "|" in ln}
    assert "ikictl" in loaded and "opentelemetry" not in loaded
