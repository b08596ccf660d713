"""Agent events to control-socket subscribers: encoded once, no hops.

A ``Forward`` is one ``agent.subscribe`` of one connection, attached to the
agent's EventLog as a subscriber. Publishing an event appends its notification
line to the connection's outgoing buffer and nothing more: no channel, no task
per subscription. The connection's writer sends whatever is pending in one
write when it next runs, so a burst of events costs one syscall, not one each.

The event's JSON is made once per event, whatever the number of subscribers:
each line is the subscription's own prefix plus that shared tail.

A subscriber that reads slower than its agent talks never slows the agent:
once its connection holds ``event_room`` lines, the subscription gets a
``lagged`` event (with the seq to resume from) and ends, keeping the rest of
the buffer for answers.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import msgspec
import structlog

import protocol as p
from agents.eventlog import EventLog
from agents.events import Lagged, LogEntry

log = structlog.get_logger("ikigai.control")

_encoder = msgspec.json.Encoder()  # shared with events.py


class _Note(msgspec.Struct):
    agent: str
    turn: str | None
    seq: int
    event: Any


# the entry whose tail was made last: every subscriber of an event is offered
# it in a row, so one slot is enough to encode each event once
_last: list[Any] = [None, b""]


def _tail(entry: LogEntry) -> bytes:
    """Everything of an ``agent.event`` line after ``"subscription":N,``."""
    if entry is _last[0]:
        return _last[1]  # type: ignore[no-any-return]
    note = _Note(entry.agent, entry.turn, entry.seq, entry.event)
    try:
        body = _encoder.encode(note)
    except UnicodeEncodeError:
        # a text with a lone surrogate (taken in unchecked somewhere): sent
        # with U+FFFD, so the subscriber keeps every seq and the daemon lives
        log.exception(
            "an event held invalid Unicode; sent with U+FFFD", agent=entry.agent, seq=entry.seq
        )
        body = _encoder.encode(without_surrogates(msgspec.to_builtins(note)))
    tail = body[1:] + b"}\n"
    _last[0], _last[1] = entry, tail
    return tail


_LONE = re.compile("[\ud800-\udfff]")


def without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    return value


class Outlet(Protocol):
    """What a Forward needs of its connection (daemon/server/connection.py Connection)."""

    closed: bool
    event_room: int  # queued lines past which events end their subscription
    subscriptions: dict[int, Forward]

    @property
    def queued(self) -> int: ...

    def push(self, data: bytes) -> None: ...

    def send(self, message: dict[str, Any]) -> None: ...


class Forward:
    """One subscription of one connection to one agent's events."""

    __slots__ = ("closed", "conn", "log", "prefix", "sid")

    def __init__(self, conn: Outlet, sid: int, log: EventLog) -> None:
        self.conn = conn
        self.sid = sid
        self.log = log
        self.closed = False
        self.prefix = (
            b'{"jsonrpc":"2.0","method":"agent.event","params":{"subscription":'
            + str(sid).encode()
            + b","
        )

    def start(self, from_seq: int) -> None:
        """Send the kept entries from ``from_seq``, then follow the log. Called
        once the subscribe answer is queued, so it always comes first; the
        backlog covers whatever was published in between."""
        if self.closed:
            return
        for entry in self.log.backlog(from_seq):
            if not self.offer(entry):
                return
        if self.log.closed:
            self.end()
        else:
            self.log.attach(self)

    def offer(self, entry: LogEntry) -> bool:
        if self.closed:
            return False
        conn = self.conn
        if conn.closed:
            self.closed = True
            return False
        if conn.queued >= conn.event_room:
            lag = LogEntry(
                seq=entry.seq,
                agent=entry.agent,
                turn=entry.turn,
                event=Lagged(resume_from=entry.seq, oldest_kept=self.log.oldest_seq),
            )
            conn.push(self.prefix + _tail(lag))
            self._finish("lagged")
            return False
        conn.push(self.prefix + _tail(entry))
        return True

    def end(self) -> None:
        """The agent ended: the subscription ends after what was sent."""
        self._finish(self.log.end_reason)

    def cancel(self) -> None:
        """agent.unsubscribe or the connection's end: stop, say nothing."""
        self.closed = True
        self.log.detach(self)

    def _finish(self, reason: str) -> None:
        self.closed = True
        self.log.detach(self)
        if self.conn.subscriptions.pop(self.sid, None) is not None:
            self.conn.send(
                {
                    "jsonrpc": "2.0",
                    "method": p.SUBSCRIPTION_END,
                    "params": {"subscription": self.sid, "reason": reason},
                }
            )
