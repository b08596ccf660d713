"""Agents as a person manages them: rename, remove from listings, purge, and
what listings and history views read besides the rows (last activity, the
outline of a lineage).

Removal hides a dead agent (``hidden_at``). Purging deletes its rows too,
except the rows other agents still read: a descendant (dead or alive, not
purged itself) forked at row N of it reads its rows up to N, and those stay,
as does any row an agent's ``fork_message_id`` points at. The agent row goes
once nothing refers to it (no rows left, no children); otherwise it stays,
hidden, with ``purged_at`` set. Purging a child can free rows its purged
ancestors kept for it: those are purged again on the way up.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy import exc

from . import _replay
from ._agents import subtree
from ._blobs import drop_unreferenced, files_of
from ._errors import NameTaken, StoreError
from ._listing import ListingMixin
from ._rows import agent_record, check_name, now
from ._schema import (
    agents,
    approvals,
    budgets,
    mail,
    messages,
    prompt_queue,
    schedule_runs,
    schedules,
    worktrees,
)
from ._types import AgentRecord

# kinds whose data the outline carries: what turns, compactions and prices need
_OUTLINE_DATA = ("user", "interrupted", "compaction", "model_switch")


class AgentAlive(StoreError):
    """A live agent cannot be removed: kill it first."""


class Outline(NamedTuple):
    """One row of a lineage, without its text or message."""

    id: int
    agent_uuid: str
    kind: str
    data: dict[str, Any] | None  # only for the kinds in _OUTLINE_DATA


class Removal(NamedTuple):
    deleted: bool  # the agent row itself is gone (nothing referred to it any more)
    purged_rows: int  # rows deleted: messages, mail, queued prompts, approvals


class AdminMixin(ListingMixin):  # a purge tells the listing's kept values
    """Store methods for managing agents (see the module doc)."""

    def rename_agent(self, uuid: str, name: str) -> AgentRecord:
        """Give the agent another name: unique among live agents (NameTaken),
        any name for a dead one."""
        check_name(name)
        a = agents.c
        with self._write() as conn:
            row = self._agent_row(conn, uuid)
            if row.name == name:
                return agent_record(row)
            if row.status != "dead":
                holder = conn.execute(
                    sa.select(a.uuid).where(a.name == name, a.status != "dead", a.uuid != uuid)
                ).scalar()
                if holder is not None:
                    raise NameTaken(f"the name {name!r} is taken by live agent {holder}")
            try:
                conn.execute(agents.update().where(a.uuid == uuid).values(name=name))
            except exc.IntegrityError as e:  # a concurrent create took it
                raise NameTaken(f"the name {name!r} is taken by a live agent") from e
            return agent_record(self._agent_row(conn, uuid))

    def last_active(self, uuids: Sequence[str] | None = None) -> dict[str, datetime]:
        """Each agent's newest own history row's time (its created_at when it
        has none), in one query: an index probe per agent."""
        a, m = agents.c, messages.c
        newest = (
            sa.select(m.created_at)
            .where(m.agent_uuid == a.uuid)
            .order_by(m.id.desc())
            .limit(1)
            .correlate(agents)
            .scalar_subquery()
        )
        q = sa.select(a.uuid, a.created_at, newest.label("newest"))
        if uuids is not None:
            q = q.where(a.uuid.in_(list(uuids)))
        with self._read() as conn:
            return {r.uuid: r.newest or r.created_at for r in conn.execute(q)}

    def history_outline(self, agent_uuid: str) -> list[Outline]:
        """Every row of the lineage, oldest first, as (id, agent, kind, data
        of the kinds that mark turns, compactions and model switches)."""
        m = messages.c
        data = sa.case((m.kind.in_(_OUTLINE_DATA), m.data), else_=sa.null())
        rows: list[Any] = []
        with self._read() as conn:
            ranges = self._lineage(conn, agent_uuid)
            for part in _replay.chunks(ranges):
                q = sa.select(m.id, m.agent_uuid, m.kind, data.label("data"))
                rows.extend(conn.execute(q.where(_replay.range_cond(part)).order_by(m.id)))
        rows.sort(key=lambda r: r[0])
        return [Outline(r[0], r[1], r[2], r[3]) for r in rows]

    # ------------------------------------------------------------ removal

    def remove_agent(self, uuid: str, *, purge: bool = False) -> Removal:
        """Hide a dead agent from listings (AgentAlive for a live one); with
        ``purge`` delete its rows as the module doc says. Each agent purged
        is one transaction."""
        with self._write() as conn:
            row = self._agent_row(conn, uuid)
            if row.status != "dead":
                raise AgentAlive(
                    f"agent {row.name} ({uuid}) is running: kill it before removing it"
                )
            if row.hidden_at is None:
                conn.execute(agents.update().where(agents.c.uuid == uuid).values(hidden_at=now()))
            if not purge:
                return Removal(False, 0)
            deleted, count = self._purge(conn, uuid)
        self._listing_forget([uuid])  # committed: the listing computes it again
        if deleted:
            self._ranges.pop(uuid, None)
        parent = row.parent_uuid
        while parent is not None:  # purged ancestors may have kept rows only it read
            with self._write() as conn:
                up = conn.execute(sa.select(agents).where(agents.c.uuid == parent)).first()
                if up is None or up.purged_at is None:
                    break
                gone, more = self._purge(conn, parent)
            self._listing_forget([parent])
            if gone:
                self._ranges.pop(parent, None)
            count += more
            parent = up.parent_uuid
        return Removal(deleted, count)

    def _purge(self, conn: sa.Connection, uuid: str) -> tuple[bool, int]:
        """Delete the agent's rows no other agent reads; the agent row too when
        nothing refers to it. (agent row deleted?, rows deleted)."""
        a, m = agents.c, messages.c
        sub = subtree(uuid)
        readers = (
            conn.execute(
                sa.select(a.uuid).where(
                    a.uuid.in_(sa.select(sub.c.uuid)), a.uuid != uuid, a.purged_at.is_(None)
                )
            )
            .scalars()
            .all()
        )
        keep: int | None = None  # the newest of its rows some reader's lineage reaches
        for reader in readers:
            for owner, hi in self._lineage(conn, reader):
                if owner == uuid and hi is not None and (keep is None or hi > keep):
                    keep = hi
        pinned = sa.select(a.fork_message_id).where(a.fork_message_id.is_not(None))
        gone = [m.agent_uuid == uuid, m.id.not_in(pinned)]
        if keep is not None:
            gone.append(m.id > keep)
        files = files_of(conn, sa.and_(*gone), uuid)  # their blobs may go with them
        count = conn.execute(messages.delete().where(*gone)).rowcount
        count += conn.execute(mail.delete().where(mail.c.to_uuid == uuid)).rowcount
        count += conn.execute(
            prompt_queue.delete().where(prompt_queue.c.agent_uuid == uuid)
        ).rowcount
        count += conn.execute(approvals.delete().where(approvals.c.agent_uuid == uuid)).rowcount
        drop_unreferenced(conn, files)
        # its schedules fire no more (their rows stay readable while the agent's does)
        mine = sa.select(schedules.c.id).where(schedules.c.agent_uuid == uuid)
        conn.execute(
            schedules.update()
            .where(schedules.c.agent_uuid == uuid, schedules.c.removed_at.is_(None))
            .values(removed_at=now())
        )
        left = conn.execute(sa.select(m.id).where(m.agent_uuid == uuid).limit(1)).first()
        child = conn.execute(sa.select(a.uuid).where(a.parent_uuid == uuid).limit(1)).first()
        tree = conn.execute(
            sa.select(worktrees.c.pruned_at).where(worktrees.c.agent_uuid == uuid)
        ).first()
        if left is None and child is None and (tree is None or tree.pruned_at is not None):
            # (a worktree not pruned keeps the row: `ikictl worktrees` still lists it)
            conn.execute(worktrees.delete().where(worktrees.c.agent_uuid == uuid))
            # mail it sent stays with its recipients, as from no agent
            conn.execute(mail.update().where(mail.c.from_uuid == uuid).values(from_uuid=None))
            conn.execute(budgets.delete().where(budgets.c.agent_uuid == uuid))
            conn.execute(schedule_runs.delete().where(schedule_runs.c.schedule_id.in_(mine)))
            conn.execute(schedules.delete().where(schedules.c.agent_uuid == uuid))
            conn.execute(agents.delete().where(a.uuid == uuid))
            return True, count
        # (hidden already: remove_agent hides before it purges)
        conn.execute(agents.update().where(a.uuid == uuid).values(purged_at=now()))
        return False, count
