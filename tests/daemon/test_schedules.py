"""schedule.* over the socket against a real daemon and the fake provider:
runs fire and reach the model, carry their schedule in history, fork runs
leave the parent alone, and bad parameters are refused naming the field."""

from __future__ import annotations

import pytest
import trio

from protocol import INVALID_PARAMS, REFUSED, SCHEDULE_NOT_FOUND
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply, ToolCall


def _prompts(fake, text: str) -> int:
    """Model calls whose last user message is ``text``."""
    n = 0
    for r in fake.requests:
        msgs = (r.json or {}).get("messages") or []
        users = [m for m in msgs if m.get("role") == "user"]
        if users:
            content = users[-1].get("content")
            if isinstance(content, list):
                content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
            if content == text:
                n += 1
    return n


async def _until(predicate, limit: float = 60) -> None:
    # a poll of the daemon's answers (a schedule fires on its own clock)
    with trio.fail_after(limit):
        while True:
            if await predicate():
                return
            await trio.sleep(0.05)


async def test_an_interval_schedule_fires_and_its_runs_are_in_history(
    daemon, fake_provider, nursery
):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="w")
    fake_provider.default = Reply(text="checked")
    sched = await c.call(
        "schedule.add",
        agent="w",
        prompt="check the build",
        every="1s",
        allow_fast=True,
        name="build",
    )
    assert sched["status"] == "active" and sched["rule"] == "every 1s"
    assert sched["next_run"] is not None and sched["fired"] == 0

    async def two_fired() -> bool:
        return (await c.call("schedule.show", schedule="build"))["fired"] >= 2

    await _until(two_fired)
    paused = await c.call("schedule.pause", schedule=str(sched["id"]))
    assert paused["status"] == "paused" and paused["next_run"] is None
    shown = await c.call("schedule.show", schedule="build")
    fired = [r for r in shown["runs"] if r["status"] == "fired"]
    for run in fired:
        outcome = await c.call("agent.wait", agent="w", turn=run["turn"])
        assert outcome["status"] == "completed"
    # every fired run is one user row of the agent's history, carrying its ids
    rows = (await c.call("agent.history", agent="w"))["messages"]
    users = [r for r in rows if r["kind"] == "user"]
    assert {(u["data"]["schedule"], u["data"]["schedule_run"]) for u in users} == {
        (sched["id"], run["id"]) for run in fired
    }
    assert _prompts(fake_provider, "check the build") == len(fired)
    # due times a second apart, each once
    dues = sorted(r["due_at"] for r in shown["runs"])
    assert len(dues) == len(set(dues))
    # paused: schedule.run still fires, once, now
    run = await c.call("schedule.run", schedule="build")
    assert run["status"] == "fired" and run["agent"] == shown["agent"]
    after = await c.call("schedule.show", schedule="build")
    assert after["fired"] == len(fired) + 1
    assert after["status"] == "paused"
    removed = await c.call("schedule.remove", schedule="build")
    assert removed == {"removed": sched["id"]}
    assert await c.call("schedule.list") == []
    assert [s["status"] for s in await c.call("schedule.list", all=True)] == ["removed"]


async def test_fork_runs_leave_the_parent_untouched(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="p")
    fake_provider.default = Reply(text="done")
    await c.call("agent.prompt", agent="p", text="remember this", wait=True)
    before = (await c.call("agent.history", agent="p"))["messages"]
    sched = await c.call(
        "schedule.add",
        agent="p",
        prompt="summarize",
        every="1h",
        fork=True,
        keep=1,
        name="daily",
    )
    first = await c.call("schedule.run", schedule="daily")
    outcome = await c.call("agent.wait", agent=first["agent"], turn=first["turn"])
    assert outcome["status"] == "completed"
    # the fork saw the parent's history, then its own prompt
    rows = (await c.call("agent.history", agent=first["agent"]))["messages"]
    texts = [r["content"] for r in rows if r["kind"] in ("user", "assistant")]
    assert texts[-4:] == ["remember this", "done", "summarize", "done"]
    second = await c.call("schedule.run", schedule="daily")
    outcome = await c.call("agent.wait", agent=second["agent"], turn=second["turn"])
    assert outcome["status"] == "completed"
    agents = {a["uuid"]: a for a in await c.call("agent.list", include_dead=True)}
    assert agents[first["agent"]]["name"] == "daily-1"
    assert agents[second["agent"]]["name"] == "daily-2"
    assert agents[second["agent"]]["parent"] == sched["agent"]
    # keep 1: the second run pruned the first, whose turn had ended
    assert agents[first["agent"]]["status"] == "dead"
    assert agents[second["agent"]]["status"] == "running"
    assert (await c.call("agent.history", agent="p"))["messages"] == before


@pytest.mark.parametrize(
    ("params", "code", "wanted"),
    [
        ({"cron": "61 * * * *"}, INVALID_PARAMS, "cron:"),
        ({"cron": "0 9 * *"}, INVALID_PARAMS, "cron:"),
        ({"cron": "0 9 * * *", "tz": "Mars/Olympus"}, INVALID_PARAMS, "tz: unknown time zone"),
        ({"every": "30s"}, INVALID_PARAMS, "every: 30s is under 1 minute"),
        ({"every": "10"}, INVALID_PARAMS, "a unit is needed"),
        ({"every": "0m"}, INVALID_PARAMS, "every:"),
        ({"at": "2020-01-01T09:00"}, INVALID_PARAMS, "at: 2020-01-01T09:00 is in the past"),
        ({"at": "tomorrow"}, INVALID_PARAMS, "at:"),
        ({"in": "soon"}, INVALID_PARAMS, "in:"),
        ({}, INVALID_PARAMS, "give exactly one of cron, every, at or in"),
        ({"every": "1h", "in": "2h"}, INVALID_PARAMS, "not every and in"),
        ({"every": "1h", "keep": 2}, INVALID_PARAMS, "keep: only a fork schedule"),
        ({"every": "1h", "budget_usd": 1.0}, INVALID_PARAMS, "budget_usd: only a fork schedule"),
        ({"every": "1h", "missed": "some"}, INVALID_PARAMS, "missed"),
        ({"every": "1h", "prompt": "  "}, INVALID_PARAMS, "prompt:"),
        ({"every": "1h", "agent": "nobody"}, -32001, "nobody"),
    ],
)
async def test_bad_schedules_are_refused_naming_the_field(daemon, nursery, params, code, wanted):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="w")
    with pytest.raises(RpcFailure) as err:
        await c.call("schedule.add", **{"agent": "w", "prompt": "hi", **params})
    assert err.value.code == code
    assert wanted in str(err.value)
    assert await c.call("schedule.list", all=True) == []


async def test_a_dead_agent_and_unknown_schedules_are_refused(daemon, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="gone")
    await c.call("agent.kill", agent="gone")
    with pytest.raises(RpcFailure) as err:
        await c.call("schedule.add", agent="gone", prompt="hi", every="1h")
    assert err.value.code == REFUSED and "dead" in str(err.value)
    for method in ("schedule.show", "schedule.run", "schedule.pause", "schedule.remove"):
        with pytest.raises(RpcFailure) as err:
            await c.call(method, schedule="nope")
        assert err.value.code == SCHEDULE_NOT_FOUND and "nope" in str(err.value)


POLICIES = {
    "shell": {
        "rules": [
            {"tool": "bash", "command": "echo *", "action": "ask"},
            {"tool": "bash", "action": "deny"},
        ],
        "sandbox": "none",
    }
}


async def _daemon_events(c, wanted: str, limit: float = 60) -> dict:
    """The next daemon.event of type ``wanted`` (after daemon.subscribe)."""
    with trio.fail_after(limit):
        async for note in c.notes:
            if note["method"] == "daemon.event" and note["params"]["event"]["type"] == wanted:
                return note["params"]["event"]
    raise AssertionError(f"the connection ended before a {wanted} event")


async def test_a_run_waiting_for_approval_says_so_and_the_daemon_tells_fired_and_skipped(
    daemon_home, fake_provider, nursery
):
    write_home(daemon_home, fake_provider, policy="shell", policies=POLICIES)
    d = DaemonProcess(daemon_home)
    try:
        await d.start()
        watcher = await connect(nursery, str(d.socket))
        await watcher.call("daemon.subscribe")
        c = await connect(nursery, str(d.socket))
        agent = (await c.call("agent.create", name="w"))["agent"]["uuid"]
        fake_provider.push(
            Reply(tool_calls=[ToolCall("bash", {"command": "echo hi"}, id="b1")]),
            Reply(text="all done"),
        )
        sched = await c.call(
            "schedule.add", agent="w", prompt="run it", every="1s", allow_fast=True, name="gate"
        )
        fired = await _daemon_events(watcher, "schedule_fired")
        assert (fired["schedule"], fired["name"], fired["agent"]) == (sched["id"], "gate", agent)
        # the run's turn waits on its approval: the next due time overlaps it
        skipped = await _daemon_events(watcher, "schedule_skipped")
        assert skipped["schedule"] == sched["id"]
        assert skipped["reason"].startswith(f"overlap: the previous run (turn {fired['turn']})")
        [listed] = await c.call("schedule.list")
        assert listed["last_run"]["status"] == "skipped"
        shown = await c.call("schedule.show", schedule="gate")
        first = next(r for r in shown["runs"] if r["id"] == fired["run"])
        assert (first["turn"], first["turn_status"]) == (fired["turn"], "waiting_for_approval")
        await c.call("schedule.pause", schedule="gate")
        [asked] = await c.call("approvals.list", agent="w")
        await c.call("agent.approve", approval=asked["approval"], decision="allow")
        outcome = await c.call("agent.wait", agent="w", turn=fired["turn"])
        assert outcome["status"] == "completed" and outcome["reply"] == "all done"
        shown = await c.call("schedule.show", schedule="gate")
        first = next(r for r in shown["runs"] if r["id"] == fired["run"])
        assert first["turn_status"] == "completed"
    finally:
        d.stop()
