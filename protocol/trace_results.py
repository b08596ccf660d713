"""What ``daemon.status`` says of traces (docs/traces.md). Re-exported by
protocol.results; TypedDicts, as there."""

# no ``from __future__ import annotations``: TypedDict must see its types
from typing import TypedDict


class TracesState(TypedDict):
    enabled: bool  # spans and metrics are exported
    endpoint: str | None  # where to (no user or password); None: off, or the OTEL_* default
    content: bool  # prompts, replies and tool data are in the spans
    why: str  # what turned them on or left them off
