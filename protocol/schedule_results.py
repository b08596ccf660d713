"""Results of the ``schedule.*`` methods (docs/protocol.md, "Schedules"),
re-exported by protocol.results. TypedDicts, as there."""

# no ``from __future__ import annotations``: TypedDict must see its types
from typing import Literal, TypedDict


class ScheduleRun(TypedDict):
    id: int
    schedule: int
    due_at: str
    fired_at: str
    status: Literal["fired", "skipped"]
    reason: str | None
    agent: str | None  # the agent that ran it (a fork schedule: the run's fork)
    turn: str | None
    # queued, running, waiting_for_approval, a turn status (completed, error,
    # cancelled, interrupted...), ended (its outcome no longer kept); None: skipped
    turn_status: str | None


class Schedule(TypedDict):
    id: int
    name: str | None
    agent: str
    agent_name: str
    fork: bool
    keep: int | None
    prompt: str
    rule: str  # e.g. "cron 0 9 * * 1-5 (Europe/Paris)", "every 10m"
    cron: str | None
    tz: str
    every: int | None  # seconds
    at: str | None
    missed: Literal["skip", "once", "all"]
    overlap: Literal["skip", "queue"]
    budget_usd: float | None
    status: Literal["active", "paused", "done", "removed"]
    next_run: str | None
    fired: int
    skipped: int
    last_run: ScheduleRun | None
    created_at: str


class ScheduleShown(Schedule):
    runs: list[ScheduleRun]  # newest first


class ScheduleRemoved(TypedDict):
    removed: int
