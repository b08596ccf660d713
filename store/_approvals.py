"""Tool calls the gate asked about (table ``approvals``) and the ``permission``
history rows every gate decision writes.

An approval is a row before its ``approval_requested`` event is published, so
one asked just before a daemon stop is asked again after the restart. It is
decided once: ``decide_approval`` updates it only while it is pending and
writes its permission row in the same transaction, so two clients answering
at once get one winner and the loser is told who won.

``call_json`` holds ``{"call": ToolCallBlock, "policy": NAME}``: the call as
msgspec wrote it and the name of the policy whose rule asked.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

import msgspec
import sqlalchemy as sa

from providers.types import ToolCallBlock

from ._base import StoreBase
from ._errors import StoreError
from ._rows import Prepared, now
from ._schema import agents, approvals, messages
from ._types import ApprovalRecord, MessageRecord

Verdict = Literal["allow", "deny"]


class NoSuchApproval(StoreError, LookupError):
    """No approval has that id."""


class ApprovalClosed(StoreError):
    """The approval was already decided; ``record`` says how and by whom."""

    def __init__(self, record: ApprovalRecord) -> None:
        super().__init__(
            f"approval {record.id} was already decided: {record.decision} by {record.decided_by}"
            + (f" ({record.reason})" if record.reason else "")
        )
        self.record = record


class _Stored(msgspec.Struct, frozen=True):
    call: ToolCallBlock
    policy: str


_encode = msgspec.json.encode
_decode = msgspec.json.Decoder(_Stored).decode


def permission_row(data: dict[str, Any]) -> Prepared:
    """The history row of one gate decision; ``content`` is its one-line summary."""
    how = f"{data['rule']}; policy {data['policy']}; by {data['by']}"
    text = f"{data['decision']} {data['tool']} ({how})"
    if data.get("reason"):
        text += f": {data['reason']}"
    return Prepared("permission", text, data)


class ApprovalsMixin(StoreBase):
    """Store methods for approvals and permission rows (see the module doc)."""

    def add_approval(
        self,
        agent_uuid: str,
        *,
        approval_id: str,
        turn: str,
        call: ToolCallBlock,
        rule: str,
        policy: str,
    ) -> ApprovalRecord:
        """A pending approval, committed when this returns."""
        at = now()
        with self._write() as conn:
            self._agent_row(conn, agent_uuid)
            conn.execute(
                approvals.insert(),
                {
                    "id": approval_id,
                    "agent_uuid": agent_uuid,
                    "turn": turn,
                    "tool_call_id": call.id,
                    "call_json": _encode(_Stored(call=call, policy=policy)).decode(),
                    "rule": rule,
                    "created_at": at,
                },
            )
        found = self.get_approval(approval_id)
        assert found is not None
        return found

    def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        with self._read() as conn:
            row = conn.execute(_SELECT.where(approvals.c.id == approval_id)).first()
        return None if row is None else _record(row)

    def pending_approvals(self, agent_uuid: str | None = None) -> list[ApprovalRecord]:
        """Approvals not yet decided, oldest first (every agent's when None)."""
        q = _SELECT.where(approvals.c.decided_at.is_(None))
        if agent_uuid is not None:
            q = q.where(approvals.c.agent_uuid == agent_uuid)
        with self._read() as conn:
            rows = conn.execute(q.order_by(approvals.c.created_at, approvals.c.id)).all()
        return [_record(r) for r in rows]

    def approvals_of_turn(self, agent_uuid: str, turn: str) -> list[ApprovalRecord]:
        """Every approval a turn asked, decided or not (a resumed turn reuses them)."""
        a = approvals.c
        q = _SELECT.where(a.agent_uuid == agent_uuid, a.turn == turn).order_by(a.created_at, a.id)
        with self._read() as conn:
            return [_record(r) for r in conn.execute(q).all()]

    def decide_approval(
        self,
        approval_id: str,
        decision: Verdict,
        *,
        by: str,
        reason: str | None = None,
        remember: str = "once",
    ) -> ApprovalRecord:
        """Decide a pending approval and write its permission row, in one
        transaction. NoSuchApproval for an unknown id; ApprovalClosed if it was
        decided already (the record says by whom)."""
        a = approvals.c
        with self._write() as conn:
            row = conn.execute(_SELECT.where(a.id == approval_id)).first()
            if row is None:
                raise NoSuchApproval(f"no approval has the id {approval_id!r}")
            if row.decided_at is not None:
                raise ApprovalClosed(_record(row))
            conn.execute(
                approvals.update()
                .where(a.id == approval_id, a.decided_at.is_(None))
                .values(decided_at=now(), decision=decision, decided_by=by, reason=reason)
            )
            pending = _record(row)
            data = {
                "tool_call_id": pending.tool_call_id,
                "tool": pending.tool,
                "decision": decision,
                "rule": pending.rule,
                "policy": pending.policy,
                "by": by,
                "reason": reason,
                "approval": approval_id,
                "remember": remember,
            }
            self._insert(conn, pending.agent_uuid, [permission_row(data)])
            decided = conn.execute(_SELECT.where(a.id == approval_id)).first()
        return _record(decided)

    def settle_open_turns(
        self, cut_reason: str, ended_reason: str, only: Collection[str] | None = None
    ) -> tuple[list[tuple[str, int]], dict[str, tuple[str, int, str]]]:
        """What a stopped daemon left mid-turn (on start). A turn waiting for
        approval (its agent alive, an approval of that turn pending) is to be
        resumed: returned as {agent: (turn id, first row, prompt)}. Every other
        open turn is marked interrupted (returned as (agent, first row)), and
        an approval pending for a turn that will not resume is denied: nothing
        would run its call. ``only``: these agents' turns (the agents a daemon
        restores or adopts), every agent's when None."""
        store: Any = self  # the composed Store: the turns and messages mixins too
        pending = self.pending_approvals()
        if only is not None:
            pending = [a for a in pending if a.agent_uuid in only]
        waiting: dict[str, set[str]] = {}
        for a in pending:
            waiting.setdefault(a.agent_uuid, set()).add(a.turn)
        alive = {r.uuid for r in store.list_agents()}
        cut: list[tuple[str, int]] = []
        resume: dict[str, tuple[str, int, str]] = {}
        for uuid, start in store.open_turns():
            if only is not None and uuid not in only:
                continue
            if uuid in waiting and uuid in alive:
                first = store.history(uuid, limit=1, before=start + 1)
                turn = (first[0].data or {}).get("turn") if first else None
                if first and first[0].id == start and turn in waiting[uuid]:
                    resume[uuid] = (turn, start, first[0].content)
                    continue
            store.mark_interrupted(uuid, start, reason=cut_reason)
            cut.append((uuid, start))
        for a in pending:
            if resume.get(a.agent_uuid, ("",))[0] != a.turn:
                self.decide_approval(a.id, "deny", by="restart", reason=ended_reason)
        return cut, resume

    def record_permission(self, agent_uuid: str, data: dict[str, Any]) -> MessageRecord:
        """The permission row of a decision no one was asked for (a rule allowed
        or denied the call, or an earlier ``remember`` allowed it)."""
        with self._write() as conn:
            return self._insert(conn, agent_uuid, [permission_row(data)])[0]

    def remembered_rules(self, agent_uuid: str) -> set[tuple[str, str, str]]:
        """(policy, rule, tool) an answer with ``remember: agent`` allowed for
        this agent: its own rows only (a fork narrows, it inherits no answer)."""
        m = messages.c
        q = sa.select(m.data).where(m.agent_uuid == agent_uuid, m.kind == "permission")
        with self._read() as conn:
            rows = conn.execute(q).scalars().all()
        return {
            (d["policy"], d["rule"], d.get("tool", ""))
            for d in rows
            if isinstance(d, dict) and d.get("remember") == "agent" and d.get("decision") == "allow"
        }


_SELECT = sa.select(approvals, agents.c.name.label("agent_name")).join(
    agents, agents.c.uuid == approvals.c.agent_uuid
)


def _record(r: Any) -> ApprovalRecord:
    stored = _decode(r.call_json)
    return ApprovalRecord(
        id=r.id,
        agent_uuid=r.agent_uuid,
        agent_name=r.agent_name,
        turn=r.turn,
        tool_call_id=r.tool_call_id,
        tool=stored.call.name,
        arguments=dict(stored.call.arguments),
        rule=r.rule,
        policy=stored.policy,
        created_at=r.created_at,
        decided_at=r.decided_at,
        decision=r.decision,
        decided_by=r.decided_by,
        reason=r.reason,
    )


def stored_call(r: ApprovalRecord) -> ToolCallBlock:
    """The call an approval is about."""
    return ToolCallBlock(id=r.tool_call_id, name=r.tool, arguments=r.arguments)
