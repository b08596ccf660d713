"""The MCP hub against our fake server (real processes over stdio): one
shared connection, lazy and eager starts, crashes, timeouts, cancel,
list_changed, restart and reload."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import trio

from agents.tools.mcp import McpError, McpServerSpec

from .conftest import alive, fake_spec, python_spec, until


async def test_lazy_start_then_one_session_shared_by_concurrent_callers(start_hub):
    box = await start_hub({"fake": fake_spec()})
    hub = box.hub
    assert hub.state("fake").state == "stopped" and box.seen == []  # lazy: nothing yet
    with trio.fail_after(20):
        t0 = time.perf_counter()
        tools = await hub.tools("fake")
        connect = time.perf_counter() - t0
    state = hub.state("fake")
    assert state.state == "ready" and state.pid is not None and alive(state.pid)
    assert state.tools == len(tools) and state.restarts == 0
    assert box.states_of("fake") == ["starting", "ready"]
    assert "fake__echo" in {t.exposed for t in tools}

    # two agents (two tasks) at once: both answers, over the one process
    results = {}

    async def agent(i: int) -> None:
        results[i] = await hub.call("fake", "slow", {"seconds": 1.0})

    t0 = time.perf_counter()
    with trio.fail_after(10):
        async with trio.open_nursery() as agents:
            agents.start_soon(agent, 1)
            agents.start_soon(agent, 2)
    both = time.perf_counter() - t0
    assert [results[1].content, results[2].content] == ["slept 1.0", "slept 1.0"]
    assert both < 1.8  # concurrent on the session, not one after the other
    assert hub.state("fake").pid == state.pid
    assert box.states_of("fake") == ["starting", "ready"]  # one process, one initialize

    t0 = time.perf_counter()
    out = await hub.call("fake", "add", {"a": 2, "b": 3})
    call = time.perf_counter() - t0
    assert (out.content, out.is_error) == ("5", False)
    print(f"connect {connect:.2f} s, call {call * 1000:.0f} ms")


async def test_results_text_image_and_errors(start_hub):
    hub = (await start_hub({"fake": fake_spec()})).hub
    with trio.fail_after(20):
        out = await hub.call("fake", "echo", {"text": "héllo"})
        assert (out.content, out.is_error, out.images) == ("héllo", False, ())
        out = await hub.call("fake", "image", {})
        assert len(out.images) == 1 and out.images[0].media_type == "image/png"
        assert out.images[0].data and out.images[0].data.startswith("iVBOR")
        out = await hub.call("fake", "fail", {})  # isError
        assert out.is_error and "went wrong on purpose" in out.content
        out = await hub.call("fake", "raise", {})  # a JSON-RPC error
        assert out.is_error and "bad params on purpose" in out.content and "-32602" in out.content
        out = await hub.call("fake", "no_such_tool", {})
        assert out.is_error and "no_such_tool" in out.content
        out = await hub.read_resource("fake", "fake://readme")
        assert not out.is_error and "the readme of the fake server" in out.content
        out = await hub.read_resource("fake", "fake://nope")
        assert out.is_error
        prompts = await hub.prompts("fake")
        assert prompts == [
            {
                "name": "greet",
                "description": "Greet someone.",
                "arguments": [{"name": "who", "description": "", "required": True}],
            }
        ]
    assert hub.state("fake").restarts == 0  # none of that disturbed the session


async def test_unknown_server(start_hub):
    hub = (await start_hub({"fake": fake_spec()})).hub
    for coro in (hub.tools("nope"), hub.call("nope", "x", {}), hub.restart("nope")):
        try:
            await coro
        except McpError as exc:
            assert "nope" in str(exc) and "fake" in str(exc)  # names the known ones
        else:
            raise AssertionError("McpError expected")
    assert hub.state("fake").state == "stopped"  # not started by any of that


async def test_crash_mid_call_is_an_error_then_the_server_restarts(start_hub):
    box = await start_hub({"fake": fake_spec()})
    hub = box.hub
    with trio.fail_after(30):
        await hub.tools("fake")
        first = hub.state("fake").pid
        out = await hub.call("fake", "crash", {})
        assert out.is_error
        assert out.content == "the MCP server fake stopped during the call; it is being restarted"
        out = await hub.call("fake", "echo", {"text": "again"})  # waits for the restart
        assert (out.content, out.is_error) == ("again", False)
    state = hub.state("fake")
    assert state.restarts == 1 and state.pid != first and not alive(first)
    assert "exited with code 3" in (state.last_error or "") or state.last_error is None
    assert box.states_of("fake") == ["starting", "ready", "restarting", "starting", "ready"]
    down = box.seen[2]
    assert down.pid is None and "exited with code 3" in (down.last_error or "")
    assert "fake: crashing" in (down.last_error or "")  # its stderr tail


async def test_server_failing_at_start_fails_fast_and_is_retried(start_hub):
    code = "import sys; sys.stderr.write('boom: no config\\n'); sys.exit(1)"
    box = await start_hub(
        {
            "bad": python_spec("bad", code, connect_timeout=10),
            "missing": McpServerSpec("missing", command="/nonexistent/no-such-mcp-server"),
        }
    )
    hub = box.hub
    t0 = time.perf_counter()
    with trio.fail_after(10):
        out = await hub.call("bad", "anything", {})
    assert time.perf_counter() - t0 < 5  # not the whole connect_timeout
    assert out.is_error and out.content.startswith("the MCP server bad is not available: ")
    assert "exited with code 1" in out.content and "boom: no config" in out.content
    state = hub.state("bad")
    assert state.state in ("failed", "starting")
    # retried with backoff: 0.5 s then 1 s
    await box.wait_for("bad", lambda s: s.restarts >= 2, within=10)
    assert box.states_of("bad")[:4] == ["starting", "failed", "starting", "failed"]
    try:
        with trio.fail_after(10):
            await hub.tools("missing")
    except McpError as exc:
        assert "cannot start the server" in str(exc) and "no-such-mcp-server" in str(exc)
    else:
        raise AssertionError("McpError expected")


async def test_silent_call_times_out_progress_keeps_it_alive(start_hub):
    hub = (await start_hub({"fake": fake_spec(call_timeout=1.5)})).hub
    with trio.fail_after(30):
        await hub.tools("fake")
        pid = hub.state("fake").pid
        t0 = time.perf_counter()
        out = await hub.call("fake", "hang", {})
        took = time.perf_counter() - t0
        assert out.is_error and "timed out after 1.5 s" in out.content
        assert 1.4 < took < 6
        # the session is still good
        out = await hub.call("fake", "echo", {"text": "still"})
        assert (out.content, out.is_error) == ("still", False)
        # 4 steps 0.5 s apart: 2 s in all, never silent for 1.5 s (a margin for a loaded machine)
        seen = []
        out = await hub.call(
            "fake",
            "progress",
            {"steps": 4, "interval": 0.5},
            progress=lambda p, total, msg: seen.append((p, total, msg)),
        )
        assert (out.content, out.is_error) == ("done 4", False)
        assert sorted(seen) == [(float(i), 4.0, f"step {i}") for i in range(1, 5)]
        # silent longer than call_timeout between two progress notes: cut
        out = await hub.call("fake", "progress", {"steps": 2, "interval": 3.0})
        assert out.is_error and "timed out after 1.5 s" in out.content
    assert hub.state("fake").pid == pid and hub.state("fake").restarts == 0


async def test_cancelling_the_caller_cancels_the_call_on_the_server(start_hub, tmp_path: Path):
    hub = (await start_hub({"fake": fake_spec()})).hub
    marker = tmp_path / "cancelled"
    with trio.fail_after(30):
        await hub.tools("fake")
        with trio.move_on_after(0.5) as scope:
            await hub.call("fake", "slow", {"seconds": 30, "marker": str(marker)})
        assert scope.cancelled_caught
        await until(marker.exists)  # the server saw notifications/cancelled
        out = await hub.call("fake", "echo", {"text": "fine"})
    assert out.content == "fine" and marker.read_text() == "cancelled"


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto: 2026-07-28, subscriptions/listen
async def test_list_changed_adds_the_tool_without_restart(start_hub, mode):
    box = await start_hub({"fake": fake_spec(mode=mode)})
    hub = box.hub
    with trio.fail_after(20):
        before = await hub.tools("fake")
        pid = hub.state("fake").pid
        out = await hub.call("fake", "grow", {"name": "extra"})
        assert out.content == "added extra"
        await until(lambda: hub.state("fake").tools == len(before) + 1)  # re-listed
        specs = {s.name: s for s in await hub.tool_specs(["fake"])}
        assert "fake__extra" in specs
        out = await hub.call("fake", "extra", {})
    assert out.content == "I am extra"
    assert len(await hub.tools("fake")) == len(before) + 1
    state = hub.state("fake")
    assert state.pid == pid and state.restarts == 0 and state.tools == len(before) + 1


async def test_restart_gives_a_new_process(start_hub):
    box = await start_hub({"fake": fake_spec()})
    hub = box.hub
    with trio.fail_after(30):
        await hub.tools("fake")
        old = hub.state("fake").pid
        state = await hub.restart("fake")
    assert state.state == "ready" and state.pid != old and state.restarts == 1
    assert old is not None and not alive(old)
    assert (await hub.call("fake", "echo", {"text": "new"})).content == "new"
    # a death while idle is noticed without a call, and the server restarted
    os.kill(state.pid, signal.SIGKILL)
    again = await box.wait_for("fake", lambda s: s.state == "ready" and s.pid != state.pid)
    assert again.restarts == 2
    down, up = box.seen[-3], box.seen[-2]
    assert down.state == "restarting" and "killed by signal 9" in (down.last_error or "")
    assert up.state == "starting" and up.since - down.since >= 0.45  # after the backoff


async def test_configure_and_shutdown_leave_no_process(nursery):
    from agents.tools.mcp import McpHub

    seen = []
    hub = McpHub(
        {"a": fake_spec("a", start="eager"), "b": fake_spec("b", start="eager")},
        on_state=seen.append,
    )
    with trio.fail_after(40):
        async with trio.open_nursery() as inner:
            await inner.start(hub.run)
            # eager: they start with the hub, nobody asked for a tool
            await until(lambda: {s.state for s in hub.states()} == {"ready"})
            pid_a, pid_b = hub.state("a").pid, hub.state("b").pid
            in_flight = []

            async def call_a() -> None:
                in_flight.append(await hub.call("a", "slow", {"seconds": 30}))

            inner.start_soon(call_a)
            await trio.sleep(0.3)
            hub.configure(
                {
                    "b": fake_spec("b", start="eager", call_timeout=5.0),  # changed
                    "c": fake_spec("c", default=True),  # new, lazy
                }
            )
            assert hub.names() == ["b", "c"] and hub.defaults() == ["c"]
            await until(lambda: not alive(pid_a) and bool(in_flight))
            # the call on the removed server ended at once, as an error
            assert in_flight[0].is_error
            assert in_flight[0].content == "the MCP server a stopped during the call"
            await until(lambda: hub.state("b").state == "ready" and hub.state("b").pid != pid_b)
            assert hub.state("c").state == "stopped"
            assert ("a", "stopped") in [(s.name, s.state) for s in seen]
            await hub.tools("c")
            pids = [s.pid for s in hub.states()]
            assert all(pid is not None and alive(pid) for pid in pids)
            inner.cancel_scope.cancel()
    # hub.run returned: every server stopped, no process left behind
    assert [s.state for s in hub.states()] == ["stopped", "stopped"]
    assert not any(alive(pid) for pid in [pid_a, pid_b, *pids] if pid is not None)
