"""MCP over the control socket (issue 17): mcp.list / mcp.tools / mcp.prompts
/ mcp.restart against real stdio servers (mcp-server-time and our fake), the
agents' servers (agent.create/fork ``mcp``, AgentInfo.mcp), a reload that
adds and removes servers, and daemon.subscribe's ``mcp_server`` events — with
a subscriber that stops reading ended by a ``lagged`` event, never waited on."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

import protocol as p
from daemon.methods.daemon import event_handlers
from daemon.methods.mcp import McpApi
from daemon.server import ControlServer
from daemon.server.events import DaemonEvents
from protocol import results as R
from protocol.params import PARAMS
from tests.daemon.conftest import DaemonProcess, write_home
from tests.daemon.rpc import Client, RpcFailure, connect

ROOT = Path(__file__).resolve().parents[2]
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time"], "default": True}
FAKE = {"command": sys.executable, "args": [str(ROOT / "tests" / "fakes" / "mcp_server.py")]}


def _strict(value: Any, kind: Any) -> None:
    msgspec.convert(value, kind, strict=True)


async def _start(home: Path, fake_provider, **servers: dict) -> DaemonProcess:
    write_home(home, fake_provider, mcp_servers=servers)
    d = DaemonProcess(home)
    await d.start()
    return d


async def _daemon_events(c: Client, predicate, limit: float = 60) -> list[dict]:
    got = []
    with trio.fail_after(limit):
        async for note in c.notes:
            if note["method"] != p.DAEMON_EVENT:
                continue
            got.append(note["params"])
            if predicate(note["params"]["event"]):
                return got
    raise AssertionError(f"no such daemon event; got {got}")


async def test_list_tools_prompts_and_restart(daemon_home, fake_provider, nursery) -> None:
    d = await _start(daemon_home, fake_provider, time=TIME, fake=FAKE)
    try:
        c = await connect(nursery, str(d.socket))
        assert await c.call("daemon.subscribe") == {"subscribed": True}
        listed = await c.call("mcp.list")
        _strict(listed, R.McpServers)
        states = {s["name"]: s for s in listed["servers"]}
        assert set(states) == {"time", "fake"}
        assert (states["time"]["state"], states["time"]["tools"], states["time"]["pid"]) == ("stopped", 0, None)
        assert states["time"]["transport"] == "stdio" and "mcp_server_time" in states["time"]["target"]

        answer = await c.call("mcp.tools", server="time")  # starts the lazy server
        _strict(answer, R.McpTools)
        tools = {t["name"]: t for t in answer["tools"]}
        assert answer["server"] == "time" and set(tools) == {"get_current_time", "convert_time"}
        now = tools["get_current_time"]
        assert (now["exposed"], now["rejected"]) == ("time__get_current_time", None)
        assert "timezone" in now["input_schema"]["properties"]

        ready = {s["name"]: s for s in (await c.call("mcp.list"))["servers"]}["time"]
        assert ready["state"] == "ready" and ready["tools"] == 2 and isinstance(ready["pid"], int)
        # the subscriber saw it start, in seq order
        seen = await _daemon_events(c, lambda e: e["name"] == "time" and e["state"] == "ready")
        _strict([e["event"] for e in seen], list[R.McpServerState])
        assert [e["event"]["type"] for e in seen] == ["mcp_server"] * len(seen)
        assert [e["seq"] for e in seen] == sorted(e["seq"] for e in seen)
        assert "starting" in [e["event"]["state"] for e in seen if e["event"]["name"] == "time"]

        prompts = await c.call("mcp.prompts", server="fake")
        _strict(prompts, R.McpPrompts)
        (greet,) = prompts["prompts"]
        assert greet["name"] == "greet" and greet["description"] == "Greet someone."
        (who,) = greet["arguments"]
        assert (who["name"], who["required"]) == ("who", True)
        assert (await c.call("mcp.prompts", server="time")) == {"server": "time", "prompts": []}

        restarted = await c.call("mcp.restart", server="time")
        _strict(restarted, R.McpServerState)
        assert restarted["name"] == "time"
        again = await _daemon_events(c, lambda e: e["name"] == "time" and e["state"] == "ready")
        assert again[-1]["event"]["pid"] != ready["pid"]  # a new process
        assert again[-1]["seq"] > seen[-1]["seq"]

        assert await c.call("daemon.unsubscribe") == {"ok": True}
        assert await c.call("daemon.unsubscribe") == {"ok": False}
        await c.call("mcp.restart", server="fake")
        await c.call("mcp.tools", server="fake")
        await trio.sleep(0.3)
        notes = []
        while True:
            try:
                notes.append(c.notes.receive_nowait())
            except trio.WouldBlock:
                break
        # nothing after the unsubscribe answer but what was already in flight
        assert not [n for n in notes if n["params"]["event"].get("name") == "fake"]
    finally:
        d.stop()


async def test_an_unknown_server_names_the_configured_ones(daemon_home, fake_provider, nursery) -> None:
    d = await _start(daemon_home, fake_provider, time=TIME, fake=FAKE)
    try:
        c = await connect(nursery, str(d.socket))
        for method in ("mcp.tools", "mcp.restart", "mcp.prompts"):
            with pytest.raises(RpcFailure) as e:
                await c.call(method, server="nope")
            assert e.value.code == p.INVALID_PARAMS
            assert "no MCP server is named 'nope' (configured: " in e.value.error["message"]
            assert "time" in e.value.error["message"] and "fake" in e.value.error["message"]
        for bad in ({"server": "x" * 257}, {"server": "a\x00b"}, {"server": 3}, {}, {"server": "time", "x": 1}):
            with pytest.raises(RpcFailure) as e:
                await c.call("mcp.tools", **bad)
            assert e.value.code == p.INVALID_PARAMS, bad
        # nothing was started by all that
        assert {s["state"] for s in (await c.call("mcp.list"))["servers"]} == {"stopped"}
    finally:
        d.stop()


async def test_no_server_configured(daemon, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    assert await c.call("mcp.list") == {"servers": []}
    with pytest.raises(RpcFailure, match="none is configured"):
        await c.call("mcp.tools", server="time")
    created = await c.call("agent.create", name="a")
    assert created["agent"]["mcp"] == []
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.create", name="b", mcp=["time"])
    assert e.value.code == p.REFUSED and "unknown MCP server 'time'" in e.value.error["message"]


async def test_a_server_that_cannot_start_fails_with_its_reason(daemon_home, fake_provider, nursery) -> None:
    d = await _start(daemon_home, fake_provider, broken={"command": "/nonexistent/ikigai-mcp", "connect_timeout": 5})
    try:
        c = await connect(nursery, str(d.socket))
        with trio.fail_after(30), pytest.raises(RpcFailure) as e:
            await c.call("mcp.tools", server="broken")
        assert e.value.code == p.MCP_FAILED and e.value.error["data"] == {"server": "broken"}
        assert "broken" in e.value.error["message"]
        (state,) = (await c.call("mcp.list"))["servers"]
        assert state["state"] in ("failed", "restarting") and state["last_error"]
        assert (await c.call("daemon.status"))["pid"]  # the daemon is fine
    finally:
        d.stop()


async def test_agents_choose_their_servers(daemon_home, fake_provider, nursery) -> None:
    d = await _start(daemon_home, fake_provider, time=TIME, fake=FAKE)
    try:
        c = await connect(nursery, str(d.socket))

        async def made(**params: Any) -> list[str]:
            created = await c.call("agent.create", **params)
            _strict(created, R.Created)
            return created["agent"]["mcp"]

        assert await made(name="dflt") == ["time"]  # the defaults
        assert await made(name="fk", mcp=["fake"]) == ["fake"]
        assert await made(name="both", mcp=["fake", "time"]) == ["fake", "time"]
        assert await made(name="none", mcp=[]) == []
        with pytest.raises(RpcFailure) as e:
            await c.call("agent.create", name="bad", mcp=["nope"])
        assert e.value.code == p.REFUSED
        assert "unknown MCP server 'nope'" in e.value.error["message"] and "fake" in e.value.error["message"]
        for bad in ("time", [3], ["x" * 257], ["t"] * 257):
            with pytest.raises(RpcFailure) as e:
                await c.call("agent.create", name="bad", mcp=bad)
            assert e.value.code == p.INVALID_PARAMS and "mcp" in e.value.error["message"], bad

        async def forked(parent: str, **params: Any) -> list[str]:
            return (await c.call("agent.fork", agent=parent, **params))["agent"]["mcp"]

        assert await forked("fk") == ["fake"]  # inherited
        assert await forked("fk", mcp=[]) == []
        assert await forked("dflt") == ["time"]
        assert await forked("none", mcp=["time"]) == ["time"]
        with pytest.raises(RpcFailure, match="unknown MCP server"):
            await c.call("agent.fork", agent="fk", mcp=["nope"])

        shown = await c.call("agent.show", agent="fk")
        _strict(shown, R.ShownAgent)
        assert shown["mcp"] == ["fake"]
        listed = {a["name"]: a["mcp"] for a in await c.call("agent.list")}
        assert (listed["dflt"], listed["none"], listed["both"]) == (["time"], [], ["fake", "time"])
        await c.call("agent.kill", agent="fk")
        assert (await c.call("agent.show", agent="fk"))["mcp"] == ["fake"]  # dead: as stored
        # nobody used a server: creating agents starts none
        assert {s["state"] for s in (await c.call("mcp.list"))["servers"]} == {"stopped"}

        # kept across a restart: the lists are in the database
        d.stop()
        await d.start()
        c = await connect(nursery, str(d.socket))
        listed = {a["name"]: a["mcp"] for a in await c.call("agent.list")}
        assert (listed["dflt"], listed["none"], listed["both"]) == (["time"], [], ["fake", "time"])
    finally:
        d.stop()


async def test_reload_adds_and_removes_servers(daemon_home, fake_provider, nursery) -> None:
    d = await _start(daemon_home, fake_provider, time=TIME)
    try:
        c = await connect(nursery, str(d.socket))
        await c.call("daemon.subscribe")
        await c.call("agent.create", name="a", mcp=["time"])
        await c.call("mcp.tools", server="time")
        path = daemon_home / "config.json"
        cfg = json.loads(path.read_text())

        cfg["mcp_servers"]["fake"] = {**FAKE, "start": "eager"}
        path.write_text(json.dumps(cfg))
        assert await c.call("daemon.reload") == {"ok": True}
        assert {s["name"] for s in (await c.call("mcp.list"))["servers"]} == {"time", "fake"}
        # eager: it starts on its own, and subscribers hear of it
        await _daemon_events(c, lambda e: e["name"] == "fake" and e["state"] == "ready")
        assert await c.call("agent.create", name="b", mcp=["fake"])

        # a reload with a name set nowhere is refused, the running servers kept
        cfg["mcp_servers"]["x"] = {"command": "x", "env": {"T": "$IKIGAI_NOT_SET"}}
        path.write_text(json.dumps(cfg))
        with pytest.raises(RpcFailure, match=r"mcp_servers\.x\.env\.T: \$IKIGAI_NOT_SET is not set"):
            await c.call("daemon.reload")
        assert {s["name"] for s in (await c.call("mcp.list"))["servers"]} == {"time", "fake"}

        del cfg["mcp_servers"]["x"], cfg["mcp_servers"]["time"]
        path.write_text(json.dumps(cfg))
        assert await c.call("daemon.reload") == {"ok": True}
        assert [s["name"] for s in (await c.call("mcp.list"))["servers"]] == ["fake"]
        assert (await c.call("agent.show", agent="a"))["mcp"] == []  # time is no longer configured
        with pytest.raises(RpcFailure) as e:
            await c.call("mcp.tools", server="time")
        assert e.value.code == p.INVALID_PARAMS
        with pytest.raises(RpcFailure, match="unknown MCP server 'time'"):
            await c.call("agent.create", name="c", mcp=["time"])
    finally:
        d.stop()


# ------------------------------------------------------------------ a subscriber that stops reading


async def test_a_subscriber_that_stops_reading_is_lagged_never_waited_on(tmp_path, nursery) -> None:
    async def unused(conn, params):
        raise AssertionError("not called")

    handlers = {m: unused for m in PARAMS} | McpApi(lambda: None).handlers() | event_handlers()
    server = ControlServer(handlers, client_buffer=100)
    events = DaemonEvents()
    events.server = server
    path = str(tmp_path / "s.sock")
    sock = trio.socket.socket(trio.socket.AF_UNIX)
    await sock.bind(path)
    sock.listen()
    await nursery.start(server.serve, sock)

    slow = await trio.open_unix_socket(path)
    await slow.send_all(b'{"jsonrpc":"2.0","id":1,"method":"daemon.subscribe"}\n')
    got = b""
    while b"\n" not in got:
        got += await slow.receive_some(1 << 16)
    assert json.loads(got) == {"jsonrpc": "2.0", "id": 1, "result": {"subscribed": True}}
    (conn,) = server.connections

    # the client reads nothing: publishing goes on, never blocking, until the
    # connection's buffer is nearly full, and then the subscription ends
    big = {"type": "mcp_server", "name": "x", "last_error": "e" * 8000}
    published = 0
    with trio.fail_after(10):
        while conn.daemon_events:
            events.publish(big)
            published += 1
            await trio.lowlevel.checkpoint()  # the writer fills the socket meanwhile
    after = events.seq
    for _ in range(5):
        events.publish(big)  # no longer sent to it
    assert not conn.closed  # not dropped: only its subscription ended

    # it reads again: every event up to the lag, in order, then the lagged one
    await slow.send_all(b'{"jsonrpc":"2.0","id":2,"method":"mcp.list"}\n')
    buf = b""
    lines: list[dict] = []
    with trio.fail_after(10):
        while not any(m.get("id") == 2 for m in lines):
            buf += await slow.receive_some(1 << 16)
            *done, buf = buf.split(b"\n")
            lines += [json.loads(x) for x in done]
    events = [m["params"] for m in lines if m.get("method") == p.DAEMON_EVENT]
    assert [e["seq"] for e in events] == list(range(1, after + 1))
    assert events[-1]["event"] == {"type": "lagged", "missed_from": after}
    assert all(e["event"] == big for e in events[:-1])
    assert next(m for m in lines if m.get("id") == 2)["result"] == {"servers": []}
    assert published == after > 1
    await slow.aclose()


async def test_a_daemon_stop_stops_its_servers(daemon_home, fake_provider, nursery) -> None:
    import os
    import signal

    d = await _start(daemon_home, fake_provider, time={**TIME, "start": "eager"})
    try:
        c = await connect(nursery, str(d.socket))
        with trio.fail_after(60):
            while True:
                (state,) = (await c.call("mcp.list"))["servers"]
                if state["state"] == "ready":
                    break
                await trio.sleep(0.1)
        pid = state["pid"]
        os.kill(pid, 0)  # running
        d.signal(signal.SIGTERM)
        assert await trio.to_thread.run_sync(d.wait, 30) == 0
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # stopped (and reaped) before the daemon exited
        assert "Traceback" not in d.output()
    finally:
        d.stop()
