"""Agents' git worktrees (the ``worktrees`` table in _schema.py).

A worktree row is written in the transaction that creates its agent (a fork
or a create with {worktree}), so an agent never exists without the row that
says where its folder is. The row stays after the agent dies, until the
worktree is pruned: a restart finds dead agents' worktrees again.
"""

from __future__ import annotations

from datetime import datetime

import msgspec
import sqlalchemy as sa

from ._base import StoreBase
from ._rows import now
from ._schema import agents, worktrees
from ._types import WorktreeSpec

_w = worktrees.c


class WorktreeRecord(msgspec.Struct, frozen=True, kw_only=True):
    agent_uuid: str
    name: str  # the agent's
    alive: bool
    path: str
    branch: str
    base: str
    repo: str
    created_at: datetime
    pruned_at: datetime | None


_COLUMNS = (
    _w.agent_uuid,
    agents.c.name,
    agents.c.status,
    _w.path,
    _w.branch,
    _w.base,
    _w.repo,
    _w.created_at,
    _w.pruned_at,
)


def _record(row: sa.Row) -> WorktreeRecord:
    m = row._mapping
    return WorktreeRecord(
        agent_uuid=m["agent_uuid"],
        name=m["name"],
        alive=m["status"] != "dead",
        path=m["path"],
        branch=m["branch"],
        base=m["base"],
        repo=m["repo"],
        created_at=m["created_at"],
        pruned_at=m["pruned_at"],
    )


class WorktreesMixin(StoreBase):
    def _put_worktrees(
        self, conn: sa.Connection, trees: list[tuple[str, WorktreeSpec]], created: datetime
    ) -> None:
        conn.execute(
            worktrees.insert(),
            [
                {
                    "agent_uuid": uuid,
                    "path": t.path,
                    "branch": t.branch,
                    "base": t.base,
                    "repo": t.repo,
                    "created_at": created,
                    "pruned_at": None,
                }
                for uuid, t in trees
            ],
        )

    def _worktree_query(self) -> sa.Select:
        return sa.select(*_COLUMNS).join(agents, agents.c.uuid == _w.agent_uuid)

    def worktree(self, agent_uuid: str) -> WorktreeRecord | None:
        """The worktree of this agent (pruned or not), or None."""
        with self._read() as conn:
            row = conn.execute(self._worktree_query().where(_w.agent_uuid == agent_uuid)).first()
        return None if row is None else _record(row)

    def worktrees(
        self, *, include_pruned: bool = False, agent_uuids: list[str] | None = None
    ) -> list[WorktreeRecord]:
        """Worktrees, oldest first: those not pruned (all with include_pruned),
        of every agent or of ``agent_uuids``."""
        q = self._worktree_query().order_by(_w.created_at, _w.agent_uuid)
        if not include_pruned:
            q = q.where(_w.pruned_at.is_(None))
        with self._read() as conn:
            if agent_uuids is None:
                rows = list(conn.execute(q))
            else:
                rows = []
                for i in range(0, len(agent_uuids), 500):  # every engine's bound on parameters
                    chunk = agent_uuids[i : i + 500]
                    rows += conn.execute(q.where(_w.agent_uuid.in_(chunk))).all()
        return [_record(r) for r in rows]

    def mark_worktree_pruned(self, agent_uuid: str) -> bool:
        """Record that this agent's worktree was removed. False: no such
        worktree, or pruned already."""
        with self._write() as conn:
            done = conn.execute(
                worktrees.update()
                .where(_w.agent_uuid == agent_uuid, _w.pruned_at.is_(None))
                .values(pruned_at=now())
            )
        return bool(done.rowcount)
