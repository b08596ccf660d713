"""``agent.set_policy`` over the real socket of a real ikigaid: the agent's
next tool call is gated by the new policy, the change outlives a restart, a
fork keeps its ancestors' policies before its own, and bad names are refused
with nothing changed."""

from __future__ import annotations

import pytest
import trio

from protocol import INVALID_PARAMS, REFUSED
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect, turn_ended
from tests.fakes.script import Reply, ToolCall

POLICIES = {"shell": {"rules": [{"tool": "bash", "action": "ask"}], "sandbox": "none"}}


@pytest.fixture
def home(daemon_home, fake_provider):
    write_home(daemon_home, fake_provider, policy="yolo", policies=POLICIES)
    return daemon_home


async def test_the_next_tool_call_follows_the_new_policy(nursery, home, fake_provider):
    d = DaemonProcess(home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", name="w"))["agent"]["uuid"]
        assert (await c.call("agent.show", agent=uuid))["policy"] == ["yolo"]
        status = await c.call("daemon.status")
        assert "shell" in status["policies"] and status["default_policy"] == "yolo"
        assert await c.call("agent.set_policy", agent="w", policy="shell") == {"agent": uuid, "policy": ["shell"]}
        fake_provider.push(Reply(tool_calls=[ToolCall("bash", {"command": "echo hi"}, id="b1")]), Reply(text="ok"))
        await c.call("agent.subscribe", agent=uuid)
        queued = await c.call("agent.prompt", agent=uuid, text="run it")
        [*_, asked] = await c.events_until(lambda ev: ev["event"]["type"] == "approval_requested")
        assert asked["event"]["policy"] == "shell"
        await c.call("agent.approve", approval=asked["event"]["approval"], decision="allow")
        await c.events_until(turn_ended(queued["turn"]))

        # null: the configured default again
        assert (await c.call("agent.set_policy", agent="w", policy=None))["policy"] == ["yolo"]
        await c.call("agent.set_policy", agent="w", policy="shell")
        d.stop()
        await d.start()
        c2 = await connect(nursery, str(d.socket))
        assert (await c2.call("agent.show", agent=uuid))["policy"] == ["shell"]
    finally:
        d.stop()


def _asked(ev: dict) -> bool:
    return ev["event"]["type"] == "approval_requested"


async def test_a_running_turn_s_later_calls_follow_the_new_policy(nursery, home, fake_provider, tmp_path):
    """Set while a turn runs: the call running goes on under the old policy
    (yolo, unasked), the turn's next call is gated by the new one."""
    d = DaemonProcess(home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", name="w", cwd=str(tmp_path)))["agent"]["uuid"]
        # the first call waits for the file "go", which the test makes once the policy is set
        wait_for_go = "while [ ! -e go ]; do sleep 0.05; done; echo one"
        fake_provider.push(
            Reply(tool_calls=[ToolCall("bash", {"command": wait_for_go}, id="b1")]),
            Reply(tool_calls=[ToolCall("bash", {"command": "echo two"}, id="b2")]),
            Reply(text="done"),
        )
        await c.call("agent.subscribe", agent=uuid)
        queued = await c.call("agent.prompt", agent=uuid, text="run both")
        await c.events_until(lambda ev: ev["event"]["type"] == "tool_started" and ev["event"]["id"] == "b1")
        assert (await c.call("agent.show", agent=uuid))["current_turn"] == queued["turn"]
        await c.call("agent.set_policy", agent=uuid, policy="shell")
        (tmp_path / "go").touch()
        got = await c.events_until(_asked, limit=30)
        finished = [ev["event"] for ev in got if ev["event"]["type"] == "tool_finished"]
        assert [(f["id"], f["is_error"]) for f in finished] == [("b1", False)]  # ran unasked
        asked = got[-1]["event"]
        assert (asked["tool_call_id"], asked["policy"]) == ("b2", "shell")
        await c.call("agent.approve", approval=asked["approval"], decision="allow")
        ended = await c.events_until(turn_ended(queued["turn"]), limit=30)
        assert ended[-1]["event"]["status"] == "completed"
    finally:
        d.stop()


async def test_a_fork_can_only_narrow_its_ancestors(nursery, home, fake_provider):
    d = DaemonProcess(home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        await c.call("agent.create", name="p", policy="shell")
        child = (await c.call("agent.fork", agent="p", name="k"))["agent"]["uuid"]
        assert (await c.call("agent.set_policy", agent=child, policy="yolo"))["policy"] == ["shell", "yolo"]
        assert (await c.call("agent.set_policy", agent=child, policy=None))["policy"] == ["shell"]
    finally:
        d.stop()


@pytest.mark.parametrize("name", ["nope", "x" * 300, "", 5])
async def test_a_bad_name_is_refused_and_nothing_changes(nursery, home, name):
    d = DaemonProcess(home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", name="w"))["agent"]["uuid"]
        with pytest.raises(RpcFailure) as e:
            await c.call("agent.set_policy", agent=uuid, policy=name)
        assert e.value.code == INVALID_PARAMS and "policy" in e.value.error["message"]
        assert (await c.call("agent.show", agent=uuid))["policy"] == ["yolo"]
        await c.call("agent.kill", agent=uuid)
        with trio.fail_after(10), pytest.raises(RpcFailure) as dead:
            await c.call("agent.set_policy", agent=uuid, policy="shell")
        assert dead.value.code == REFUSED
    finally:
        d.stop()
