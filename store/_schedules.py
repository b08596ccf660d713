"""Schedules and their runs (see the tables in _schema.py).

A due time fires in ONE transaction: its ``schedule_runs`` row (unique on
schedule and due time: the claim), the run's prompt (a ``prompt_queue`` row
for the target agent, or a fork with its first turn started) and the
schedule's next due time. So a crash between "fired" and "turn started"
loses nothing (the queued prompt is restored on the next start), a restart
never fires a due time twice, and of several daemons sharing one database
only the one whose claim commits fires it.
"""

from __future__ import annotations

from datetime import datetime
from types import EllipsisType
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy import exc

from providers.types import Message, TextBlock

from ._base import StoreBase
from ._errors import AgentNotFound, InvalidEntry, NameTaken, ScheduleNotFound
from ._rows import MAX_NAME, now
from ._schema import agents, schedule_runs, schedules
from ._types import AgentRecord, ForkChild, MessageRecord, QueuedPrompt

_s = schedules.c
_r = schedule_runs.c


class ScheduleRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    name: str | None
    agent_uuid: str
    prompt: str
    rule: dict[str, Any]
    fork: bool
    keep: int | None
    budget_usd: float | None
    missed: str
    overlap: str
    paused: bool
    next_due: datetime | None
    created_at: datetime
    removed_at: datetime | None


class ScheduleRunRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    schedule_id: int
    due_at: datetime
    fired_at: datetime
    status: str  # fired | skipped
    reason: str | None
    agent_uuid: str | None
    turn: str | None


class ScheduleStats(msgspec.Struct, frozen=True, kw_only=True):
    fired: int
    skipped: int
    last: ScheduleRunRecord | None


class Fired(msgspec.Struct, frozen=True, kw_only=True):
    """A due time fired: its run, and the prompt queued for the target
    agent or the fork made for it (with its first turn's user row)."""

    run: ScheduleRunRecord
    queued: QueuedPrompt | None = None
    fork: AgentRecord | None = None
    first: MessageRecord | None = None


def _schedule(r: Any) -> ScheduleRecord:
    return ScheduleRecord(**{f: r._mapping[f] for f in ScheduleRecord.__struct_fields__})


def _run(r: Any) -> ScheduleRunRecord:
    return ScheduleRunRecord(**{f: r._mapping[f] for f in ScheduleRunRecord.__struct_fields__})


class SchedulesMixin(StoreBase):
    def add_schedule(
        self,
        *,
        agent_uuid: str,
        prompt: str,
        rule: dict[str, Any],
        next_due: datetime | None,
        fork: bool = False,
        keep: int | None = None,
        budget_usd: float | None = None,
        missed: str = "once",
        overlap: str = "skip",
        name: str | None = None,
    ) -> ScheduleRecord:
        """A new schedule for a live agent; NameTaken if a schedule (not
        removed) has ``name``; InvalidEntry if the agent is dead."""
        if name is not None and (
            not name or name.isdigit() or len(name) > MAX_NAME or any(c.isspace() for c in name)
        ):
            raise InvalidEntry(
                f"schedule name {name!r} must be 1 to {MAX_NAME} characters, no spaces, "
                "not only digits (those are ids)"
            )
        with self._write() as conn:
            agent = self._agent_row(conn, agent_uuid)
            if agent.status == "dead":
                raise InvalidEntry(
                    f"agent {agent.name} ({agent_uuid}) is dead: schedule a live agent"
                )
            if (
                name is not None
                and conn.execute(
                    sa.select(_s.id).where(_s.name == name, _s.removed_at.is_(None))
                ).first()
            ):
                raise NameTaken(f"a schedule is already called {name!r}")
            values = {
                "name": name,
                "agent_uuid": agent_uuid,
                "prompt": prompt,
                "rule": rule,
                "fork": fork,
                "keep": keep,
                "budget_usd": budget_usd,
                "missed": missed,
                "overlap": overlap,
                "paused": False,
                "next_due": next_due,
                "created_at": now(),
                "removed_at": None,
            }
            new_id = conn.execute(schedules.insert().returning(_s.id), values).scalar_one()
        return ScheduleRecord(id=new_id, **values)

    def schedules(self, *, include_removed: bool = False) -> list[ScheduleRecord]:
        q = sa.select(schedules).order_by(_s.id)
        if not include_removed:
            q = q.where(_s.removed_at.is_(None))
        with self._read() as conn:
            return [_schedule(r) for r in conn.execute(q)]

    def schedule(self, ref: str | int) -> ScheduleRecord:
        """By id (digits) or name (a removed one by id only)."""
        text = str(ref).strip()
        q = sa.select(schedules)
        if text.isdigit():
            q = q.where(_s.id == int(text))
        else:
            q = q.where(_s.name == text, _s.removed_at.is_(None))
        with self._read() as conn:
            row = conn.execute(q).first()
        if row is None:
            raise ScheduleNotFound(
                f"no schedule has the {'id' if text.isdigit() else 'name'} {text!r}: "
                "ikictl schedule ls lists them"
            )
        return _schedule(row)

    def schedule_runs(self, schedule_id: int, *, limit: int = 50) -> list[ScheduleRunRecord]:
        """Newest first."""
        q = (
            sa.select(schedule_runs)
            .where(_r.schedule_id == schedule_id)
            .order_by(_r.id.desc())
            .limit(limit)
        )
        with self._read() as conn:
            return [_run(r) for r in conn.execute(q)]

    def schedule_stats(self, schedule_id: int | None = None) -> dict[int, ScheduleStats]:
        """Runs fired and skipped, and the last run, of every schedule that has
        run (or of that one)."""
        mine = [] if schedule_id is None else [_r.schedule_id == schedule_id]
        with self._read() as conn:
            counts: dict[int, dict[str, int]] = {}
            for sid, status, n in conn.execute(
                sa.select(_r.schedule_id, _r.status, sa.func.count())
                .where(*mine)
                .group_by(_r.schedule_id, _r.status)
            ):
                counts.setdefault(sid, {})[status] = n
            last_ids = sa.select(sa.func.max(_r.id)).where(*mine).group_by(_r.schedule_id)
            lasts = {
                r.schedule_id: _run(r)
                for r in conn.execute(sa.select(schedule_runs).where(_r.id.in_(last_ids)))
            }
        return {
            sid: ScheduleStats(
                fired=c.get("fired", 0), skipped=c.get("skipped", 0), last=lasts.get(sid)
            )
            for sid, c in counts.items()
        }

    def live_run_agents(self, schedule_id: int, *, skip: int = 0) -> list[str]:
        """The live agents that ran this schedule's fired runs, newest run
        first, leaving out the ``skip`` newest runs (dead agents' included):
        what keep prunes, without reading the runs of forks long dead."""
        newest = (
            sa.select(_r.id, _r.agent_uuid)
            .where(_r.schedule_id == schedule_id, _r.status == "fired", _r.agent_uuid.is_not(None))
            .order_by(_r.id.desc())
            .offset(skip)
            .subquery()
        )
        q = (
            sa.select(newest.c.agent_uuid)
            .join(agents, agents.c.uuid == newest.c.agent_uuid)
            .where(agents.c.status != "dead")
            .order_by(newest.c.id.desc())
        )
        with self._read() as conn:
            return [str(u) for u in conn.execute(q).scalars()]

    def set_schedule(
        self,
        schedule_id: int,
        *,
        paused: bool | None = None,
        next_due: datetime | EllipsisType | None = ...,
    ) -> ScheduleRecord:
        values: dict[str, Any] = {}
        if paused is not None:
            values["paused"] = paused
        if next_due is not ...:
            values["next_due"] = next_due
        with self._write() as conn:
            if values:
                conn.execute(schedules.update().where(_s.id == schedule_id).values(**values))
            row = conn.execute(sa.select(schedules).where(_s.id == schedule_id)).first()
        if row is None:
            raise ScheduleNotFound(f"no schedule has the id {schedule_id}")
        return _schedule(row)

    def remove_schedule(self, schedule_id: int) -> None:
        """It fires no more; it and its runs stay readable by id."""
        with self._write() as conn:
            conn.execute(
                schedules.update()
                .where(_s.id == schedule_id, _s.removed_at.is_(None))
                .values(removed_at=now())
            )

    def skip_schedule(
        self, schedule_id: int, due_at: datetime, reason: str, *, next_due: datetime | None
    ) -> ScheduleRunRecord | None:
        """A due time skipped (its run row says why) and the next one set;
        None if that due time was already claimed (by another daemon)."""
        with self._write() as conn:
            run = self._claim(conn, schedule_id, due_at, "skipped", reason=reason)
            if run is None:
                return None
            conn.execute(schedules.update().where(_s.id == schedule_id).values(next_due=next_due))
        return run

    def fire_schedule(
        self,
        schedule_id: int,
        due_at: datetime,
        *,
        next_due: datetime | EllipsisType | None,
        turn: str,
        fork_settings: dict[str, Any] | None = None,
        reason: str | None = None,
        fork_child: ForkChild | None = None,
    ) -> Fired | None:
        """Fire one due time (see the module doc): its run row, the prompt
        queued for the target (turn id ``turn``), or with ``fork_settings``
        (Store.fork_many's keywords) a fork with its first turn started, and
        the next due time (``...``: left as it is, for schedule.run); one
        transaction. None if that due time was already claimed.
        ``fork_child``: the fork's id, cwd and worktree, chosen before (a
        worktree is made before its agent's rows)."""
        forked: tuple[Any, Any, Any] | None = None
        with self._write() as conn:
            sched = conn.execute(sa.select(schedules).where(_s.id == schedule_id)).first()
            if sched is None:
                raise ScheduleNotFound(f"no schedule has the id {schedule_id}")
            run = self._claim(
                conn,
                schedule_id,
                due_at,
                "fired",
                reason=reason,
                agent=None if sched.fork else sched.agent_uuid,
                turn=None if sched.fork else turn,
            )
            if run is None:
                return None
            meta = {"schedule": schedule_id, "schedule_run": run.id}
            out = Fired(run=run)
            if not sched.fork:
                queued = self._enqueue_in(  # type: ignore[attr-defined]
                    conn, sched.agent_uuid, turn, sched.prompt, meta=meta
                )
                out = Fired(run=run, queued=queued)
            else:
                number = conn.execute(
                    sa.select(sa.func.count()).where(
                        _r.schedule_id == schedule_id, _r.status == "fired"
                    )
                ).scalar_one()
                name: str | None = f"{sched.name or f'sched{schedule_id}'}-{number}"[-MAX_NAME:]
                if conn.execute(
                    sa.select(agents.c.uuid).where(agents.c.name == name, agents.c.status != "dead")
                ).first():
                    name = None  # taken: the parent's name and an id suffix
                prompt = Message(role="user", content=[TextBlock(text=sched.prompt)])
                forked = self._fork_in(  # type: ignore[attr-defined]
                    conn,
                    sched.agent_uuid,
                    [
                        ForkChild(
                            name=name,
                            prompt=prompt,
                            meta=meta,
                            uuid=fork_child.uuid if fork_child else None,
                            cwd=fork_child.cwd if fork_child else None,
                            worktree=fork_child.worktree if fork_child else None,
                        )
                    ],
                    **(fork_settings or {}),
                )
                [(child, first)] = forked[0]
                assert first is not None
                child_turn = str((first.data or {})["turn"])
                conn.execute(
                    schedule_runs.update()
                    .where(_r.id == run.id)
                    .values(agent_uuid=child.uuid, turn=child_turn)
                )
                run = msgspec.structs.replace(run, agent_uuid=child.uuid, turn=child_turn)
                out = Fired(run=run, fork=child, first=first)
            if next_due is not ...:
                conn.execute(
                    schedules.update().where(_s.id == schedule_id).values(next_due=next_due)
                )
        if forked is not None:
            self._forked(*forked)  # type: ignore[attr-defined]
        return out

    def _claim(
        self,
        conn: sa.Connection,
        schedule_id: int,
        due_at: datetime,
        status: str,
        *,
        reason: str | None = None,
        agent: str | None = None,
        turn: str | None = None,
    ) -> ScheduleRunRecord | None:
        values = {
            "schedule_id": schedule_id,
            "due_at": due_at,
            "fired_at": now(),
            "status": status,
            "reason": reason,
            "agent_uuid": agent,
            "turn": turn,
        }
        # a savepoint: a lost claim leaves the caller's transaction usable
        try:
            with conn.begin_nested():
                new_id = conn.execute(schedule_runs.insert().returning(_r.id), values).scalar_one()
        except exc.IntegrityError:
            return None
        return ScheduleRunRecord(id=new_id, **values)


__all__ = [
    "AgentNotFound",
    "Fired",
    "ScheduleRecord",
    "ScheduleRunRecord",
    "ScheduleStats",
    "SchedulesMixin",
]
