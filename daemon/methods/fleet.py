"""``fleet.snapshot``: every live agent (tree, state, model, tokens per
second, spend and budget, what it waits on) and every provider key's queue,
for ``ikictl top``. See docs/protocol.md.

What the actors do not keep, a ``_Watch`` per live agent keeps: attached to
its event log like a subscriber, it notes the last provider wait, approval
and tool, and counts streamed output in a ring of one-second slots (text,
thinking and tool-argument characters as they stream, then corrected by the
output tokens the call reports), so tokens per second cost one add per event
and no allocation. Watches are attached by the first snapshot, so a daemon
nobody runs ``top`` on pays nothing; one no snapshot has read for
``_IDLE_S`` detaches itself at its next event.

``version`` counts the changes the watches see (a state, a provider wait, a
turn's end, an agent's end): a caller passing the version it has and
``wait_s`` is answered when the next change comes (or after ``wait_s``), so
a live view redraws on change without polling. An agent created meanwhile
is seen by the next snapshot.

Usage and budgets come from the store, read again only when an agent
appeared, a turn has ended (at most every ``_STORE_MIN_AGE_S``), or after
``_STORE_MAX_AGE_S`` (a budget set by ``agent.set_budget`` shows within that).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import structlog
import trio

import protocol as p
from agents.events import (
    AgentEnded,
    ApprovalDecided,
    ApprovalRequested,
    LogEntry,
    ProviderWait,
    StateChanged,
    ToolFinished,
    ToolStarted,
    TurnEnded,
)
from daemon.methods.budgets import budget_line
from protocol import params as P
from protocol import results as R
from providers.types import DoneEvent, TextDelta, ThinkingDelta, ToolCallDelta
from store import AgentNotFound

if TYPE_CHECKING:
    from agents.actor import Actor
    from daemon.methods.shapes import ApiHost
    from daemon.server import Connection, Handler
    from store import BudgetState, UsageTotals

__all__ = ["Fleet", "FleetApi"]

log = structlog.get_logger("ikigai.daemon")

_SLOTS = 5  # one-second slots: tokens per second over the last ~5 s
_CHARS_PER_TOKEN = 4  # what a streamed character is worth until the usage says
_IDLE_S = 60.0  # a watch no snapshot read for this long detaches
_STORE_MAX_AGE_S = 2.0
_STORE_MIN_AGE_S = 0.5
_CHANGES = (StateChanged, ProviderWait, TurnEnded, AgentEnded, ApprovalRequested)
_STREAMED = (TextDelta, ThinkingDelta, ToolCallDelta, DoneEvent, TurnEnded)


class _Watch:
    """One agent's subscriber for the fleet (agents/eventlog.py's protocol)."""

    __slots__ = (
        "_at",
        "_chars",
        "_fleet",
        "_started",
        "_streamed",
        "approval",
        "tool",
        "uuid",
        "wait",
    )

    def __init__(self, fleet: Fleet, uuid: str, now: float) -> None:
        self._fleet = fleet
        self.uuid = uuid
        self._chars = [0] * _SLOTS  # characters (x4 per token) streamed in each second
        self._at = [-1] * _SLOTS  # the second each slot counts
        self._started = now
        self._streamed = 0  # characters of the current call, until its usage corrects them
        self.wait: ProviderWait | None = None
        self.approval: ApprovalRequested | None = None
        self.tool: str | None = None

    def _count(self, chars: int) -> None:
        sec = int(time.monotonic())
        i = sec % _SLOTS
        if self._at[i] != sec:
            self._at[i] = sec
            self._chars[i] = 0
        self._chars[i] += chars

    def note(self, ev: object, *, replay: bool = False) -> bool:
        """Take one event; True when it changes what a snapshot shows.
        ``replay``: from the backlog, for the waits only (not a rate)."""
        t = type(ev)
        if replay and t in _STREAMED:
            return False
        if t is TextDelta or t is ThinkingDelta:
            n = len(ev.text)  # type: ignore[attr-defined]
            self._streamed += n
            self._count(n)
        elif t is ToolCallDelta:
            n = len(ev.arguments)  # type: ignore[attr-defined]
            self._streamed += n
            self._count(n)
        elif t is DoneEvent:
            reported = ev.usage.output_tokens * _CHARS_PER_TOKEN  # type: ignore[attr-defined]
            if reported:  # a provider that reports none leaves the estimate
                self._count(reported - self._streamed)
            self._streamed = 0
        elif t is ProviderWait:
            self.wait = ev  # type: ignore[assignment]
            return True
        elif t is ApprovalRequested:
            self.approval = ev  # type: ignore[assignment]
            return True
        elif t is ApprovalDecided:
            self.approval = None
        elif t is ToolStarted:
            self.tool = ev.name  # type: ignore[attr-defined]
        elif t is ToolFinished:
            self.tool = None
        elif t is StateChanged:
            if ev.state != "waiting_for_provider":  # type: ignore[attr-defined]
                self.wait = None
            return True
        elif t in _CHANGES:
            if t is TurnEnded:
                self._fleet.turns_ended += 1
            return True
        return False

    def offer(self, entry: LogEntry) -> bool:
        fleet = self._fleet
        if self.note(entry.event):
            fleet.changed()
        if fleet.read_at < time.monotonic() - _IDLE_S:
            fleet.forget(self.uuid)
            return False
        return True

    def end(self) -> None:
        self._fleet.forget(self.uuid)
        self._fleet.changed()

    def tokens_per_s(self, now: float) -> float:
        sec = int(now)
        chars = sum(c for c, at in zip(self._chars, self._at, strict=True) if sec - at < _SLOTS)
        # the window: the slots' whole seconds and this one's part, or less
        # for a watch younger than that
        span = max(1.0, min(now - self._started, _SLOTS - 1 + (now - sec)))
        return max(0.0, chars / _CHARS_PER_TOKEN / span)

    def waiting(self, state: str) -> R.FleetWait | None:
        w, a = self.wait, self.approval
        if state == "waiting_for_provider" and w is not None:
            return {
                "on": "provider",
                "provider": w.provider,
                "position": w.position,
                "expected_wait_s": w.expected_wait_s,
                "reason": w.reason,
            }
        if state == "waiting_for_approval" and a is not None:
            return {"on": "approval", "approval": a.approval, "tool": a.tool}
        if state == "executing_tool" and self.tool is not None:
            return {"on": "tool", "tool": self.tool}
        return None


class Fleet:
    """The watches of the live agents, the change counter, and the store's
    last usage and budgets."""

    def __init__(self) -> None:
        self.watches: dict[str, _Watch] = {}
        self.version = 0
        self.turns_ended = 0
        self.read_at = time.monotonic()
        self._changed = trio.Event()
        self._read_turns = -1  # turns_ended when the store was last read
        self._read_agents: frozenset[str] = frozenset()
        self._read_time = -_STORE_MAX_AGE_S
        self.usage: dict[str, UsageTotals] = {}
        self.budgets: dict[str, BudgetState | None] = {}

    def changed(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()

    def forget(self, uuid: str) -> None:
        self.watches.pop(uuid, None)

    def watch(self, actor: Actor) -> _Watch:
        w = self.watches.get(actor.uuid)
        if w is None:
            w = self.watches[actor.uuid] = _Watch(self, actor.uuid, time.monotonic())
            # what it already waits on: the kept backlog, read once
            for entry in actor.log.backlog(actor.log.oldest_seq):
                w.note(entry.event, replay=True)
            actor.log.attach(w)
        return w

    async def wait_change(self, since: int, wait_s: float) -> None:
        if since != self.version or wait_s <= 0:
            return
        with trio.move_on_after(wait_s):
            await self._changed.wait()

    def stale(self, uuids: frozenset[str]) -> bool:
        """Whether the store's usage and budgets need reading again (a busy
        fleet's ended turns: at most every _STORE_MIN_AGE_S, as each read
        sums every agent's usage)."""
        age = time.monotonic() - self._read_time
        return (
            not uuids <= self._read_agents
            or age > _STORE_MAX_AGE_S
            or (self.turns_ended != self._read_turns and age > _STORE_MIN_AGE_S)
        )

    def read(self, uuids: frozenset[str], turns: int) -> None:
        self._read_turns, self._read_agents, self._read_time = turns, uuids, time.monotonic()


def _budgets(store: Any, uuids: list[str]) -> dict[str, BudgetState | None]:
    """The nearest budget in force on each agent (in the store's thread)."""
    out: dict[str, BudgetState | None] = {}
    for uuid in uuids:
        try:
            states = store.budgets_of(uuid)
        except AgentNotFound:  # removed meanwhile
            states = []
        out[uuid] = states[0] if states else None
    return out


def _brief(t: UsageTotals | None) -> R.UsageBrief:
    if t is None:
        return {"turns": 0, "calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    return {
        "turns": t.turns,
        "calls": t.calls,
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
        "cost_usd": t.cost_usd,
    }


def _limiter(s: Any, wall: float) -> R.FleetLimiter:
    paused = float(s["paused_for_s"])
    return {
        "provider": s["provider"],
        "key": s["key"],
        "in_flight": s["in_flight"],
        "max_concurrent": s["max_concurrent"],
        "queued": dict(s["queued"]),
        "paused_for_s": paused,
        "paused_until": wall + paused if paused > 0 else None,
        "pause_reason": s["pause_reason"],
        "buckets": [dict(b) for b in s["buckets"]],  # type: ignore[misc]
    }


class FleetApi:
    def __init__(self, host: ApiHost) -> None:
        self.host = host
        self.db = host.db
        self.fleet = Fleet()

    def handlers(self) -> dict[str, Handler]:
        return {p.FLEET_SNAPSHOT: self.snapshot}

    async def snapshot(self, conn: Connection, params: P.FleetSnapshot) -> R.FleetSnapshot:
        fleet = self.fleet
        if params.since is not None:
            await fleet.wait_change(params.since, params.wait_s)
        fleet.read_at = time.monotonic()
        sup = self.host.sup
        actors = list(sup.actors.values())
        watches = [fleet.watch(a) for a in actors]
        uuids = [a.uuid for a in actors]
        live = frozenset(uuids)
        if fleet.stale(live):
            turns = fleet.turns_ended
            fleet.usage = await self.db.usage_totals()
            fleet.budgets = await self.db.call(_budgets, self.db.store, uuids)
            fleet.read(live, turns)
        shorts = await self.db.short_refs(uuids)
        now, wall = time.monotonic(), time.time()
        agents: list[R.FleetAgent] = []
        for a, w in zip(actors, watches, strict=True):
            if not a.alive:
                continue
            budget = fleet.budgets.get(a.uuid)
            agents.append(
                {
                    "uuid": a.uuid,
                    "short": shorts.get(a.uuid, a.uuid[:8]),
                    "name": a.name,
                    "parent": a.parent,
                    "tree": a.tree,
                    "state": a.state,
                    "provider": a.provider,
                    "model": a.model,
                    "thinking_level": a.thinking_level,
                    "priority": a.priority,
                    "queued": a.queued,
                    "turn": a.current_turn,
                    "tokens_per_s": round(w.tokens_per_s(now), 1),
                    "usage": _brief(fleet.usage.get(a.uuid)),
                    "budget": None if budget is None else budget_line(budget),
                    "waiting": w.waiting(a.state),
                }
            )
        limiters = [_limiter(s, wall) for s in sup.pool.limiters.snapshot()]
        return {"at": wall, "version": fleet.version, "agents": agents, "limiters": limiters}
