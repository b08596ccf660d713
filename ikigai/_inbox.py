"""One subscription's notifications waiting to be read, bounded.

A script that subscribes and then reads slowly (or reads another
subscription of the same connection) must not grow the client without
bound: past ``LIMIT`` waiting events the newer ones are dropped and, once the
reader has taken the rest, it gets a ``lagged`` event of the same shape the
daemon sends, so the subscription resumes from the first one dropped (the
daemon still keeps it, or says what it no longer has).
"""

from __future__ import annotations

from collections import deque

from protocol import EVENT as AGENT_EVENT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LIMIT = 10_000  # events waiting per subscription


class Inbox:
    __slots__ = ("_dropped_from", "_end", "_q", "limit")

    def __init__(self, limit: int = LIMIT) -> None:
        self._q: deque[dict[str, Any]] = deque()
        self._dropped_from: dict[str, Any] | None = None  # params of the first event dropped
        self._end: dict[str, Any] | None = None  # the subscription's end, held behind a gap
        self.limit = limit

    def __len__(self) -> int:
        return len(self._q) + (self._dropped_from is not None) + (self._end is not None)

    def put(self, msg: dict[str, Any]) -> None:
        if msg.get("method") != AGENT_EVENT:  # its end: after everything before it
            if self._dropped_from is None:
                self._q.append(msg)
            else:
                self._end = msg
            return
        if self._dropped_from is not None:
            return
        if len(self._q) >= self.limit:
            params = msg.get("params")
            self._dropped_from = params if isinstance(params, dict) else {}
            return
        self._q.append(msg)

    def get(self) -> dict[str, Any]:
        """The oldest waiting message (the inbox is not empty)."""
        if self._q:
            return self._q.popleft()
        if self._dropped_from is not None:
            first, self._dropped_from = self._dropped_from, None
            seq = first.get("seq")
            return {
                "jsonrpc": "2.0",
                "method": AGENT_EVENT,
                "params": {
                    "subscription": first.get("subscription"),
                    "agent": first.get("agent"),
                    "turn": first.get("turn"),
                    "seq": seq,
                    # the client's own: the daemon still has these events
                    "event": {"type": "lagged", "resume_from": seq, "oldest_kept": seq},
                },
            }
        end, self._end = self._end, None
        assert end is not None, "get() on an empty inbox"
        return end
