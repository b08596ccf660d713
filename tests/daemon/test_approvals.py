"""Approvals over the real socket of a real ikigaid process: one client
watches a turn block on an ``ask``, a second connection answers it with
``agent.approve``; ``approvals.list``; refusals; a pending approval survives
a daemon restart."""

from __future__ import annotations

import signal

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import INVALID_PARAMS, REFUSED
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect, turn_ended
from tests.fakes.script import Reply, ToolCall

POLICIES = {
    "shell": {
        "rules": [
            {"tool": "bash", "command": "echo *", "action": "ask"},
            {"tool": "bash", "action": "deny"},
        ],
        "sandbox": "none",
    }
}


@pytest.fixture
def gated(daemon_home, fake_provider):
    write_home(daemon_home, fake_provider, policy="shell", policies=POLICIES)
    d = DaemonProcess(daemon_home)
    yield d
    d.stop()


def _asked(ev: dict) -> bool:
    return ev["event"]["type"] == "approval_requested"


async def _start_asking(nursery, gated, fake, command: str = "echo hi"):
    """A client whose agent's turn waits on an approval: (client, agent, turn, event)."""
    await gated.start()
    fake.push(Reply(tool_calls=[ToolCall("bash", {"command": command}, id="b1")]), Reply(text="all done"))
    a = await connect(nursery, str(gated.socket))
    created = await a.call("agent.create", name="w")
    uuid = created["agent"]["uuid"]
    await a.call("agent.subscribe", agent=uuid)
    queued = await a.call("agent.prompt", agent=uuid, text="run it")
    events = await a.events_until(_asked)
    return a, uuid, queued["turn"], events[-1]


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_second_connection_answers(nursery, gated, fake_provider, decision):
    a, uuid, turn, asked = await _start_asking(nursery, gated, fake_provider)
    ev = asked["event"]
    assert (ev["tool"], ev["arguments"], ev["rule"], ev["policy"]) == (
        "bash", {"command": "echo hi"}, "ask bash command=echo *", "shell",
    )
    b = await connect(nursery, str(gated.socket))
    shown = await b.call("agent.show", agent=uuid)
    assert shown["state"] == "waiting_for_approval"
    [listed] = await b.call("approvals.list")
    assert listed["approval"] == ev["approval"] and listed["agent_name"] == "w" and listed["turn"] == turn
    assert await b.call("approvals.list", agent="w") == [listed]
    assert len(fake_provider.requests) == 1  # the turn is blocked
    answer = await b.call("agent.approve", approval=ev["approval"], decision=decision, reason="no shell today")
    assert answer == {"approval": ev["approval"], "agent": uuid, "decision": decision}
    events = await a.events_until(turn_ended(turn))
    assert events[-1]["event"]["status"] == "completed"
    decided = [e["event"] for e in events if e["event"]["type"] == "approval_decided"]
    assert decided[0]["decision"] == decision and decided[0]["by"].startswith("client pid ")
    result = fake_provider.requests[-1].json["messages"][-1]["content"][0]
    text = result["content"] if isinstance(result["content"], str) else result["content"][0]["text"]
    if decision == "allow":
        assert "hi" in text and not result.get("is_error")
    else:
        assert result["is_error"] and text.endswith(": no shell today")
    rows = (await b.call("agent.history", agent=uuid))["messages"]
    [perm] = [r for r in rows if r["kind"] == "permission"]
    assert perm["data"]["decision"] == decision and perm["data"]["approval"] == ev["approval"]
    assert await b.call("approvals.list") == []
    # answered once: a second answer is refused, saying by whom
    with pytest.raises(RpcFailure) as e:
        await b.call("agent.approve", approval=ev["approval"], decision="allow")
    assert e.value.code == REFUSED and "already decided" in e.value.error["message"] and "client pid" in e.value.error["message"]


async def test_hostile_answers_are_refused_and_disturb_nothing(nursery, gated, fake_provider):
    a, _uuid, turn, asked = await _start_asking(nursery, gated, fake_provider)
    b = await connect(nursery, str(gated.socket))
    with pytest.raises(RpcFailure) as e:
        await b.call("agent.approve", approval="ap-000000000000", decision="allow")
    assert e.value.code == INVALID_PARAMS and "ap-000000000000" in e.value.error["message"]

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        st.fixed_dictionaries(
            {"approval": st.one_of(st.text(min_size=257, max_size=400), st.integers(), st.text().map(lambda s: s + "\x00"))},
            optional={"decision": st.one_of(st.text(max_size=20), st.none()), "reason": st.text(min_size=2001, max_size=2100)},
        )
    )
    def check(params):
        bad.append(params)

    bad: list = []
    check()
    for params in bad:
        with pytest.raises(RpcFailure) as e:
            await b.call("agent.approve", **params)
        assert e.value.code == INVALID_PARAMS, (params, e.value.error)
        assert len(e.value.error["message"]) < 700
    with pytest.raises(RpcFailure) as e:
        await b.call("agent.approve", approval=asked["event"]["approval"], decision="maybe")
    assert e.value.code == INVALID_PARAMS and "decision" in e.value.error["message"]
    # still pending, still answerable
    [listed] = await b.call("approvals.list")
    assert listed["approval"] == asked["event"]["approval"]
    await b.call("agent.approve", approval=listed["approval"], decision="allow")
    events = await a.events_until(turn_ended(turn))
    assert events[-1]["event"]["status"] == "completed"


async def test_pending_approval_survives_a_daemon_restart(nursery, gated, fake_provider):
    _a, uuid, turn, asked = await _start_asking(nursery, gated, fake_provider)
    approval = asked["event"]["approval"]
    gated.signal(signal.SIGTERM)
    assert await trio.to_thread.run_sync(gated.wait) == 0
    await gated.start()
    b = await connect(nursery, str(gated.socket))
    # stored before the restart: listed as soon as the daemon answers
    listed = await b.call("approvals.list")
    assert [x["approval"] for x in listed] == [approval]  # asked again, same id
    await b.call("agent.subscribe", agent=uuid, from_seq=1)
    events = await b.events_until(_asked)
    assert events[-1]["event"]["approval"] == approval and events[-1]["turn"] == turn
    await b.call("agent.approve", approval=approval, decision="allow")
    events = await b.events_until(turn_ended(turn))
    assert events[-1]["event"]["status"] == "completed"
    shown = await b.call("agent.show", agent=uuid)
    assert shown["last_turn"]["reply"] == "all done"
    kinds = [r["kind"] for r in (await b.call("agent.history", agent=uuid))["messages"]]
    assert kinds[-3:] == ["permission", "tool_result", "assistant"] and "interrupted" not in kinds
