"""A per-agent log of numbered events with live subscribers.

Publishing never blocks the agent: each subscriber has a bounded buffer, and a
subscriber that falls that far behind is dropped with a Lagged notice saying
the seq to resume from. The log keeps only the last ``keep`` entries in memory
(the store has the whole history), so thousands of agents stay cheap.

A subscriber is anything with ``offer(entry) -> bool`` (False: detach me) and
``end()`` (the log closed). ``Subscription`` is the in-process one, an async
iterator over a memory channel; the control socket attaches its own
(daemon/server/connection.py) that writes each entry straight into a connection's
outgoing buffer, so an event costs no task switch per subscriber.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

import trio

from .events import AgentEvent, Lagged, LogEntry


class Subscriber(Protocol):
    def offer(self, entry: LogEntry) -> bool:
        """Take a live entry; False detaches this subscriber from the log."""
        ...

    def end(self) -> None:
        """The log closed (its agent ended)."""
        ...


class Subscription:
    """Async iterator of LogEntry: the backlog, then live entries."""

    def __init__(self, log: EventLog, backlog: list[LogEntry], buffer: int) -> None:
        self._log = log
        self._backlog = deque(backlog)
        self._send, self._recv = trio.open_memory_channel[LogEntry](buffer)
        self._lag: LogEntry | None = None
        self.closed = False

    def offer(self, entry: LogEntry) -> bool:
        try:
            self._send.send_nowait(entry)
        except trio.WouldBlock:
            self._lag = LogEntry(
                seq=entry.seq,
                agent=entry.agent,
                event=Lagged(resume_from=entry.seq, oldest_kept=self._log.oldest_seq),
            )
            self.end()
            return False
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        return True

    def end(self) -> None:
        if not self.closed:
            self.closed = True
            self._send.close()
            self._log.detach(self)

    def close(self) -> None:
        """Stop receiving; entries already buffered can still be read."""
        self.end()

    @property
    def oldest_kept(self) -> int:
        """The oldest seq its agent's log still holds (a resume point older is gone)."""
        return self._log.oldest_seq

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> LogEntry:
        if self._backlog:
            return self._backlog.popleft()
        try:
            # what is buffered is taken without a checkpoint, so a forwarder
            # drains a whole burst in one go instead of one entry per
            # scheduling round (the publisher checkpoints between slices)
            return self._recv.receive_nowait()
        except trio.WouldBlock:
            pass
        except trio.EndOfChannel:
            if self._lag is not None:
                lag, self._lag = self._lag, None
                return lag
            raise StopAsyncIteration from None
        try:
            return await self._recv.receive()
        except trio.EndOfChannel:
            if self._lag is not None:
                lag, self._lag = self._lag, None
                return lag
            raise StopAsyncIteration from None

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EventLog:
    def __init__(
        self, agent: str, *, keep: int = 256, buffer: int = 512, first_seq: int = 1
    ) -> None:
        self.agent = agent
        self.buffer = buffer
        self._keep = keep
        # made on the first event: an idle agent's log holds no buffer
        self._entries: deque[LogEntry] | tuple[()] = ()
        self._next = first_seq
        # a tuple, rebuilt when subscribers come and go: publish walks it as is
        self._subs: tuple[Subscriber, ...] = ()
        self.closed = False
        # why its subscriptions end when it closes: "agent moved" when another
        # daemon runs it now (subscribe there from next_seq: its seq goes on)
        self.end_reason = "agent ended"

    @property
    def next_seq(self) -> int:
        return self._next

    @property
    def oldest_seq(self) -> int:
        return self._entries[0].seq if self._entries else self._next

    @property
    def subscriber_count(self) -> int:
        return len(self._subs)

    def publish(self, event: AgentEvent, turn: str | None = None) -> LogEntry:
        entry = LogEntry(seq=self._next, agent=self.agent, event=event, turn=turn)
        self._next += 1
        if not self._entries and not isinstance(self._entries, deque):
            self._entries = deque(maxlen=self._keep)
        self._entries.append(entry)  # type: ignore[union-attr]
        for sub in self._subs:
            if not sub.offer(entry):
                self.detach(sub)
        return entry

    def subscribe(self, from_seq: int | None = None) -> Subscription:
        """From ``from_seq`` (kept backlog first), or only new events when None."""
        sub = Subscription(self, self.backlog(from_seq), self.buffer)
        if self.closed:
            sub.end()
        else:
            self.attach(sub)
        return sub

    def attach(self, sub: Subscriber) -> None:
        """Offer ``sub`` every entry published from now on (see ``backlog``)."""
        if sub not in self._subs:
            self._subs = (*self._subs, sub)

    def detach(self, sub: Subscriber) -> None:
        if sub in self._subs:
            self._subs = tuple(s for s in self._subs if s is not sub)

    def backlog(self, from_seq: int | None) -> list[LogEntry]:
        """The kept entries from ``from_seq`` on, a Lagged entry first when
        some of them are no longer kept; nothing when None."""
        backlog: list[LogEntry] = []
        if from_seq is not None:
            oldest = self.oldest_seq
            if from_seq < oldest:
                backlog.append(
                    LogEntry(
                        seq=from_seq,
                        agent=self.agent,
                        event=Lagged(resume_from=from_seq, oldest_kept=oldest),
                    )
                )
            backlog.extend(e for e in self._entries if e.seq >= from_seq)
        return backlog

    def close(self) -> None:
        """The agent ended: every subscription ends after what it has buffered."""
        self.closed = True
        subs, self._subs = self._subs, ()
        for sub in subs:
            sub.end()
