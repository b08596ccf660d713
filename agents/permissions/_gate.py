"""The gate every tool call passes before it runs.

The policy (``Permissions.decide``) says allow, deny or ask. Allow and deny are
recorded (a ``permission`` history row) and done; an ask is first matched
against what earlier answers remembered (``remember: agent`` — this agent,
kept in history — or ``session`` — every agent until the daemon stops), else
it becomes a pending approval: a row in the store *before* the
``approval_requested`` event goes out, so a daemon stop never loses it.
The turn then waits until a client answers (``Supervisor.approve``), the
configured timeout passes (a deny), or the turn is cancelled (a deny,
"turn cancelled"). A daemon stop while waiting leaves the approval pending:
the turn resumes at its tool step after the restart and asks again with the
same approval id.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio

from providers.types import ToolCallBlock
from store import ApprovalClosed, ApprovalRecord

from ..events import AgentEvent, AgentState, ApprovalDecided, ApprovalRequested
from ..store import AsyncStore

if TYPE_CHECKING:
    from . import Permissions

# (policy, rule label, tool): what a remembered answer allows. The tool is part
# of it so that "always" under a rule that covers many tools (a glob, or the
# policy's fallback for every external tool) allows the one tool asked about.
Key = tuple[str, str, str]


@dataclass
class _Waiter:
    event: trio.Event = field(default_factory=trio.Event)
    record: ApprovalRecord | None = None
    remember: str = "once"


class Approvals:
    """The daemon's approvals in memory: the turns waiting on each id, and the
    (policy, rule) pairs remembered answers allow. One per supervisor, so a
    ``session`` answer holds for every agent until the daemon stops, and a
    config reload (a new Permissions) keeps it."""

    def __init__(self) -> None:
        self.session: set[Key] = set()
        self._agent: dict[str, set[Key]] = {}  # loaded from history on first use
        self._waiting: dict[str, _Waiter] = {}

    async def remembered(self, db: AsyncStore, agent_uuid: str) -> set[Key]:
        if agent_uuid not in self._agent:
            self._agent[agent_uuid] = await db.call(db.store.remembered_rules, agent_uuid)
        return self._agent[agent_uuid]

    def remember(self, agent_uuid: str, key: Key, how: str) -> None:
        if how == "session":
            self.session.add(key)
        elif how == "agent" and agent_uuid in self._agent:
            # not loaded yet: the history row just written is read with the rest
            self._agent[agent_uuid].add(key)

    def deliver(self, record: ApprovalRecord, remember: str = "once") -> bool:
        """Wake the turn waiting on this approval (False: none waits now; it
        reads the decision from the store when it asks again)."""
        waiter = self._waiting.get(record.id)
        if waiter is None:
            return False
        waiter.record, waiter.remember = record, remember
        waiter.event.set()
        return True

    async def answer_covered(
        self, db: AsyncStore, answered: ApprovalRecord, remember: str, by: str
    ) -> None:
        """"Always" also answers the asks already pending that it covers (the
        same policy, rule and tool; this agent's, or every agent's for the
        session), so a step that asked twice is not left waiting on the twin."""
        key = (answered.policy, answered.rule, answered.tool)
        scope = None if remember == "session" else answered.agent_uuid
        for other in await db.call(db.store.pending_approvals, scope):
            if (other.policy, other.rule, other.tool) != key:
                continue
            try:
                record = await db.call(
                    db.store.decide_approval,
                    other.id,
                    "allow",
                    by=f"{by}, remembered from {answered.id}",
                    remember="once",
                )
            except (ApprovalClosed, LookupError):  # answered meanwhile by someone else
                continue
            self.deliver(record, "once")

    def waiting(self, approval_id: str) -> bool:
        return approval_id in self._waiting

    def wait_on(self, approval_id: str) -> _Waiter:
        waiter = self._waiting[approval_id] = _Waiter()
        return waiter

    def forget(self, approval_id: str) -> None:
        self._waiting.pop(approval_id, None)


class GateHost(Protocol):
    uuid: str
    cwd: Path
    policy: list[str] | None

    def publish(self, event: AgentEvent, turn: str | None = None) -> None: ...
    def set_state(self, state: AgentState) -> None: ...


def new_approval_id() -> str:
    return f"ap-{secrets.token_hex(6)}"


class Gate:
    """One tool step's pass through the gate (see the module doc)."""

    def __init__(
        self,
        *,
        host: GateHost,
        db: AsyncStore,
        permissions: Permissions,
        approvals: Approvals,
        turn: str,
        timeout: float | None,
        suspending: Callable[[], bool],
    ) -> None:
        self.host = host
        self.db = db
        self.permissions = permissions
        self.approvals = approvals
        self.turn = turn
        self.timeout = timeout
        # a daemon stop, not a user's cancel: leave the approval pending
        self.suspending = suspending

    async def check(
        self, calls: Sequence[ToolCallBlock], *, resume: bool = False
    ) -> list[str | None]:
        """For each call: None if it may run, else the error text the model gets.
        ``resume``: the turn's step after a restart: approvals it asked before
        are asked again (or their decision, if one came meanwhile, is used)."""
        host, store = self.host, self.db.store
        earlier: dict[str, ApprovalRecord] = {}
        if resume:
            for r in await self.db.call(store.approvals_of_turn, host.uuid, self.turn):
                earlier[r.tool_call_id] = r
        verdicts: list[str | None] = [None] * len(calls)
        asks: list[tuple[int, ApprovalRecord]] = []
        for i, call in enumerate(calls):
            if call.id in earlier:
                asks.append((i, earlier[call.id]))
                continue
            d = self.permissions.decide(host.policy, call, host.cwd)
            base = {"tool_call_id": call.id, "tool": call.name, "rule": d.rule, "policy": d.policy}
            if d.action == "deny":
                reason = f"the {d.policy} policy does not allow this call"
                verdicts[i] = f"denied by policy ({d.rule}): {reason}"
                await self._record(base, "deny", "policy", reason)
                continue
            if d.action == "allow":
                await self._record(base, "allow", "policy", None)
                continue
            key = (d.policy, d.rule, call.name)
            if key in self.approvals.session:
                await self._record(base, "allow", "remembered for the session", None)
                continue
            if key in await self.approvals.remembered(self.db, host.uuid):
                await self._record(base, "allow", "remembered for this agent", None)
                continue
            record = await self.db.call(
                store.add_approval,
                host.uuid,
                approval_id=new_approval_id(),
                turn=self.turn,
                call=call,
                rule=d.rule,
                policy=d.policy,
            )
            asks.append((i, record))
        if asks:
            decided: dict[int, ApprovalRecord] = {}
            host.set_state("waiting_for_approval")
            async with trio.open_nursery() as nursery:
                for i, record in asks:
                    nursery.start_soon(self._ask, i, record, decided)
            for i, record in decided.items():
                if record.decision != "allow":
                    why = record.reason or "no reason given"
                    verdicts[i] = f"denied by {record.decided_by}: {why}"
        return verdicts

    async def _record(
        self, base: dict[str, Any], decision: str, by: str, reason: str | None
    ) -> None:
        data = {**base, "decision": decision, "by": by, "reason": reason}
        await self.db.call(self.db.store.record_permission, self.host.uuid, data)

    async def _ask(self, i: int, record: ApprovalRecord, out: dict[int, ApprovalRecord]) -> None:
        if record.decision is not None:  # decided before a restart, not yet run
            out[i] = record
            return
        host, approvals = self.host, self.approvals
        waiter = approvals.wait_on(record.id)  # before the event: no answer can be missed
        try:
            host.publish(
                ApprovalRequested(
                    approval=record.id,
                    tool=record.tool,
                    arguments=record.arguments,
                    tool_call_id=record.tool_call_id,
                    rule=record.rule,
                    policy=record.policy,
                ),
                self.turn,
            )
            # answered while no turn waited on it (between a restart and this ask)?
            fresh = await self.db.call(self.db.store.get_approval, record.id)
            if fresh is not None and fresh.decision is not None and waiter.record is None:
                waiter.record = fresh
            if waiter.record is None:
                with trio.move_on_after(math.inf if self.timeout is None else self.timeout):
                    await waiter.event.wait()
            if waiter.record is None:
                waiter.record = await self._close(
                    record, "timeout", f"no answer within {self.timeout:g} s"
                )
        except trio.Cancelled:
            if not self.suspending():
                with trio.CancelScope(shield=True):
                    await self._close(record, "cancel", "turn cancelled")
            raise
        finally:
            approvals.forget(record.id)
        final = waiter.record
        out[i] = final
        host.publish(
            ApprovalDecided(
                approval=final.id,
                decision="allow" if final.decision == "allow" else "deny",
                by=final.decided_by or "",
                reason=final.reason,
                remember=waiter.remember,  # type: ignore[arg-type]
            ),
            self.turn,
        )

    async def _close(self, record: ApprovalRecord, by: str, reason: str) -> ApprovalRecord:
        """Deny a pending approval ourselves; if a client won the race, its answer stands."""
        try:
            closed = await self.db.call(
                self.db.store.decide_approval, record.id, "deny", by=by, reason=reason
            )
        except ApprovalClosed as e:
            return e.record
        if by == "cancel":
            self.host.publish(
                ApprovalDecided(approval=record.id, decision="deny", by=by, reason=reason),
                self.turn,
            )
        return closed
