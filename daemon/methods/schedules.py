"""``schedule.*``: prompts that fire on their own (agents/schedules; the rows
are store/_schedules.py's). See docs/protocol.md, "Schedules"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import protocol as p
from agents.schedules import Rule, make_rule
from daemon.methods.refusals import refusals
from daemon.methods.shapes import Family, stamp
from protocol import params as P
from protocol import results as R
from store import MAX_NAME, ScheduleRecord, ScheduleRunRecord, ScheduleStats

if TYPE_CHECKING:
    from daemon.server import Connection, Handler


class SchedulesApi(Family):
    def handlers(self) -> dict[str, Handler]:
        return {
            p.SCHEDULE_ADD: self.add,
            p.SCHEDULE_LIST: self.list,
            p.SCHEDULE_SHOW: self.show,
            p.SCHEDULE_REMOVE: self.remove,
            p.SCHEDULE_PAUSE: self.pause,
            p.SCHEDULE_RESUME: self.resume,
            p.SCHEDULE_RUN: self.run,
        }

    @property
    def scheduler(self) -> Any:
        return self.sup.scheduler

    async def add(self, conn: Connection, params: P.ScheduleAdd) -> R.Schedule:
        if not params.prompt.strip():
            raise p.RpcError(p.INVALID_PARAMS, "prompt: the prompt is empty")
        if "\x00" in params.prompt:  # PostgreSQL text refuses it: refused alike on SQLite
            at = params.prompt.index("\x00")
            raise p.RpcError(
                p.INVALID_PARAMS, f"prompt: contains a NUL character (at character {at})"
            )
        name = params.name
        if name is not None and (
            not name
            or name.isdigit()
            or len(name) > MAX_NAME
            or any(c.isspace() or not c.isprintable() for c in name)
        ):
            # the store's rule (and printable), refused as a bad param, not a store refusal
            raise p.RpcError(
                p.INVALID_PARAMS,
                f"name: {name!r} must be 1 to {MAX_NAME} printable characters, no spaces, "
                "not only digits (those are ids)",
            )
        if not params.fork:
            for field, value in (("keep", params.keep), ("budget_usd", params.budget_usd)):
                if value is not None:
                    raise p.RpcError(
                        p.INVALID_PARAMS,
                        f"{field}: only a fork schedule has it (give fork: true, ikictl: --fork)",
                    )
        record = await self.host._record(params.agent)
        if not record.alive:
            raise p.RpcError(
                p.REFUSED, f"agent {record.name} ({record.uuid}) is dead: schedule a live agent"
            )
        now = self.scheduler.now()
        with refusals():
            rule = make_rule(
                cron=params.cron,
                every=params.every,
                at=params.at,
                in_=params.in_,
                tz=params.tz,
                now=now,
                allow_fast=params.allow_fast,
            )
            rec = await self.db.call(
                self.db.store.add_schedule,
                agent_uuid=record.uuid,
                prompt=params.prompt,
                rule=rule.to_json(),
                next_due=rule.next_after(now),
                fork=params.fork,
                keep=params.keep,
                budget_usd=params.budget_usd,
                missed=params.missed,
                overlap=params.overlap,
                name=params.name,
            )
        self.scheduler.changed(rec)
        return await self._shape(rec)

    async def list(self, conn: Connection, params: P.ScheduleList) -> list[R.Schedule]:
        recs = await self.db.call(self.db.store.schedules, include_removed=params.all)
        stats = await self.db.call(self.db.store.schedule_stats)
        names = await self._names({r.agent_uuid for r in recs})
        return [self._schedule(r, stats.get(r.id), names) for r in recs]

    async def show(self, conn: Connection, params: P.ScheduleShow) -> R.ScheduleShown:
        rec = await self._find(params.schedule)
        runs = await self.db.call(self.db.store.schedule_runs, rec.id, limit=params.limit)
        shown: Any = await self._shape(rec)
        shown["runs"] = [self._run(r) for r in runs]
        return shown  # type: ignore[no-any-return]

    async def remove(self, conn: Connection, params: P.ScheduleRef) -> R.ScheduleRemoved:
        rec = await self._find(params.schedule, live=True)
        await self.db.call(self.db.store.remove_schedule, rec.id)
        self.scheduler.forget(rec.id)
        return {"removed": rec.id}

    async def pause(self, conn: Connection, params: P.ScheduleRef) -> R.Schedule:
        rec = await self._find(params.schedule, live=True)
        rec = await self.db.call(self.db.store.set_schedule, rec.id, paused=True)
        self.scheduler.changed(rec)
        return await self._shape(rec)

    async def resume(self, conn: Connection, params: P.ScheduleRef) -> R.Schedule:
        rec = await self._find(params.schedule, live=True)
        if rec.paused:
            # the due times that passed while it was paused are not owed: it
            # goes on from the first one after now
            rule = Rule.from_json(rec.rule)
            now = self.scheduler.now()
            due = rec.next_due
            if due is not None and due <= now:
                due = rule.next_after(now)
            rec = await self.db.call(self.db.store.set_schedule, rec.id, paused=False, next_due=due)
            self.scheduler.changed(rec)
        return await self._shape(rec)

    async def run(self, conn: Connection, params: P.ScheduleRef) -> R.ScheduleRun:
        rec = await self._find(params.schedule, live=True)
        with refusals():
            run = await self.scheduler.fire_now(rec)
        return self._run(run)

    # ------------------------------------------------------------ shapes

    async def _find(self, ref: str, *, live: bool = False) -> ScheduleRecord:
        with refusals():
            rec: ScheduleRecord = await self.db.call(self.db.store.schedule, ref)
        if live and rec.removed_at is not None:
            raise p.RpcError(p.SCHEDULE_NOT_FOUND, f"schedule {rec.id} was removed")
        return rec

    async def _names(self, uuids: set[str]) -> dict[str, str]:
        names = {}
        dead = []
        for uuid in uuids:
            actor = self.sup.actor_of(uuid)
            if actor is not None:
                names[uuid] = actor.name
            else:
                dead.append(uuid)
        if dead:  # one query for them all
            names.update(await self.db.call(self.db.store.agent_names, dead))
        return names

    async def _shape(self, rec: ScheduleRecord) -> R.Schedule:
        stats = await self.db.call(self.db.store.schedule_stats, rec.id)
        return self._schedule(rec, stats.get(rec.id), await self._names({rec.agent_uuid}))

    def _schedule(
        self, rec: ScheduleRecord, stats: ScheduleStats | None, names: dict[str, str]
    ) -> R.Schedule:
        rule = Rule.from_json(rec.rule)
        status: Any = (
            "removed"
            if rec.removed_at is not None
            else "paused"
            if rec.paused
            else "done"
            if rec.next_due is None
            else "active"
        )
        return {
            "id": rec.id,
            "name": rec.name,
            "agent": rec.agent_uuid,
            "agent_name": names.get(rec.agent_uuid, rec.agent_uuid),
            "fork": rec.fork,
            "keep": rec.keep,
            "prompt": rec.prompt,
            "rule": rule.describe(),
            "cron": rule.cron,
            "tz": rule.tz,
            "every": rule.every,
            "at": None if rule.at is None else stamp(rule.at),
            "missed": rec.missed,  # type: ignore[typeddict-item]
            "overlap": rec.overlap,  # type: ignore[typeddict-item]
            "budget_usd": rec.budget_usd,
            "status": status,
            "next_run": None if rec.next_due is None or status != "active" else stamp(rec.next_due),
            "fired": stats.fired if stats else 0,
            "skipped": stats.skipped if stats else 0,
            "last_run": None if stats is None or stats.last is None else self._run(stats.last),
            "created_at": stamp(rec.created_at),
        }

    def _run(self, run: ScheduleRunRecord) -> R.ScheduleRun:
        return {
            "id": run.id,
            "schedule": run.schedule_id,
            "due_at": stamp(run.due_at),
            "fired_at": stamp(run.fired_at),
            "status": run.status,  # type: ignore[typeddict-item]
            "reason": run.reason,
            "agent": run.agent_uuid,
            "turn": run.turn,
            "turn_status": self.scheduler.describe_turn(run),
        }


__all__ = ["SchedulesApi"]
