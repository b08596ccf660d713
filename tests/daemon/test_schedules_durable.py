"""A schedule's due times fire exactly once across daemon restarts and crashes.

The real ikigaid, on a real SQLite file and on the real PostgreSQL server, runs
a schedule every second (``missed: all``, ``overlap: queue``) on an agent the
fake provider answers quickly. It is stopped with SIGTERM (once restarted at
once, once after a downtime longer than rules.MAX_CATCH_UP due times), then
killed with SIGKILL at random points (delays from a seeded random) and started
again on the same home each time. At the end, with the schedule paused and the
agent idle:

- the run rows' due times (fired or skipped; a skipped row for a downtime
  beyond the catch-up limit counts for every due time its reason counts) are
  the consecutive 1 s instants from the first to the last, each exactly once;
- every fired run's turn is exactly one user row of the agent's history,
  carrying its schedule and run ids;
- the fake received each run's prompt at most once: each request is matched
  to the turn it served (the fake's answer is unique per request, and a
  request's context says which turns came before it), and a request no
  completed turn claims must belong to an interrupted one.

The database's unique (schedule_id, due_at), claimed in the transaction that
queues the run's prompt and moves next_due on, is what makes this hold.

The seed is printed; IKIGAI_SCHED_SEED=N replays a run.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from agents.schedules import MAX_CATCH_UP
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import Client, connect
from tests.fakes.recorded import RecordedRequest
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider

KILLS = 6
PROMPT = "scheduled check of the build"
SECOND = timedelta(seconds=1)
# a skipped row standing for several due times (the daemon was down longer
# than the catch-up limit): its reason counts them (agents/schedules/scheduler.py)
_BEYOND = re.compile(r"^missed while the daemon was down: (\d+) due times? from .*beyond the catch-up limit")
_TERMINAL = {"completed", "error", "cancelled", "interrupted", "ended"}


def _texts(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _reply_text(index: int) -> str:
    return f"reply to request {index}"


def _responder(request: RecordedRequest) -> Reply | None:
    """A short streamed answer naming the request: what ties a history row
    to the request it came from."""
    messages = (request.json or {}).get("messages") or []
    if messages and messages[-1].get("role") == "user" and _texts(messages[-1]) == PROMPT:
        return Reply(text=_reply_text(request.index), pieces=4, delay=0.02)
    return None


async def _restart(daemon: DaemonProcess, nursery: trio.Nursery) -> Client:
    await daemon.restart()
    return await connect(nursery, str(daemon.socket))


async def _fired(c: Client, sid: int) -> int:
    return int((await c.call("schedule.show", schedule=str(sid), limit=1))["fired"])


async def _until_fired(c: Client, sid: int, count: int) -> int:
    with trio.fail_after(60):
        while True:
            n = await _fired(c, sid)
            if n >= count:
                return n
            await trio.sleep(0.1)


async def _stop(daemon: DaemonProcess, sig: int) -> None:
    daemon.signal(sig)
    code = await trio.to_thread.run_sync(daemon.wait, 30)
    assert code == (0 if sig == signal.SIGTERM else -sig), daemon.output()[-3000:]


async def _drained(c: Client, agent: str, sid: int) -> None:
    """Until the agent is idle with nothing queued and every fired run's turn ended."""
    with trio.fail_after(120):
        while True:
            info = await c.call("agent.show", agent=agent)
            runs = (await c.call("schedule.show", schedule=str(sid), limit=10_000))["runs"]
            pending = [r for r in runs if r["status"] == "fired" and r["turn_status"] not in _TERMINAL]
            if info["state"] == "idle" and not info["queued"] and not info["current_turn"] and not pending:
                return
            await trio.sleep(0.2)


async def _scenario(home: Path, fake: FakeProvider, nursery: trio.Nursery, rng: random.Random) -> dict[str, Any]:
    daemon = DaemonProcess(home)
    try:
        await daemon.start()
        c = await connect(nursery, str(daemon.socket))
        agent = (await c.call("agent.create", name="ticker"))["agent"]["uuid"]
        sched = await c.call(
            "schedule.add",
            agent="ticker",
            prompt=PROMPT,
            every="1s",
            allow_fast=True,
            missed="all",
            overlap="queue",
            name="tick",
        )
        sid = sched["id"]
        n = await _until_fired(c, sid, 3)
        # a clean stop and an immediate restart
        await _stop(daemon, signal.SIGTERM)
        c = await _restart(daemon, nursery)
        n = await _until_fired(c, sid, n + 2)
        # a clean stop for longer than the catch-up limit: the oldest missed
        # due times become one skipped row, the newest MAX_CATCH_UP fire
        await _stop(daemon, signal.SIGTERM)
        await trio.sleep(MAX_CATCH_UP + 3)
        c = await _restart(daemon, nursery)
        n = await _until_fired(c, sid, n + MAX_CATCH_UP)
        # kill -9 at random points: right after the start (catching up), while
        # a prompt is queued, mid-stream, between turns
        for _ in range(KILLS):
            await trio.sleep(rng.uniform(0, 2.5))
            await _stop(daemon, signal.SIGKILL)
            c = await _restart(daemon, nursery)
        # it still fires after the last start
        await _until_fired(c, sid, await _fired(c, sid) + 2)
        await c.call("schedule.pause", schedule="tick")
        await _drained(c, agent, sid)
        shown = await c.call("schedule.show", schedule="tick", limit=10_000)
        rows = (await c.call("agent.history", agent="ticker"))["messages"]
    finally:
        daemon.stop()
    return {"schedule": shown, "history": rows}


# ------------------------------------------------------------------ the checks


def _instant(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def check_due_times(shown: dict[str, Any]) -> dict[str, int]:
    """Every 1 s instant from the first due time to the last has exactly one run row."""
    runs = shown["runs"]
    assert len(runs) < 10_000, "schedule.show's limit cut the runs short"
    covered: Counter[datetime] = Counter()
    beyond = 0
    for run in runs:
        due = _instant(run["due_at"])
        if run["status"] == "fired":
            assert run["turn"] and run["agent"] == shown["agent"], run
            covered[due] += 1
            continue
        assert run["status"] == "skipped", run
        found = _BEYOND.match(run["reason"] or "")
        # overlap is queue and the agent lives: nothing else is ever skipped
        assert found, f"a due time skipped for another reason: {run}"
        beyond += 1
        for i in range(int(found.group(1))):
            covered[due + i * SECOND] += 1
    twice = sorted(str(t) for t, k in covered.items() if k > 1)
    assert not twice, f"due times with more than one run: {twice[:10]}"
    first, last = min(covered), max(covered)
    span = int((last - first) / SECOND)
    assert first + span * SECOND == last, "due times off the 1 s grid"
    missing = [str(first + i * SECOND) for i in range(span + 1) if first + i * SECOND not in covered]
    assert not missing, f"due times with no run: {missing[:10]}"
    assert shown["fired"] + shown["skipped"] == len(runs)
    return {"due times": span + 1, "fired": shown["fired"], "skipped rows": shown["skipped"], "beyond": beyond}


def _turns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history's turns in order: user row, its assistant texts, interrupted or not."""
    cut = {r["data"]["turn_start"] for r in rows if r["kind"] == "interrupted"}
    turns: list[dict[str, Any]] = []
    for row in rows:
        if row["kind"] == "user":
            turns.append({"user": row, "replies": [], "interrupted": row["id"] in cut})
        elif row["kind"] == "assistant" and turns:
            turns[-1]["replies"].append(row["content"])
    return turns


def check_history(shown: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each fired run is exactly one user row of the history, with its ids."""
    fired = {r["turn"]: r for r in shown["runs"] if r["status"] == "fired"}
    turns = _turns(rows)
    per_turn = Counter(t["user"]["data"]["turn"] for t in turns)
    twice = [t for t, k in per_turn.items() if k > 1]
    assert not twice, f"turns with more than one user row: {twice}"
    assert set(per_turn) == set(fired), (
        f"fired runs with no user row: {sorted(set(fired) - set(per_turn))}; "
        f"user rows of no fired run: {sorted(set(per_turn) - set(fired))}"
    )
    for t in turns:
        data, run = t["user"]["data"], fired[t["user"]["data"]["turn"]]
        assert t["user"]["content"] == PROMPT
        assert (data["schedule"], data["schedule_run"]) == (shown["id"], run["id"]), data
    return turns


def check_requests(turns: list[dict[str, Any]], requests: list[RecordedRequest]) -> dict[str, int]:
    """No run's prompt reached the model twice.

    A request's *position* is the last answer in its context (None: the first
    turn's); the turn it serves has the same position, since the context is
    the turns before it that were not interrupted. A completed turn claims the
    one request whose answer it stored; each request no turn claims must be an
    interrupted turn's (its answer never stored), at most one per such turn.
    """
    ours = [
        r
        for r in requests
        if (msgs := (r.json or {}).get("messages") or []) and msgs[-1].get("role") == "user" and _texts(msgs[-1]) == PROMPT
    ]
    position: dict[int, str | None] = {}
    for r in ours:
        answers = [_texts(m) for m in r.json["messages"] if m.get("role") == "assistant"]
        position[r.index] = answers[-1] if answers else None
        prompts = [m for m in r.json["messages"] if m.get("role") == "user"]
        assert len(prompts) == len(answers) + 1, f"request {r.index}: a prompt without its answer in the context"
    by_reply = {_reply_text(r.index): r.index for r in ours}
    claimed: dict[int, str] = {}
    before: str | None = None  # the answer that ends the context of the next turn
    interrupted: Counter[str | None] = Counter()
    for t in turns:
        turn = t["user"]["data"]["turn"]
        if t["interrupted"]:
            interrupted[before] += 1
            continue
        assert len(t["replies"]) == 1, f"turn {turn}: answers {t['replies']}"
        index = by_reply.get(t["replies"][0])
        assert index is not None, f"turn {turn}'s answer {t['replies'][0]!r} came from no request"
        assert index not in claimed, f"request {index} answered turns {claimed[index]} and {turn}"
        assert position[index] == before, f"turn {turn}: request {index} had another context"
        claimed[index] = turn
        before = t["replies"][0]
    orphans = Counter(position[r.index] for r in ours if r.index not in claimed)
    for pos, count in orphans.items():
        assert count <= interrupted[pos], (
            f"{count} requests after answer {pos!r} served no completed turn, "
            f"but only {interrupted[pos]} turns there were interrupted: a prompt was sent twice"
        )
    return {"requests": len(ours), "interrupted turns": sum(interrupted.values()), "cut requests": sum(orphans.values())}


async def _run(home: Path, nursery: trio.Nursery, engine: str, **config: Any) -> None:
    seed = int(os.environ.get("IKIGAI_SCHED_SEED", random.randrange(1 << 30)))
    fake = FakeProvider(responder=_responder, default=Reply(text="not a scheduled prompt"))
    await nursery.start(fake.serve)
    write_home(home, fake, **config)
    got = await _scenario(home, fake, nursery, random.Random(seed))
    figures = check_due_times(got["schedule"])
    turns = check_history(got["schedule"], got["history"])
    figures |= check_requests(turns, fake.requests)
    print(f"\nschedule durability ({engine}, seed {seed}): {KILLS} kills, {figures}; none twice, none lost")
    # the run must have been through the places that matter, or it proves little
    assert figures["beyond"] >= 1 and figures["fired"] >= 20


@pytest.mark.slow
async def test_every_due_time_fires_once_across_restarts_and_kills_sqlite(daemon_home: Path, nursery: trio.Nursery) -> None:
    await _run(daemon_home, nursery, "sqlite")


@pytest.mark.slow
@pytest.mark.postgres
async def test_every_due_time_fires_once_across_restarts_and_kills_postgres(daemon_home: Path, nursery: trio.Nursery) -> None:
    from tests.store.conftest import _pg_admin_url, create_pg_database, drop_pg_database

    admin = _pg_admin_url()
    name = f"ikigai_sched_{random.randrange(1 << 30):x}"
    url = create_pg_database(admin, name)
    try:
        await _run(daemon_home, nursery, "postgres", database_url=url)
    finally:
        drop_pg_database(admin, name)


# ------------------------------------------------------------------ the checks can fail


def _request(index: int, answers: list[str]) -> RecordedRequest:
    messages: list[dict[str, Any]] = []
    for answer in answers:
        messages += [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": [{"type": "text", "text": answer}]}]
    messages.append({"role": "user", "content": [{"type": "text", "text": PROMPT}]})
    return RecordedRequest("POST", "/v1/messages", {}, json.dumps({"messages": messages}).encode(), index=index)


def _history(*turns: tuple[str, str | None, bool]) -> list[dict[str, Any]]:
    """(turn, its answer or None, interrupted) in order, as agent.history rows."""
    rows: list[dict[str, Any]] = []
    for turn, answer, cut in turns:
        user = {"id": len(rows) + 1, "kind": "user", "content": PROMPT, "data": {"turn": turn}}
        rows.append(user)
        if answer is not None:
            rows.append({"id": len(rows) + 1, "kind": "assistant", "content": answer, "data": {}})
        if cut:
            rows.append({"id": len(rows) + 1, "kind": "interrupted", "content": "", "data": {"turn_start": user["id"]}})
    return rows


def test_the_request_check_finds_a_prompt_sent_twice() -> None:
    turns = _turns(_history(("t1", _reply_text(0), False), ("t2", None, True), ("t3", _reply_text(2), False)))
    sent = [_request(0, []), _request(1, [_reply_text(0)]), _request(2, [_reply_text(0)])]
    assert check_requests(turns, sent)["cut requests"] == 1
    # t1's prompt again, or the interrupted t2's twice
    for extra in (_request(3, []), _request(3, [_reply_text(0)])):
        with pytest.raises(AssertionError, match="a prompt was sent twice"):
            check_requests(turns, [*sent, extra])
    # an answer that no request gave, or a request in another context
    with pytest.raises(AssertionError, match="came from no request"):
        check_requests(turns, sent[:2])
    with pytest.raises(AssertionError, match="had another context"):
        check_requests(turns, [sent[0], sent[1], _request(2, [])])


def test_the_due_time_check_finds_a_due_time_twice_or_missing() -> None:
    first = datetime(2026, 11, 27, 22, 0, 0, 250_000, tzinfo=UTC)

    def run(i: int, status: str = "fired", reason: str | None = None) -> dict[str, Any]:
        due = (first + i * SECOND).isoformat().replace("+00:00", "Z")
        return {"due_at": due, "status": status, "reason": reason, "turn": f"t{i}" if status == "fired" else None, "agent": "a"}

    beyond = "missed while the daemon was down: 3 due times from X, beyond the catch-up limit of 10"
    runs = [run(0), run(1), run(2, "skipped", beyond), run(5), run(6)]

    def shown(runs: list[dict[str, Any]]) -> dict[str, Any]:
        fired = sum(r["status"] == "fired" for r in runs)
        return {"runs": runs, "fired": fired, "skipped": len(runs) - fired, "agent": "a"}

    assert check_due_times(shown(runs))["due times"] == 7
    with pytest.raises(AssertionError, match="more than one run"):
        check_due_times(shown([*runs, run(6)]))
    with pytest.raises(AssertionError, match="more than one run"):
        check_due_times(shown([*runs, run(3)]))  # within the skipped row's span
    with pytest.raises(AssertionError, match="no run"):
        check_due_times(shown([r for r in runs if r["due_at"] != run(1)["due_at"]]))
    with pytest.raises(AssertionError, match="another reason"):
        check_due_times(shown([*runs, run(7, "skipped", "overlap: the previous run is still running")]))
