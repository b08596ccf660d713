"""``fleet.snapshot`` (what ``ikictl top`` shows) against the real daemon and
the fake provider, with agents in several states at once: idle with a budget,
streaming (tokens per second), queued behind the provider key's cap of one
call (``waiting_for_provider``), and waiting for an approval; the limiter's
queue; and the long poll (``since`` + ``wait_s``) answering at a change."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from protocol import INVALID_PARAMS
from protocol import results as R
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.demo import last_turn
from tests.fakes.script import Reply, ToolCall, Usage

POLICIES = {
    "shell": {
        "rules": [{"tool": "bash", "command": "echo *", "action": "ask"}],
        "sandbox": "none",
    }
}
# the streaming agent: 100 pieces of 40 characters, one every 0.1 s (~100
# tokens/s at 4 characters a token), reported as 1000 output tokens
TALK = Reply(text="word " * 800, pieces=100, delay=0.1, usage=Usage(input=50, output=1000))


def _responder(request: Any) -> Reply | None:
    text, result, _ = last_turn(request.json)
    if result is not None:
        return Reply(text="done")
    if text == "talk":
        return TALK
    if text == "approve":
        return Reply(tool_calls=[ToolCall("bash", {"command": "echo hi"}, id="b1")])
    return Reply(text="ok", usage=Usage(input=100, output=20))


def _decode(value: Any) -> R.FleetSnapshot:
    # the documented shape, strictly (as tests/client does)
    return msgspec.convert(value, type=R.FleetSnapshot, strict=True)


async def _until(c: Any, pred: Any, what: str, limit: float = 20) -> R.FleetSnapshot:
    """Snapshots by the long poll until ``pred`` holds: each waits for a change."""
    snap = _decode(await c.call("fleet.snapshot"))
    with trio.fail_after(limit):
        while not pred(snap):
            snap = _decode(await c.call("fleet.snapshot", since=snap["version"], wait_s=0.5))
    return snap


def _by_name(snap: R.FleetSnapshot) -> dict[str, R.FleetAgent]:
    return {a["name"]: a for a in snap["agents"]}


@pytest.fixture
def fleet_daemon(daemon_home, fake_provider):
    providers = {"anthropic": {"base_url": fake_provider.base_url, "read_timeout": 10, "max_concurrent": 1}}
    write_home(daemon_home, fake_provider, policy="shell", policies=POLICIES, providers=providers)
    fake_provider.responder = _responder
    d = DaemonProcess(daemon_home)
    yield d
    d.stop()


async def test_the_fleet_in_several_states(fleet_daemon, nursery) -> None:
    await fleet_daemon.start()
    c = await connect(nursery, str(fleet_daemon.socket))
    await c.call("agent.create", name="boss", budget={"max_cost_usd": 5.0})
    done = await c.call("agent.prompt", agent="boss", text="quick", wait=True)
    assert done["status"] == "completed"
    # a tool call that waits for a person
    await c.call("agent.create", name="asker")
    await c.call("agent.prompt", agent="asker", text="approve")
    await _until(c, lambda s: _by_name(s)["asker"]["state"] == "waiting_for_approval", "approval")
    # a fork of boss streams, holding the key's one slot...
    await c.call("agent.fork", agent="boss", name="talker", prompt="talk")
    await _until(c, lambda s: _by_name(s)["talker"]["tokens_per_s"] > 0, "streaming")
    # ... so another's call waits in the limiter
    await c.call("agent.create", name="queued", prompt="quick")
    snap = await _until(c, lambda s: _by_name(s)["queued"]["waiting"] is not None, "queued")

    agents = _by_name(snap)
    boss, talker, queued, asker = agents["boss"], agents["talker"], agents["queued"], agents["asker"]
    assert boss["state"] == "idle" and boss["waiting"] is None
    assert boss["usage"]["turns"] == 1 and boss["usage"]["input_tokens"] == 100
    assert boss["usage"]["cost_usd"] == pytest.approx(100 * 3e-6 + 20 * 15e-6)
    assert boss["budget"] is not None and boss["budget"]["max_cost_usd"] == 5.0
    assert boss["budget"]["spent_usd"] == pytest.approx(boss["usage"]["cost_usd"])
    # the fork: its own row in boss's tree, under boss's budget
    assert talker["parent"] == boss["uuid"] and talker["tree"] == boss["uuid"] == boss["tree"]
    assert talker["budget"] is not None and talker["budget"]["agent"] == boss["uuid"]
    assert talker["state"] == "waiting_for_llm" and talker["turn"] is not None
    # ~100 tokens/s streamed (40 characters every 0.1 s); loose: a busy machine
    assert 10 < talker["tokens_per_s"] < 400
    assert queued["state"] == "waiting_for_provider"
    assert queued["waiting"] == {
        "on": "provider",
        "provider": "anthropic",
        "position": 1,
        "expected_wait_s": queued["waiting"]["expected_wait_s"],
        "reason": "concurrency",
    }
    assert asker["state"] == "waiting_for_approval"
    assert asker["waiting"] is not None and asker["waiting"]["on"] == "approval"
    assert asker["waiting"]["tool"] == "bash" and asker["waiting"]["approval"]
    assert asker["budget"] is None and asker["tree"] == asker["uuid"]
    assert {a["short"] for a in snap["agents"]} == {a["uuid"][: len(a["short"])] for a in snap["agents"]}
    (lim,) = [x for x in snap["limiters"] if x["provider"] == "anthropic"]
    assert (lim["in_flight"], lim["max_concurrent"]) == (1, 1)
    assert lim["queued"] == {"interactive": 1, "background": 0}
    assert lim["paused_until"] is None and len(lim["key"]) == 12

    # the long poll answers at the next change (the talker cancelled), not at its end
    version = snap["version"]
    answered: list[R.FleetSnapshot] = []

    async def poll() -> None:
        answered.append(_decode(await c.call("fleet.snapshot", since=version, wait_s=30)))

    with trio.fail_after(10):
        async with trio.open_nursery() as n:
            n.start_soon(poll)
            await trio.sleep(0.2)
            assert not answered
            await c.call("agent.cancel", agent="talker")
    assert answered[0]["version"] > version
    # the queued call got the slot, and everything settles
    snap = await _until(
        c, lambda s: _by_name(s)["queued"]["state"] == "idle" and _by_name(s)["talker"]["state"] == "idle", "idle"
    )
    assert all(x["in_flight"] == 0 for x in snap["limiters"])
    # with nothing changing, the poll waits out wait_s
    t0 = trio.current_time()
    same = _decode(await c.call("fleet.snapshot", since=snap["version"], wait_s=0.5))
    assert trio.current_time() - t0 >= 0.45 and same["version"] == snap["version"]
    # a dead agent leaves the fleet
    await c.call("agent.kill", agent="asker")
    gone = await _until(c, lambda s: "asker" not in _by_name(s), "asker gone")
    assert set(_by_name(gone)) == {"boss", "talker", "queued"}


async def test_bad_params_name_the_field(fleet_daemon, nursery) -> None:
    await fleet_daemon.start()
    c = await connect(nursery, str(fleet_daemon.socket))
    for params in ({"wait_s": -1}, {"wait_s": 61}, {"since": -1}, {"since": "x"}, {"tree": "a"}):
        with pytest.raises(RpcFailure) as e:
            await c.call("fleet.snapshot", **params)
        assert e.value.code == INVALID_PARAMS, params
        assert next(iter(params)) in e.value.error["message"], params
