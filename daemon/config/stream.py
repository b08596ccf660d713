"""The ``stream`` section of config.json: how events reach socket subscribers."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

__all__ = ["StreamConfig"]


class StreamConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``stream``: event delivery to ``agent.subscribe`` connections."""

    # seconds a connection's writer waits after the first pending event so
    # more go out in the same write: fewer syscalls for subscribers who prefer
    # throughput; 0 sends each burst at once (the lowest latency). Above a
    # second, a terminal would look frozen.
    flush_interval: Annotated[float, Meta(ge=0, le=1)] = 0.0
