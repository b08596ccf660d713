"""``agent.prompt {tool_choice}`` over the real socket of a real ikigaid,
against the fake provider over loopback: each wire API gets the choice in its
own spelling (a forced tool on the turn's first call only, "none" on every
call), a queued choice survives a kill -9, and every bad value (malformed, a
tool the agent does not have) is refused naming the field, with nothing
stored and the daemon unaffected."""

from __future__ import annotations

import json
import signal
import sys

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agents.tools import agent_tools, builtin_tools
from daemon.methods.tool_choice import LISTED, _listed
from protocol import INVALID_PARAMS
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply, Stall, ToolCall

MODELS = {
    "messages": "anthropic/claude-sonnet-4-5/low",  # thinking on: the forced call goes without
    "chat": "openai/gpt-4o",
    "responses": "openai/gpt-5",
    "generate_content": "google/gemini-2.5-flash",
}
ASKED = {"required": "required", "named": {"name": "glob"}, "none": "none"}
# (the body's key, its value) for each choice, per API
SPELLED = {
    "messages": {
        "required": ("tool_choice", {"type": "any"}),
        "named": ("tool_choice", {"type": "tool", "name": "glob"}),
        "none": ("tool_choice", {"type": "none"}),
    },
    "chat": {
        "required": ("tool_choice", "required"),
        "named": ("tool_choice", {"type": "function", "function": {"name": "glob"}}),
        "none": ("tool_choice", "none"),
    },
    "responses": {
        "required": ("tool_choice", "required"),
        "named": ("tool_choice", {"type": "function", "name": "glob"}),
        "none": ("tool_choice", "none"),
    },
    "generate_content": {
        "required": ("toolConfig", {"functionCallingConfig": {"mode": "ANY"}}),
        "named": ("toolConfig", {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["glob"]}}),
        "none": ("toolConfig", {"functionCallingConfig": {"mode": "NONE"}}),
    },
}


def _free(api: str, body: dict) -> bool:
    """The request leaves the tool choice to the model."""
    if api in ("chat", "responses"):
        return body.get("tool_choice") == "auto"
    return "tool_choice" not in body and "toolConfig" not in body


def _globbing() -> Reply:
    return Reply(tool_calls=[ToolCall("glob", {"pattern": "*.nothing-here"}, id="call_1")])


@pytest.mark.parametrize("api", list(MODELS))
async def test_each_wire_api_gets_the_choice_in_its_own_spelling(nursery, daemon, fake_provider, api):
    """required and a name on the turn's first call, free on the call after
    the tool ran; none on both calls (the fake calls a tool anyway)."""
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model=MODELS[api]))["agent"]["uuid"]
    for asked, choice in ASKED.items():
        fake_provider.push(_globbing(), Reply(text="done"))
        before = len(fake_provider.requests)
        with trio.fail_after(30):
            done = await c.call("agent.prompt", agent=uuid, text=f"go {asked}", tool_choice=choice, wait=True)
        assert done["status"] == "completed", done
        first, second = (r.json for r in fake_provider.requests[before:])
        key, value = SPELLED[api][asked]
        assert first[key] == value, json.dumps(first)[:3000]
        if asked == "none":
            assert second[key] == value and "tools" in first
        else:
            assert _free(api, second), json.dumps(second)[:3000]
        if api == "messages":  # Anthropic takes no thinking with a forced tool
            assert ("thinking" in first) == (asked == "none")
    # the next prompt, asked nothing, is free from its first call
    fake_provider.push(Reply(text="plain"))
    with trio.fail_after(30):
        await c.call("agent.prompt", agent=uuid, text="and now?", wait=True)
    assert _free(api, fake_provider.requests[-1].json)
    if api == "messages":
        history = await c.call("agent.history", agent=uuid, blocks=True)
        assert len([m for m in history["messages"] if m.get("role") == "user"]) == 4


async def test_anthropic_says_when_a_forced_call_goes_without_thinking(nursery, daemon, fake_provider):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="claude-sonnet-4-5/high"))["agent"]["uuid"]
    fake_provider.push(_globbing(), Reply(text="done"))
    await c.call("agent.subscribe", agent=uuid)
    queued = await c.call("agent.prompt", agent=uuid, text="look", tool_choice={"name": "glob"})
    events = await c.events_until(lambda ev: ev["turn"] == queued["turn"] and ev["event"]["type"] == "turn_ended")
    notes = [e["event"]["text"] for e in events if e["event"]["type"] == "notice"]
    assert any("Anthropic takes no thinking with a forced tool (tool_choice: glob)" in n for n in notes), notes
    assert events[-1]["event"]["status"] == "completed"
    assert "thinking" not in fake_provider.requests[0].json


@pytest.fixture
def narrow_home(daemon_home, fake_provider):
    """Agents with two tools: config enables three and disables one."""
    write_home(daemon_home, fake_provider, tools={"enabled": ["glob", "bash", "file_read"], "disabled": ["bash"]})
    return daemon_home


BAD_NAMES = ["bash", "file_write", "nope", "glob ", "GLOB", "x" * 256, "a\x00b", "fork"]
MALFORMED = ["any", "", "AUTO", 5, True, ["none"], {}, {"nam": "glob"}, {"name": "glob", "type": "tool"}]
FORMS = 'invalid params for agent.prompt: tool_choice: must be "auto", "none", "required" or {"name": TOOL}'


async def test_a_tool_the_agent_lacks_is_refused_before_anything_is_stored(nursery, narrow_home, fake_provider):
    """Disabled, not enabled, unknown: -32602 naming tool_choice.name and
    listing the agent's tools; a malformed value: the accepted forms named;
    nothing queued or stored, nothing sent; then a tool it has is taken."""
    d = DaemonProcess(narrow_home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", name="narrow"))["agent"]["uuid"]
        for name in BAD_NAMES:
            with pytest.raises(RpcFailure) as e:
                await c.call("agent.prompt", agent=uuid, text="look", tool_choice={"name": name}, wait=True)
            message = e.value.error["message"]
            assert e.value.code == INVALID_PARAMS, message
            assert message.startswith("tool_choice.name: agent narrow has no tool "), message
            assert message.endswith("(its tools: file_read, glob)"), message
            assert len(message) < 300
        for value in MALFORMED:  # the accepted forms named
            with pytest.raises(RpcFailure) as e:
                await c.call("agent.prompt", agent=uuid, text="look", tool_choice=value)
            assert (e.value.code, e.value.error["message"]) == (INVALID_PARAMS, FORMS), value
        assert (await c.call("agent.history", agent=uuid))["messages"] == []
        assert (await c.call("agent.show", agent=uuid))["queued"] == 0
        assert fake_provider.requests == []
        fake_provider.push(Reply(text="fine"))
        with trio.fail_after(30):
            done = await c.call("agent.prompt", agent=uuid, text="go", tool_choice={"name": "file_read"}, wait=True)
        assert done["status"] == "completed"
        assert fake_provider.requests[-1].json["tool_choice"]["name"] == "file_read"
    finally:
        d.stop()


async def test_required_is_refused_for_an_agent_without_tools(nursery, daemon_home, fake_provider):
    write_home(daemon_home, fake_provider, tools={"enabled": []})
    d = DaemonProcess(daemon_home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", name="bare"))["agent"]["uuid"]
        with pytest.raises(RpcFailure) as e:
            await c.call("agent.prompt", agent=uuid, text="go", tool_choice="required")
        assert e.value.code == INVALID_PARAMS
        assert e.value.error["message"].startswith("tool_choice: required, but agent bare has no tools")
        with pytest.raises(RpcFailure) as e:
            await c.call("agent.prompt", agent=uuid, text="go", tool_choice={"name": "bash"})
        assert e.value.error["message"].endswith("(its tools: none)")
        assert (await c.call("agent.history", agent=uuid))["messages"] == []
        # none and auto need no tool
        fake_provider.push(Reply(text="a"), Reply(text="b"))
        with trio.fail_after(30):
            for choice in ("none", "auto"):
                done = await c.call("agent.prompt", agent=uuid, text="go", tool_choice=choice, wait=True)
                assert done["status"] == "completed"
    finally:
        d.stop()


def test_a_long_list_of_tools_is_cut_saying_how_many_more():
    names = [f"server__tool_{i:03}" for i in range(200)]
    listed = _listed(names)
    assert len(listed) <= LISTED + 40
    shown = listed.split(", … and ")[0].split(", ")
    assert listed.endswith(f", … and {200 - len(shown)} more")
    assert shown == sorted(names)[: len(shown)]
    assert _listed(["b", "a", "b"]) == "a, b" and _listed([]) == "none"


async def test_a_queued_tool_choice_survives_a_daemon_kill(nursery, daemon, fake_provider):
    """A prompt queued behind a running turn keeps its tool choice in the
    durable queue: after kill -9 the restarted daemon forces the tool on its
    first call, and only there."""
    await daemon.start()
    fake_provider.push(Reply(text="slow", fault=Stall()))
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", model="openai/gpt-4o"))["agent"]["uuid"]
    await c.call("agent.prompt", agent=uuid, text="first")
    with trio.fail_after(30):
        await fake_provider.wait_for_requests(1)
    queued = await c.call("agent.prompt", agent=uuid, text="look", tool_choice={"name": "glob"})
    assert queued["position"] == 1
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait()
    fake_provider.push(_globbing(), Reply(text="seen"))
    await daemon.restart()
    c2 = await connect(nursery, str(daemon.socket))
    with trio.fail_after(30):
        done = await c2.call("agent.wait", agent=uuid, turn=queued["turn"])
    assert done["status"] == "completed"
    first, second = (r.json for r in fake_provider.requests[-2:])
    assert first["tool_choice"] == {"type": "function", "function": {"name": "glob"}}
    assert second["tool_choice"] == "auto"
    # the turn's choice, not its message's: the user row keeps no trace of it
    history = await c2.call("agent.history", agent=uuid)
    assert not any("tool_choice" in json.dumps(m.get("data") or {}) for m in history["messages"])


# what the daemon's agents have: the built-in and agent tools (no MCP server, no tool folder)
HAVE = {s.name for s in [*builtin_tools(), *agent_tools()]}
_wrong = st.integers() | st.none() | st.booleans() | st.floats() | st.lists(st.integers(), max_size=2)
_choice = (
    st.sampled_from(["auto", "none", "required", "any", "tool", "AUTO", "", "None"])
    | st.text(max_size=12)
    | st.fixed_dictionaries({"name": st.sampled_from([*sorted(HAVE), "nope", "", "Bash", "mcp__x"]) | st.text(max_size=300) | _wrong})
    | st.fixed_dictionaries({}, optional={"name": st.sampled_from(sorted(HAVE)), "type": st.sampled_from(["tool", "function"]), "mode": st.text(max_size=5)})
    | _wrong
    | st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)
)


def _taken(choice: object) -> bool:
    """Would the daemon take it (as docs/protocol.md, "Tool choice", says)?"""
    if choice is None or choice in ("auto", "none", "required"):
        return True
    if not isinstance(choice, dict) or set(choice) != {"name"}:
        return False
    return isinstance(choice["name"], str) and choice["name"] in HAVE


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(choice={"name": "n" * 5000})
@example(choice={"name": "bash", "type": "tool"})
@example(choice="n" * 5000)
@example(choice={"name": []})
@example(choice={"name": "nope"})
@example(choice={"name": "glob"})
@given(choice=_choice)
async def test_any_tool_choice_is_taken_or_refused_naming_the_field(nursery, daemon, fake_provider, choice):
    """Against an agent whose turn runs on (so a prompt it takes is queued):
    each value is queued, or refused -32602 naming ``tool_choice`` with
    nothing queued and history unchanged; the daemon keeps answering."""
    fake_provider.default = Reply(text="held", fault=Stall())  # every turn runs until the daemon leaves
    if daemon.proc is None:
        await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuid = (await c.call("agent.create", prompt="hold on"))["agent"]["uuid"]
    before = await c.call("agent.show", agent=uuid)
    rows = (await c.call("agent.history", agent=uuid))["messages"]
    assert before["current_turn"] is not None
    try:
        queued = await c.call("agent.prompt", agent=uuid, text="look", tool_choice=choice)
    except RpcFailure as e:
        assert not _taken(choice), e.error
        assert e.code == INVALID_PARAMS and "tool_choice" in e.error["message"], e.error
        assert len(e.error["message"]) < 1000  # a huge name is never quoted whole
        assert (await c.call("agent.show", agent=uuid))["queued"] == before["queued"]
        assert (await c.call("agent.history", agent=uuid))["messages"] == rows
    else:
        assert _taken(choice), choice
        assert queued["position"] == before["queued"] + 1
    assert (await c.call("daemon.status"))["agents"]["running"] >= 1
    await c.call("agent.kill", agent=uuid)  # its queue goes with it


async def test_a_tool_of_the_agents_mcp_server_can_be_forced(nursery, daemon_home, fake_provider):
    """An MCP tool is the agent's too: its lazy server starts at the check,
    the name is forced on the first call; an agent without that server has
    no such tool (refused, its tools listed without it)."""
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time"], "default": True}
    write_home(daemon_home, fake_provider, mcp_servers={"time": time_server})
    d = DaemonProcess(daemon_home)
    await d.start()
    try:
        c = await connect(nursery, str(d.socket))
        uuid = (await c.call("agent.create", model="openai/gpt-4o"))["agent"]["uuid"]
        fake_provider.push(Reply(text="it is late"))
        with trio.fail_after(60):
            done = await c.call("agent.prompt", agent=uuid, text="time?", tool_choice={"name": "time__get_current_time"}, wait=True)
        assert done["status"] == "completed"
        assert fake_provider.requests[-1].json["tool_choice"] == {"type": "function", "function": {"name": "time__get_current_time"}}
        bare = (await c.call("agent.create", name="no-mcp", mcp=[]))["agent"]["uuid"]
        with pytest.raises(RpcFailure) as e:
            await c.call("agent.prompt", agent=bare, text="time?", tool_choice={"name": "time__get_current_time"})
        assert e.value.code == INVALID_PARAMS and "time__" not in e.value.error["message"].split("(its tools:")[1]
        with pytest.raises(RpcFailure) as e:
            await c.call("agent.prompt", agent=uuid, text="time?", tool_choice={"name": "time__nope"})
        assert "time__get_current_time" in e.value.error["message"].split("(its tools:")[1]
    finally:
        d.stop()
