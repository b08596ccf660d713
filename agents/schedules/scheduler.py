"""The scheduler: one trio task that fires each schedule's due times.

It keeps every active schedule's next due time in memory (the database has
it too: ``schedules.next_due``), sleeps until the earliest, and fires what is
due through Store.fire_schedule, which claims the due time, queues the run's
prompt (or makes its fork) and sets the next due time in one transaction.
Only then is the target actor told, as a restored prompt would be: a crash
between the commit and that leaves a queued prompt the next start restores.

Missed due times (the daemon was down, or the machine slept) follow the
schedule's ``missed`` policy; a due time is missed when it is more than
``grace`` seconds old when the scheduler sees it:
  skip  the missed ones are skipped: one skipped run row for the newest,
        its reason counting them; a due time within the grace still fires;
  once  one run for all of them (the newest), the older ones not written;
  all   each fires, at most rules.MAX_CATCH_UP (10) of the newest; the older
        ones are skipped with one row saying how many.
Overlap (the previous run's turn still running or queued): ``skip`` writes a
skipped run; ``queue`` fires anyway (the prompt waits behind the previous
one in the agent's queue; a fork schedule's new fork runs beside the last).
Of a catch-up's runs only the first meets the overlap policy: the others
queue behind it (missed=all fires each, as it says).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
import structlog
import trio

from store import Budget, Fired, ForkChild, ScheduleRecord, ScheduleRunRecord, StoreError

from .._forks import isolation
from .._isolate import prepare, undo
from ..errors import AgentError
from .rules import MAX_CATCH_UP, Rule, due_times

log = structlog.get_logger("ikigai.schedules")

# the longest sleep: a wall clock that jumps (a suspended laptop, an NTP
# step) is noticed within this
_MAX_SLEEP = 30.0


def wall_now() -> datetime:
    return datetime.now(UTC)


class Scheduler:
    def __init__(
        self,
        sup: Any,  # the Supervisor (not imported: it imports this module)
        *,
        now: Callable[[], datetime] = wall_now,
        grace: float = 60.0,
    ) -> None:
        self.sup = sup
        self.now = now
        self.grace = grace
        self.publish: Callable[[dict[str, Any]], None] = lambda event: None
        self._active: dict[int, ScheduleRecord] = {}
        self._last: dict[int, tuple[str | None, str | None]] = {}  # last fired run: agent, turn
        self._wake = trio.Event()
        self._lock = trio.Lock()  # one firing at a time: the loop and schedule.run

    # ------------------------------------------------------------ lifetime

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        db = self.sup.db
        records = await db.call(db.store.schedules)
        stats = await db.call(db.store.schedule_stats)
        for rec in records:
            self._keep(rec)
            last = stats.get(rec.id)
            if last is not None and last.last is not None:
                self._last[rec.id] = (last.last.agent_uuid, last.last.turn)
        task_status.started()
        while True:
            self._wake = trio.Event()
            async with self._lock:
                await self._fire_due()
            wait = self._until_next()
            with trio.move_on_after(wait):
                await self._wake.wait()

    def _mine(self, rec: ScheduleRecord) -> bool:
        """Does this daemon fire ``rec``: the one that runs its agent, on a
        database shared with other daemons (each due time fires once anyway:
        a claim row)."""
        return not self.sup.shared or rec.agent_uuid in self.sup.actors

    async def reload(self) -> None:
        """Agents were adopted: their schedules (made through any daemon) are read again."""
        db = self.sup.db
        for rec in await db.call(db.store.schedules):
            self._keep(rec)
        self.poke()

    def poke(self) -> None:
        """Something changed (added, paused, resumed, removed): look again."""
        self._wake.set()

    def _keep(self, rec: ScheduleRecord) -> None:
        if rec.removed_at is None and not rec.paused and rec.next_due is not None:
            self._active[rec.id] = rec
        else:
            self._active.pop(rec.id, None)

    def forget(self, schedule_id: int) -> None:
        self._active.pop(schedule_id, None)
        self.poke()

    def changed(self, rec: ScheduleRecord) -> None:
        self._keep(rec)
        self.poke()

    def _until_next(self) -> float:
        dues = [
            r.next_due for r in self._active.values() if r.next_due is not None and self._mine(r)
        ]
        if not dues:
            return _MAX_SLEEP
        seconds = (min(dues) - self.now()).total_seconds()
        return min(_MAX_SLEEP, max(0.0, seconds))

    # ------------------------------------------------------------ firing

    async def _fire_due(self) -> None:
        now = self.now()
        for rec in sorted(self._active.values(), key=lambda r: (r.next_due, r.id)):
            if not self._mine(rec):
                continue
            if self.sup._stopping:
                return
            if rec.next_due is None or rec.next_due > now:
                continue
            try:
                await self._catch_up(rec, now)
            except Exception:  # one schedule's failure must not stop the others
                log.exception("schedule failed", schedule=rec.id)
                self._active.pop(rec.id, None)

    async def _catch_up(self, rec: ScheduleRecord, now: datetime) -> None:
        """Fire (or skip) what is due of ``rec`` by ``now``, per its policies."""
        assert rec.next_due is not None
        rule = Rule.from_json(rec.rule)
        limit = MAX_CATCH_UP if rec.missed == "all" else 1
        dues, older = due_times(rule, rec.next_due, now, limit)
        total = older + len(dues)
        after = rule.next_after(dues[-1])
        if rec.missed == "skip":
            if (now - dues[-1]).total_seconds() > self.grace:
                await self._skip(rec, dues[-1], _missed(total, rec.next_due), after)
                return
            if older:
                await self._skip(rec, rec.next_due, _missed(older, rec.next_due), dues[0])
        elif rec.missed == "all" and older:
            why = f"{_missed(older, rec.next_due)}, beyond the catch-up limit of {MAX_CATCH_UP}"
            await self._skip(rec, rec.next_due, why, dues[0])
        reason = None
        if rec.missed == "once" and total > 1:
            reason = f"catch-up: one run for {total} missed due times from {_stamp(rec.next_due)}"
        for i, due in enumerate(dues):
            current = self._active.get(rec.id)
            if current is None:  # paused by a dead agent meanwhile
                return
            # only the first of a catch-up meets the overlap policy: the
            # others would find the run queued just before them "running"
            # and missed=all would fire one, whatever it promises
            nxt = dues[i + 1] if i + 1 < len(dues) else after
            await self._one(current, due, nxt, reason, check_overlap=i == 0)

    async def _one(
        self,
        rec: ScheduleRecord,
        due: datetime,
        next_due: datetime | None,
        reason: str | None,
        *,
        check_overlap: bool = True,
    ) -> None:
        """Fire one due time, or skip it for an overlap or a dead agent."""
        busy = self._previous_running(rec) if check_overlap else None
        if busy is not None and rec.overlap == "skip":
            await self._skip(
                rec, due, f"overlap: the previous run (turn {busy}) is still running", next_due
            )
            return
        target = self.sup.actors.get(rec.agent_uuid)
        if target is None:
            await self._skip(rec, due, "the agent is dead: the schedule is paused", next_due)
            await self.sup.db.call(self.sup.db.store.set_schedule, rec.id, paused=True)
            self._active.pop(rec.id, None)
            return
        await self._fire(rec, due, next_due, reason)

    async def fire_now(self, rec: ScheduleRecord) -> ScheduleRunRecord:
        """schedule.run: fire once now, the schedule's next due time unchanged."""
        async with self._lock:
            if self.sup.actors.get(rec.agent_uuid) is None:
                raise StoreError(f"schedule {rec.id}'s agent {rec.agent_uuid} is dead")
            run = await self._fire(rec, self.now(), ..., "run by hand (schedule.run)")
            if run is None:  # the same instant claimed twice: a microsecond apart
                raise StoreError(f"schedule {rec.id} was fired at this very instant already")
            return run

    async def _fire(
        self,
        rec: ScheduleRecord,
        due: datetime,
        next_due: Any,
        reason: str | None,
    ) -> ScheduleRunRecord | None:
        actor = self.sup.actors[rec.agent_uuid]
        turn = actor.new_turn_id()
        settings: dict[str, Any] | None = None
        planned: list[Any] = []
        db = self.sup.db
        try:
            if rec.fork:
                settings = {"priority": None}
                if rec.budget_usd is not None:
                    settings["budget"] = Budget(max_cost_usd=rec.budget_usd)
                # a policy's fork_isolation holds for a schedule's forks too
                planned = await self._isolated(rec, actor)
            fired: Fired | None = await db.call(
                db.store.fire_schedule,
                rec.id,
                due,
                next_due=next_due,
                turn=turn,
                fork_settings=settings,
                reason=reason,
                fork_child=_child_of(planned),
            )
        except (StoreError, AgentError) as e:  # a budget refused, a name... : skipped, saying why
            await undo(planned)
            if next_due is ...:
                raise StoreError(str(e)) from None
            await self._skip(rec, due, f"could not fire: {e}", next_due)
            return None
        except BaseException:
            await undo(planned)
            raise
        if next_due is not ...:
            self._advance(rec, next_due)
        if fired is None:
            await undo(planned)
            log.info("due time fired elsewhere", schedule=rec.id, due=due.isoformat())
            return None
        run = fired.run
        if fired.queued is not None:
            actor.restore_prompt(fired.queued.turn, fired.queued.text, fired.queued.id)
        elif fired.fork is not None and fired.first is not None:
            if planned:
                self.sup.note_worktree(fired.fork.uuid, planned[0].spec)
            child = self.sup._adopt(fired.fork)
            child.begin_stored(str(run.turn), rec.prompt, fired.first.id, priority="background")
            self.sup._pulse()
        self._last[rec.id] = (run.agent_uuid, run.turn)
        log.info("schedule fired", schedule=rec.id, run=run.id, agent=run.agent_uuid)
        self.publish(
            {
                "type": "schedule_fired",
                "schedule": rec.id,
                "name": rec.name,
                "run": run.id,
                "due_at": _stamp(due),
                "agent": run.agent_uuid,
                "turn": run.turn,
            }
        )
        if rec.fork and rec.keep is not None:
            await self._prune(rec)
        return run

    async def _isolated(self, rec: ScheduleRecord, actor: Any) -> list[Any]:
        """The worktree of a fork run, when the agent's policy requires one
        (fork_isolation) and its folder is in a repository; else none."""
        where = str(actor.cwd)
        wish = await isolation(self.sup, None, actor.policy, where)
        if wish is None:
            return []
        label = rec.name or f"sched{rec.id}"
        return await prepare(self.sup, where, [None], wish, parent_name=label)

    async def _skip(
        self, rec: ScheduleRecord, due: datetime, reason: str, next_due: datetime | None
    ) -> None:
        db = self.sup.db
        run = await db.call(db.store.skip_schedule, rec.id, due, reason, next_due=next_due)
        self._advance(rec, next_due)
        if run is None:
            return
        log.info("schedule skipped", schedule=rec.id, run=run.id, reason=reason)
        self.publish(
            {
                "type": "schedule_skipped",
                "schedule": rec.id,
                "name": rec.name,
                "run": run.id,
                "due_at": _stamp(due),
                "reason": reason,
            }
        )

    def _advance(self, rec: ScheduleRecord, next_due: datetime | None) -> None:
        current = self._active.get(rec.id, rec)
        self._keep(msgspec.structs.replace(current, next_due=next_due))

    def _previous_running(self, rec: ScheduleRecord) -> str | None:
        """The turn of this schedule's last run if it still runs or waits."""
        agent, turn = self._last.get(rec.id, (None, None))
        if agent is None or turn is None:
            return None
        actor = self.sup.actors.get(agent)
        return turn if actor is not None and actor.turn_pending(turn) else None

    async def _prune(self, rec: ScheduleRecord) -> None:
        """Kill all but the ``keep`` newest forks of a fork schedule whose
        turns have ended (a running one is left for the next prune)."""
        db = self.sup.db
        assert rec.keep is not None
        for old in await db.call(db.store.live_run_agents, rec.id, skip=rec.keep):
            actor = self.sup.actors.get(old)
            if actor is None or actor.busy:
                continue
            await self.sup.kill(actor.uuid, reason=f"pruned by schedule {rec.id} (keep {rec.keep})")

    def describe_turn(self, run: ScheduleRunRecord) -> str | None:
        """A run's turn as schedule ls shows it (see the contract)."""
        if run.status != "fired" or run.turn is None or run.agent_uuid is None:
            return None
        actor = self.sup.actors.get(run.agent_uuid)
        if actor is None:
            return "ended"
        if actor.current_turn == run.turn:
            return "waiting_for_approval" if actor.state == "waiting_for_approval" else "running"
        if actor.turn_pending(run.turn):
            return "queued"
        outcome = actor.turn_outcome(run.turn)
        return "ended" if outcome is None else outcome.status


def _missed(n: int, first: datetime) -> str:
    times = "1 due time" if n == 1 else f"{n} due times"
    return f"missed while the daemon was down: {times} from {_stamp(first)}"


def _child_of(planned: list[Any]) -> ForkChild | None:
    if not planned:
        return None
    plan = planned[0]
    return ForkChild(uuid=plan.uuid, cwd=plan.spec.path, worktree=plan.spec)


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


__all__ = ["Scheduler", "wall_now"]
