"""MCP tools in the real turn loop: a scripted model calls SERVER__TOOL, the
call goes through the permission gate to a real MCP server process, and the
result reaches the model in the next request."""

from __future__ import annotations

import json

import trio

from agents import AgentConfig, RetryPolicy
from agents.events import ApprovalRequested, ToolFinished, ToolProgress, TurnEnded
from agents.permissions import Permissions
from agents.tools.mcp import McpHub
from tests.agents.conftest import of
from tests.agents.mcp.conftest import fake_spec, python_spec
from tests.fakes.script import Reply, ToolCall


def _config() -> AgentConfig:
    return AgentConfig(retry=RetryPolicy(base_delay=0.01, jitter=0.0))


def _tool_names(req) -> list[str]:
    return [t["name"] for t in req.json.get("tools", [])]


async def _hub(nursery, **specs) -> McpHub:
    hub = McpHub(specs)
    await nursery.start(hub.run)
    return hub


async def test_a_model_calls_an_mcp_tool_and_reads_its_result(harness, nursery):
    hub = await _hub(nursery, fake=fake_spec("fake", default=True))
    fake = harness.fake
    fake.push(
        Reply(tool_calls=[ToolCall("fake__echo", {"text": "hello mcp"}, id="call_1")]),
        Reply(text="the server said it"),
    )
    sup = await harness.start(config=_config(), mcp=hub)
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="user")
    events = await harness.turn(rec.uuid, "use the echo tool", limit=30)
    assert of(events, TurnEnded)[-1].status == "completed"
    first, second = fake.requests[-2:]
    assert "fake__echo" in _tool_names(first)
    result = second.json["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "call_1"
    assert "hello mcp" in json.dumps(result["content"])
    done = of(events, ToolFinished)[0]
    assert done.name == "fake__echo" and not done.is_error


async def test_servers_per_agent_defaults_forks_and_none(harness, nursery):
    hub = await _hub(
        nursery,
        fake=fake_spec("fake", default=True),
        time=fake_spec("time"),  # not a default: only agents that name it
    )
    harness.fake.default = Reply(text="ok")
    sup = await harness.start(config=_config(), mcp=hub)
    plain, _, _ = await sup.create(model="claude-sonnet-4-5", name="plain")
    named, _, _ = await sup.create(model="claude-sonnet-4-5", name="named", mcp=["time"])
    bare, _, _ = await sup.create(model="claude-sonnet-4-5", name="bare", mcp=[])
    assert sup.mcp_servers_of(plain.uuid) == ["fake"]
    assert sup.mcp_servers_of(named.uuid) == ["time"]
    assert sup.mcp_servers_of(bare.uuid) == []
    child, _, _ = await sup.fork(named.uuid, name="child")
    assert sup.mcp_servers_of(child.uuid) == ["time"]  # inherited
    for agent, offered in [(plain, "fake__echo"), (named, "time__echo")]:
        await harness.turn(agent.uuid, "hi", limit=30)
        assert offered in _tool_names(harness.fake.requests[-1])
    await harness.turn(bare.uuid, "hi", limit=30)
    assert not any("__" in n for n in _tool_names(harness.fake.requests[-1]))
    try:
        await sup.create(model="claude-sonnet-4-5", name="bad", mcp=["nope"])
    except Exception as e:
        assert "unknown MCP server 'nope'" in str(e) and "fake" in str(e)
    else:
        raise AssertionError("an unknown server was accepted")


async def test_mcp_tools_are_asked_under_the_default_policy(harness, nursery):
    hub = await _hub(nursery, fake=fake_spec("fake", default=True))
    fake = harness.fake
    fake.push(
        Reply(tool_calls=[ToolCall("fake__add", {"a": 2, "b": 3}, id="call_add")]),
        Reply(text="five"),
    )
    sup = await harness.start(config=_config(), mcp=hub, permissions=Permissions())
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="careful")
    actor = await sup.live(rec.uuid)
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    await sup.prompt(actor, "add")
    asked = None
    with trio.fail_after(30):
        async for entry in sub:
            if isinstance(entry.event, ApprovalRequested):
                asked = entry.event
                break
    assert asked.tool == "fake__add" and asked.arguments == {"a": 2, "b": 3}
    await sup.approve(asked.approval, "deny", reason="not now", by="test")
    with trio.fail_after(30):
        async for entry in sub:
            if isinstance(entry.event, TurnEnded):
                break
    sub.close()
    result = fake.requests[-1].json["messages"][-1]["content"][0]
    assert result["is_error"] is True and "not now" in json.dumps(result)


async def test_progress_of_a_long_mcp_call_reaches_the_agents_stream(harness, nursery):
    hub = await _hub(nursery, fake=fake_spec("fake", default=True))
    fake = harness.fake
    fake.push(
        Reply(tool_calls=[ToolCall("fake__progress", {"steps": 3, "interval": 0.05}, id="call_p")]),
        Reply(text="done"),
    )
    sup = await harness.start(config=_config(), mcp=hub)
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="patient")
    events = await harness.turn(rec.uuid, "go", limit=30)
    assert of(events, TurnEnded)[-1].status == "completed"
    progress = of(events, ToolProgress)
    assert progress and all(p.id == "call_p" and p.name == "fake__progress" for p in progress)
    assert max(p.progress for p in progress) == 3


async def test_cancelling_the_turn_cancels_the_mcp_call(harness, nursery, tmp_path):
    hub = await _hub(nursery, fake=fake_spec("fake", default=True))
    marker = tmp_path / "cancelled"
    fake = harness.fake
    fake.push(Reply(tool_calls=[ToolCall("fake__slow", {"seconds": 30, "marker": str(marker)}, id="c")]))
    sup = await harness.start(config=_config(), mcp=hub)
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="impatient")
    actor = await sup.live(rec.uuid)
    sub = actor.log.subscribe(from_seq=actor.log.next_seq)
    await sup.prompt(actor, "wait")
    with trio.fail_after(30):
        async for entry in sub:
            if getattr(entry.event, "name", None) == "fake__slow":
                break
        await trio.sleep(0.3)
        actor.cancel()
        async for entry in sub:
            if isinstance(entry.event, TurnEnded):
                assert entry.event.status == "interrupted"
                break
        for _ in range(500):  # the server saw notifications/cancelled
            if marker.exists():
                break
            await trio.sleep(0.05)
    sub.close()
    assert marker.exists()


async def test_a_server_that_never_answers_delays_only_the_first_turn(harness, nursery):
    """A default server that hangs at start costs the first turn its
    connect_timeout; later turns do not wait on it again while it keeps
    failing (they go on without its tools)."""
    mute = python_spec("mute", "import time; time.sleep(600)", default=True, connect_timeout=2)
    hub = await _hub(nursery, mute=mute, fake=fake_spec("fake", default=True))
    harness.fake.default = Reply(text="ok")
    sup = await harness.start(config=_config(), mcp=hub)
    rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="waits-once")
    with trio.fail_after(15):
        events = await harness.turn(rec.uuid, "first", limit=15)
    assert of(events, TurnEnded)[-1].status == "completed"
    offered = _tool_names(harness.fake.requests[-1])
    assert "fake__echo" in offered and not any(n.startswith("mute__") for n in offered)
    for _ in range(100):  # its own connect attempt ends a moment after the turn gave up on it
        if hub.state("mute").last_error is not None:
            break
        await trio.sleep(0.05)
    assert hub.state("mute").last_error is not None
    for n in range(2):
        for _ in range(200):  # its next attempt: the server is starting (and will hang) again
            if hub.state("mute").state == "starting":
                break
            await trio.sleep(0.05)
        assert hub.state("mute").state == "starting"
        with trio.fail_after(1.5):  # well under the 2 s connect_timeout
            events = await harness.turn(rec.uuid, f"again {n}", limit=15)
        assert of(events, TurnEnded)[-1].status == "completed"
