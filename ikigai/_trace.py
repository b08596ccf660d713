"""The caller's trace context, sent with ``agent.prompt`` so a script's own
trace continues into the agent's turn (docs/traces.md).

OpenTelemetry is never imported here: a program that traces has imported it
already, and one that does not pays nothing.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # importing typing itself costs ikictl start-up time
if TYPE_CHECKING:
    from typing import Any


def current_traceparent() -> str | None:
    """The W3C traceparent of the caller's current OpenTelemetry span, else
    the ``TRACEPARENT`` environment variable (how a traced shell script hands
    its context to ``ikictl send``), else None."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is not None:
        try:
            ctx = trace.get_current_span().get_span_context()
            if ctx.is_valid:
                flags = int(ctx.trace_flags) & 0xFF
                return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{flags:02x}"
        except Exception:  # a tracing library of another shape: no context, no failure
            pass
    return os.environ.get("TRACEPARENT") or None


def with_trace(params: dict[str, Any], traceparent: str | None) -> dict[str, Any]:
    """``params`` with the given traceparent, else the current span's."""
    value = traceparent if traceparent is not None else current_traceparent()
    if value:
        params["traceparent"] = value
    return params
