"""Subscriptions and turn handles of the client.

``scripts/unasync`` writes ikigai/_stream.py (the synchronous twin) from this
file; edit this one.

A subscription that falls behind (the daemon sends ``lagged`` and ends it,
or the client's own inbox for it fills) is resumed by itself from the first
event missed: the caller sees every event once, in order. Only when the
daemon no longer keeps the missed events does the caller see a ``lagged``
event, whose ``resume_from``..``oldest_kept`` are the seqs lost (read them
from ``history``).
"""

from __future__ import annotations

import contextlib

import protocol as p
from ikigai._structured import typed_answer
from ikigai.errors import DaemonUnreachable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol, Self

    from ikigai.types import AgentEvent
    from protocol import results as R

    class AsyncMethods(Protocol):
        """What a subscription needs of its client (ikigai._amethods has it)."""

        async def call(self, method: str, params: dict[str, Any] | None = None) -> Any: ...
        async def send(self, method: str, params: dict[str, Any] | None = None) -> int: ...
        def route(self, sid: int) -> None: ...
        def unroute(self, sid: int) -> None: ...
        async def next_of(
            self, sid: int, timeout: float | None = None
        ) -> dict[str, Any] | None: ...
        async def cancel(self, agent: str, *, at_boundary: bool = False) -> R.Cancelled: ...
        async def wait_turn(
            self, agent: str, turn: str, *, check: bool = False, timeout: float | None = None
        ) -> R.TurnOutcome: ...


class AsyncSubscription:
    """An agent's events; iterate it. Ends when the agent ends or on ``aclose``."""

    def __init__(self, client: AsyncMethods, agent: str, sid: int, next_seq: int) -> None:
        self.client = client
        self.agent = agent
        self.sid = sid
        self.next_seq = next_seq  # the seq of the next event this subscription yields
        self.resumed = 0  # times it resumed after falling behind
        self.closed = False
        self.end_reason: str | None = None  # why it ended ("agent ended"...)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> AgentEvent:
        ev = await self.next()
        if ev is None:
            raise StopAsyncIteration
        return ev

    async def next(self, timeout: float | None = None) -> AgentEvent | None:
        """The next event; None when the subscription ended (or ``timeout`` passed)."""
        while not self.closed:
            msg = await self.client.next_of(self.sid, timeout)
            if msg is None:
                return None
            params: Any = msg.get("params") or {}
            if msg.get("method") == p.SUBSCRIPTION_END:
                self.end_reason = str(params.get("reason") or "")
                self._forget()
                return None
            event = params.get("event") or {}
            if event.get("type") == "lagged":
                gap = await self._resume(params, event)
                if gap is not None:
                    return gap
                continue
            seq = params.get("seq")
            if isinstance(seq, int):
                if seq < self.next_seq:
                    continue  # already yielded before a resume
                self.next_seq = seq + 1
            return params  # type: ignore[no-any-return]
        return None

    async def _resume(self, params: dict[str, Any], event: dict[str, Any]) -> AgentEvent | None:
        """Subscribe again from the first event missed; the gap, if the daemon
        no longer has some of them (else None)."""
        resume_from = max(int(event.get("resume_from") or 1), self.next_seq)
        oldest = int(event.get("oldest_kept") or resume_from)
        old = self.sid
        self.client.unroute(old)
        await self.client.send(p.AGENT_UNSUBSCRIBE, {"subscription": old})
        start = max(resume_from, oldest)
        try:
            sub: R.Subscribed = await self.client.call(
                p.AGENT_SUBSCRIBE, {"agent": self.agent, "from_seq": start}
            )
        except p.RpcError as e:  # the agent is gone: the subscription ends here
            self.end_reason = e.message
            self.closed = True
            return None
        self.sid = sub["subscription"]
        self.client.route(self.sid)
        self.resumed += 1
        if oldest <= resume_from:
            return None
        self.next_seq = start
        gap: AgentEvent = {
            "subscription": self.sid,
            "agent": self.agent,
            "turn": params.get("turn"),
            "seq": resume_from,
            "event": {"type": "lagged", "resume_from": resume_from, "oldest_kept": oldest},
        }
        return gap

    def _forget(self) -> None:
        self.closed = True
        self.client.unroute(self.sid)

    async def aclose(self) -> None:
        """Unsubscribe (nothing more is yielded)."""
        if self.closed:
            return
        self._forget()
        # a connection that is gone took the subscription with it
        with contextlib.suppress(DaemonUnreachable):
            await self.client.send(p.AGENT_UNSUBSCRIBE, {"subscription": self.sid})

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncTurn:
    """One prompt's turn: iterate its events (up to and including
    ``turn_ended``), or ``await wait()`` for how it ended, or both."""

    def __init__(
        self,
        client: AsyncMethods,
        sub: AsyncSubscription,
        turn: str,
        position: int,
        schema: Any = None,
    ) -> None:
        self.client = client
        self.schema = schema  # the prompt's: a type makes wait()'s data an instance of it
        self.agent = sub.agent
        self.id = turn
        self.position = position  # turns queued ahead of it when it was prompted
        self.ended: dict[str, Any] | None = None  # its turn_ended event, once seen
        self._sub = sub
        self._text: list[str] = []

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> AgentEvent:
        while self.ended is None:
            ev = await self._sub.next()
            if ev is None:
                break
            if ev.get("turn") != self.id and ev["event"].get("type") != "lagged":
                continue
            event = ev["event"]
            if event.get("type") == "text_delta":
                self._text.append(str(event.get("text", "")))
            elif event.get("type") == "start":  # a model call: after tools, a new answer
                self._text.clear()
            elif event.get("type") == "turn_ended":
                self.ended = event
                await self._sub.aclose()
            return ev
        raise StopAsyncIteration

    @property
    def text(self) -> str:
        """The text of the turn's latest model call so far: once the turn
        has ended, its answer (the outcome's ``reply``)."""
        return "".join(self._text)

    async def wait(self, *, check: bool = False, timeout: float | None = None) -> R.TurnOutcome:
        """How the turn ended: ``status``, ``reply``, ``error``, ``usage``,
        ``cost_usd`` (events not yet read are dropped). ``check``: raise
        TurnFailed unless it completed."""
        await self._sub.aclose()
        outcome = await self.client.wait_turn(self.agent, self.id, check=check, timeout=timeout)
        return typed_answer(outcome, self.schema) if self.schema is not None else outcome

    async def cancel(self) -> R.Cancelled:
        """Cancel the agent's running turn (this one, once it runs)."""
        return await self.client.cancel(self.agent)

    async def aclose(self) -> None:
        await self._sub.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
