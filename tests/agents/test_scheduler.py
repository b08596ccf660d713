"""The scheduler (agents/schedules/scheduler.py) in virtual time: a real
Supervisor on a real SQLite file, its turns answered over loopback by the fake
provider, its scheduler reading the trio clock as a wall clock that starts at
an EPOCH chosen near a daylight-saving change.

The clock. trio's autojump clock (autojump_threshold=0) jumps to the next
deadline as soon as no task can run, and a task waiting for a store thread
cannot: with a schedule every 10 minutes, a test's ``trio.sleep(7200)``
returned while the first firing was still in its store thread (the clock
had leapt to the test's own deadline), so the scheduler would next meet the
other eleven due times at once, as if the daemon had been down. A threshold of a few real
milliseconds only moves the problem to a loaded machine (a thread stalled
longer than it lets the clock leap), and makes each jump cost real time. So
the clock here is a MockClock that moves only when ``jump_when_idle`` moves
it: as autojump does, to the next deadline once every task is blocked (with
a cushion for loopback I/O, as trio's docs advise), but never while a store
call runs in its thread (the supervisor's AsyncStore counts them). Tests
still advance in steps, so a jump made while something not counted runs
stays short.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import pytest
import trio
import trio.testing

from agents import AgentConfig, AsyncStore, ProviderPool, RetryPolicy, Supervisor
from agents.permissions import Permissions
from agents.schedules import MAX_CATCH_UP, Scheduler, make_rule
from agents.tools import ToolRegistry
from providers.settings import settings_for
from store import ScheduleRecord, ScheduleRunRecord, Store
from tests.agents.conftest import KEYS, Harness
from tests.fakes.script import Reply

T = TypeVar("T")
MODEL = "claude-sonnet-4-5/none"
PARIS = "Europe/Paris"
GRACE = 60.0
STEP = 30.0  # the longest jump a test makes at once
CUSHION = 0.002  # real seconds all tasks must stay blocked: loopback bytes land
LONG = 1e6  # the client's timeouts: slow replies take virtual minutes
QUIET = datetime(2026, 6, 1, 8, tzinfo=UTC)  # no change of offset near it


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Still unless jump_when_idle moves it (pytest-trio runs a test on the
    clock among the test's own arguments: each test names it)."""
    return trio.testing.MockClock()


class StoreCalls:
    """Store calls in their threads now, over every daemon a test starts."""

    def __init__(self) -> None:
        self.running = 0
        self.none = trio.Event()
        self.none.set()

    def enter(self) -> None:
        if not self.running:
            self.none = trio.Event()
        self.running += 1

    def leave(self) -> None:
        self.running -= 1
        if not self.running:
            self.none.set()


class CountedStore(AsyncStore):
    """The supervisor's AsyncStore, counting its calls in flight."""

    def __init__(self, store: Store, calls: StoreCalls) -> None:
        super().__init__(store)
        self.calls = calls

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self.calls.enter()
        try:
            return await super().call(fn, *args, **kwargs)
        finally:  # a call is never abandoned (Workers.run): this is its end
            self.calls.leave()


async def jump_when_idle(clock: trio.testing.MockClock, calls: StoreCalls) -> None:
    while True:
        await trio.testing.wait_all_tasks_blocked(CUSHION)
        if calls.running:
            await calls.none.wait()
            continue
        left = trio.lowlevel.current_statistics().seconds_to_next_deadline
        if 0 < left < math.inf:
            clock.jump(left)


class Clocked(Harness):
    """The harness of tests/agents/conftest.py, its supervisor's scheduler
    reading the test's clock. Each start is a new daemon on the same file."""

    epoch = QUIET

    def __init__(self, nursery: trio.Nursery, fake: Any, db_path: Any, calls: StoreCalls) -> None:
        super().__init__(nursery, fake, db_path)
        self.calls = calls
        self.t0 = trio.current_time()
        self.fired_at: dict[int, datetime] = {}  # run id -> when the scheduler said so

    def now(self) -> datetime:
        return self.epoch + timedelta(seconds=trio.current_time() - self.t0)

    async def start(self, **_: Any) -> Supervisor:  # type: ignore[override]
        self.store = Store(f"sqlite:///{self.db_path}")
        base = self.fake.base_url

        def settings(name: str) -> Any:
            return settings_for(
                name, env=KEYS, base_url=base, read_timeout=LONG, connect_timeout=LONG
            )

        pool = ProviderPool(settings=settings)
        sup = Supervisor(
            CountedStore(self.store, self.calls),
            pool,
            ToolRegistry(),
            AgentConfig(retry=RetryPolicy(base_delay=0.01, jitter=0.0)),
            Permissions(default="yolo"),
        )
        sup.scheduler = Scheduler(sup, now=self.now, grace=GRACE)
        sup.scheduler.publish = self._published

        async def run(task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
            with trio.CancelScope() as scope:
                self._scope = scope
                await sup.run(task_status=task_status)
            await pool.aclose()

        self.sup = await self.nursery.start(run)
        return self.sup

    def _published(self, event: dict[str, Any]) -> None:
        self.fired_at[event["run"]] = self.now()

    # ------------------------------------------------------------ driving

    async def agent(self, name: str = "w") -> str:
        assert self.sup is not None
        record, _, _ = await self.sup.create(model=MODEL, name=name)
        return str(record.uuid)

    async def schedule(
        self,
        agent: str,
        *,
        cron: str | None = None,
        every: str | None = None,
        in_: str | None = None,
        tz: str = PARIS,
        missed: str = "once",
        overlap: str = "skip",
        prompt: str = "tick",
    ) -> ScheduleRecord:
        """What schedule.add does (daemon/methods/schedules.py)."""
        assert self.sup is not None
        now = self.now()
        rule = make_rule(cron=cron, every=every, at=None, in_=in_, tz=tz, now=now, allow_fast=False)
        db = self.sup.db
        rec = await db.call(
            db.store.add_schedule,
            agent_uuid=agent,
            prompt=prompt,
            rule=rule.to_json(),
            next_due=rule.next_after(now),
            missed=missed,
            overlap=overlap,
        )
        self.sup.scheduler.changed(rec)
        return rec

    async def advance_to(self, when: datetime) -> None:
        # the sleeping is the point: it is what lets the virtual clock move
        while (left := (when - self.now()).total_seconds()) > 1e-6:  # noqa: ASYNC110
            await trio.sleep(min(STEP, left))

    async def advance_until(self, done: Callable[[], bool], *, limit: timedelta) -> None:
        end = self.now() + limit
        while not done():
            assert self.now() < end, "not done in time"
            await trio.sleep(1.0)

    async def drain(self) -> None:
        """Until every agent has ended its turns."""
        assert self.sup is not None
        sup = self.sup
        await self.advance_until(
            lambda: not any(a.busy for a in sup.actors.values()), limit=timedelta(minutes=5)
        )

    async def runs(self, schedule: int) -> list[ScheduleRunRecord]:
        """Oldest first."""
        assert self.sup is not None
        db = self.sup.db
        return list(reversed(await db.call(db.store.schedule_runs, schedule, limit=1000)))

    async def record(self, schedule: int) -> ScheduleRecord:
        assert self.sup is not None
        db = self.sup.db
        return await db.call(db.store.schedule, schedule)  # type: ignore[no-any-return]


@pytest.fixture
async def clocked(nursery, fake_provider, tmp_path, clock):
    calls = StoreCalls()
    nursery.start_soon(jump_when_idle, clock, calls)
    fake_provider.default = Reply(text="done")
    h = Clocked(nursery, fake_provider, tmp_path / "ikigai.db", calls)
    yield h
    if h.sup is not None and h._scope is not None and not h._scope.cancel_called:
        await h.stop()


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def dues(runs: list[ScheduleRunRecord], status: str = "fired") -> list[datetime]:
    return [r.due_at for r in runs if r.status == status]


def on_time(h: Clocked, runs: list[ScheduleRunRecord]) -> None:
    """Each fired run fired at its due time (the clock stands still while
    the store works, so to the microsecond but for rounding)."""
    for r in runs:
        if r.status == "fired":
            late = (h.fired_at[r.id] - r.due_at).total_seconds()
            assert 0 <= late < 0.01, (r, late)


def prompts(fake: Any, text: str) -> int:
    """Model calls whose last user message is ``text``: one per turn of it."""
    n = 0
    for req in fake.requests:
        users = [m for m in (req.json or {}).get("messages", []) if m.get("role") == "user"]
        if users:
            content = users[-1]["content"]
            if isinstance(content, list):
                content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
            n += content == text
    return n


# ---------------------------------------------------------------- DST

# each: the epoch, the end, and the due times (UTC) of three schedules
AUTUMN = (  # Paris: 03:00 CEST is 02:00 CET again at 01:00Z on 25 October
    utc(2026, 10, 24, 23, 50),
    utc(2026, 10, 25, 2, 10),
    # every half hour: 02:00 and 02:30 twice, first CEST then CET
    [utc(2026, 10, 25, h, m) for h in (0, 1) for m in (0, 30)] + [utc(2026, 10, 25, 2)],
    # 02:30 daily: once, at its first pass (CEST)
    [utc(2026, 10, 25, 0, 30)],
    # every hour from the epoch: 3,600 s apart, whatever the wall clock says
    [utc(2026, 10, 25, 0, 50), utc(2026, 10, 25, 1, 50)],
    ["02:00+0200", "02:30+0200", "02:00+0100", "02:30+0100", "03:00+0100"],
)
SPRING = (  # Paris: 02:00 CET is 03:00 CEST at 01:00Z on 29 March
    utc(2026, 3, 28, 23, 50),
    utc(2026, 3, 29, 2, 10),
    # every half hour: 01:00, 01:30 CET, then 03:00 CEST: no 02:xx
    [utc(2026, 3, 29, h, m) for h in (0, 1) for m in (0, 30)] + [utc(2026, 3, 29, 2)],
    # 02:30 daily: not a time that day; once, at 03:00 CEST, right after the gap
    [utc(2026, 3, 29, 1)],
    [utc(2026, 3, 29, 0, 50), utc(2026, 3, 29, 1, 50)],
    ["01:00+0100", "01:30+0100", "03:00+0200", "03:30+0200", "04:00+0200"],
)


@pytest.mark.parametrize("case", [AUTUMN, SPRING], ids=["autumn", "spring"])
async def test_cron_and_interval_fire_at_their_instants_across_a_dst_change(clocked, clock, case):
    epoch, end, half_hourly, daily, hourly, walls = case
    clocked.epoch = epoch
    sup = await clocked.start()
    w = await clocked.agent()
    a = await clocked.schedule(w, cron="*/30 * * * *", prompt="half hour")
    b = await clocked.schedule(w, cron="30 2 * * *", prompt="half past two")
    c = await clocked.schedule(w, every="1h", prompt="hour")
    await clocked.advance_to(end)
    for sched, wanted in ((a, half_hourly), (b, daily), (c, hourly)):
        runs = await clocked.runs(sched.id)
        assert [(r.status, r.due_at) for r in runs] == [("fired", d) for d in wanted]
        assert all(r.agent_uuid == w and r.turn and r.reason is None for r in runs)
        on_time(clocked, runs)
    assert [d.astimezone(ZoneInfo(PARIS)).strftime("%H:%M%z") for d in half_hourly] == walls
    # each run reached the model once, as a turn of its own that completed
    await clocked.drain()
    for text, wanted in (("half hour", half_hourly), ("half past two", daily), ("hour", hourly)):
        assert prompts(clocked.fake, text) == len(wanted)
    for run in await clocked.runs(a.id):
        assert sup.scheduler.describe_turn(run) == "completed"


async def test_a_schedule_added_in_the_repeated_hour_is_not_owed_its_first_pass(clocked, clock):
    # 02:10 CET, the second pass of the hour whose first pass (CEST) held
    # 02:30: that was before the schedule existed
    clocked.epoch = utc(2026, 10, 25, 1, 10)
    await clocked.start()
    w = await clocked.agent()
    s = await clocked.schedule(w, cron="30 2 * * *")
    assert s.next_due == utc(2026, 10, 26, 1, 30)
    await clocked.advance_to(utc(2026, 10, 25, 3))
    assert await clocked.runs(s.id) == []


async def test_a_one_shot_fires_once_and_is_done(clocked, clock):
    await clocked.start()
    w = await clocked.agent()
    s = await clocked.schedule(w, in_="15m")
    await clocked.advance_to(QUIET + timedelta(hours=1))
    runs = await clocked.runs(s.id)
    assert [(r.status, r.due_at) for r in runs] == [("fired", QUIET + timedelta(minutes=15))]
    assert (await clocked.record(s.id)).next_due is None
    on_time(clocked, runs)


# ---------------------------------------------------------------- downtime

TEN = timedelta(minutes=10)
BEFORE = [QUIET + k * TEN for k in (1, 2)]  # fired before the stop at +25
MISSED = [QUIET + k * TEN for k in range(3, 21)]  # +30 .. +3h20: 18
AFTER = QUIET + 21 * TEN  # +3h30: fired on time after the restart
FROM = "from 2026-06-01T08:30:00Z"  # the first missed due time
DOWN = "missed while the daemon was down"


def _expected(missed: str, late: float) -> list[tuple[str, datetime, str | None]]:
    fired = [("fired", d, None) for d in BEFORE]
    if missed == "skip" and late > GRACE:  # all 18 skipped in one row
        return [
            *fired,
            ("skipped", MISSED[-1], f"{DOWN}: 18 due times {FROM}"),
            ("fired", AFTER, None),
        ]
    if missed == "skip":  # the newest is within the grace: it fires, the 17 before are skipped
        return [
            *fired,
            ("skipped", MISSED[0], f"{DOWN}: 17 due times {FROM}"),
            ("fired", MISSED[-1], None),
            ("fired", AFTER, None),
        ]
    if missed == "once":  # one run for the 18, at the newest
        why = f"catch-up: one run for 18 missed due times {FROM}"
        return [*fired, ("fired", MISSED[-1], why), ("fired", AFTER, None)]
    # all: the newest MAX_CATCH_UP fire, the 8 older are skipped in one row
    older = len(MISSED) - MAX_CATCH_UP
    why = f"{DOWN}: {older} due times {FROM}, beyond the catch-up limit of {MAX_CATCH_UP}"
    return [
        *fired,
        ("skipped", MISSED[0], why),
        *[("fired", d, None) for d in MISSED[-MAX_CATCH_UP:]],
        ("fired", AFTER, None),
    ]


@pytest.mark.parametrize(
    ("missed", "late"),
    [("skip", 300), ("skip", 30), ("once", 300), ("once", 30), ("all", 300), ("all", 30)],
)
async def test_missed_runs_after_a_downtime_follow_the_policy(clocked, clock, missed, late):
    """Every 10 minutes (overlap: skip, the default): fired at +10 and +20,
    the daemon stops at +25 and starts again ``late`` seconds after +3h20,
    the newest of the 18 due times missed; then +3h30 fires as usual."""
    await clocked.start()
    w = await clocked.agent()
    s = await clocked.schedule(w, every="10m", missed=missed)
    await clocked.advance_to(QUIET + timedelta(minutes=25))
    await clocked.drain()
    await clocked.stop()
    await trio.sleep((MISSED[-1] + timedelta(seconds=late) - clocked.now()).total_seconds())
    await clocked.start()
    await clocked.advance_to(AFTER + timedelta(minutes=5))
    await clocked.drain()
    runs = await clocked.runs(s.id)
    assert [(r.status, r.due_at, r.reason) for r in runs] == _expected(missed, late)
    # every fired run reached the model exactly once
    assert prompts(clocked.fake, "tick") == len(dues(runs))


# ---------------------------------------------------------------- overlap


async def _slow_first_run(clocked: Clocked, overlap: str) -> tuple[Any, ScheduleRecord]:
    """Every 10 minutes; the first run's reply takes tens of virtual minutes
    (7 writes, 500 s before each: it ends between two due times, not at
    one). The agent, the schedule."""
    sup = await clocked.start()
    w = await clocked.agent()
    clocked.fake.push(Reply(text="slow", pieces=1, delay=500))
    s = await clocked.schedule(w, every="10m", overlap=overlap)
    await clocked.advance_to(QUIET + TEN + timedelta(seconds=1))
    [first] = await clocked.runs(s.id)
    assert first.status == "fired" and sup.actors[w].current_turn == first.turn
    return sup.actors[w], s


async def test_overlap_skip_skips_while_the_previous_run_runs(clocked, clock):
    actor, s = await _slow_first_run(clocked, "skip")
    [first] = await clocked.runs(s.id)
    with trio.fail_after(3 * 3600):  # virtual: the clock runs meanwhile
        result = await actor.wait_turn(str(first.turn))
    assert result is not None and result.status == "completed"
    ended = clocked.now()
    assert ended > QUIET + 3 * TEN  # slow enough for two due times at least
    await clocked.advance_to(ended + timedelta(minutes=15))  # two more due times
    await clocked.drain()
    runs = await clocked.runs(s.id)
    during = [r for r in runs[1:] if r.due_at < ended]
    later = [r for r in runs if r.due_at > ended]
    assert runs == [first, *during, *later] and len(during) >= 2 and len(later) == 2
    # due while the slow turn ran: skipped, saying so; after it, fired again
    for r in during:
        assert (r.status, r.turn, r.agent_uuid) == ("skipped", None, None)
        assert r.reason == f"overlap: the previous run (turn {first.turn}) is still running"
    assert [r.status for r in later] == ["fired", "fired"]
    assert [r.due_at for r in runs] == [QUIET + k * TEN for k in range(1, len(runs) + 1)]
    assert prompts(clocked.fake, "tick") == 3


async def test_overlap_queue_fires_behind_the_running_turn(clocked, clock):
    actor, s = await _slow_first_run(clocked, "queue")
    await clocked.advance_to(QUIET + 3 * TEN + timedelta(seconds=1))
    runs = await clocked.runs(s.id)
    assert [(r.status, r.due_at) for r in runs] == [("fired", QUIET + k * TEN) for k in (1, 2, 3)]
    describe = clocked.sup.scheduler.describe_turn
    assert [describe(r) for r in runs] == ["running", "queued", "queued"]
    # they run in their order once the slow one ends
    with trio.fail_after(3 * 3600):
        await actor.wait_turn(str(runs[-1].turn))
    assert [describe(r) for r in runs] == ["completed"] * 3
    later = await clocked.runs(s.id)
    assert [r.status for r in later] == ["fired"] * len(later)
    await clocked.drain()
    assert prompts(clocked.fake, "tick") == len(await clocked.runs(s.id))


# ---------------------------------------------------------------- pause, run now


async def _pause(clocked: Clocked, s: ScheduleRecord) -> ScheduleRecord:
    """What schedule.pause does."""
    assert clocked.sup is not None
    db = clocked.sup.db
    rec = await db.call(db.store.set_schedule, s.id, paused=True)
    clocked.sup.scheduler.changed(rec)
    return rec  # type: ignore[no-any-return]


async def test_a_paused_schedule_does_not_fire_nor_catch_up(clocked, clock):
    await clocked.start()
    w = await clocked.agent()
    s = await clocked.schedule(w, every="10m", missed="all")
    await clocked.advance_to(QUIET + timedelta(minutes=15))
    assert len(await clocked.runs(s.id)) == 1
    await _pause(clocked, s)
    await clocked.advance_to(QUIET + timedelta(hours=1, minutes=5))
    assert len(await clocked.runs(s.id)) == 1
    # nor after a restart: a paused schedule owes nothing
    await clocked.stop()
    await trio.sleep(3 * 3600)
    await clocked.start()
    await clocked.advance_to(clocked.now() + timedelta(minutes=45))
    await clocked.drain()
    assert len(await clocked.runs(s.id)) == 1
    assert prompts(clocked.fake, "tick") == 1


@pytest.mark.parametrize("paused", [False, True])
async def test_run_now_fires_once_now_and_leaves_the_next_due_time(clocked, clock, paused):
    sup = await clocked.start()
    w = await clocked.agent()
    s = await clocked.schedule(w, every="10m")
    if paused:
        s = await _pause(clocked, s)
    await clocked.advance_to(QUIET + timedelta(minutes=4))
    now = clocked.now()
    run = await sup.scheduler.fire_now(await clocked.record(s.id))
    assert (run.status, run.due_at, run.agent_uuid) == ("fired", now, w)
    assert run.reason == "run by hand (schedule.run)"
    assert (await clocked.record(s.id)).next_due == QUIET + TEN
    await clocked.advance_to(QUIET + timedelta(minutes=15))
    await clocked.drain()
    runs = await clocked.runs(s.id)
    assert [r.due_at for r in runs] == [now] + ([] if paused else [QUIET + TEN])
    assert all(r.status == "fired" for r in runs)
    assert prompts(clocked.fake, "tick") == len(runs)
