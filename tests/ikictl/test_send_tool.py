"""``ikictl send --tool NAME`` and ``--no-tools``: the real ikictl against a
real ikigaid, the fake provider over loopback in this process (so the test
reads the request bodies the daemon sent)."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from tests._ready import READY_TIMEOUT
from tests.daemon.conftest import DaemonProcess, write_home
from tests.fakes.script import Reply, ToolCall

from .conftest import IKICTL, clean_env


@contextlib.asynccontextmanager
async def gpt_daemon(fake_provider) -> AsyncIterator[DaemonProcess]:
    """A real ikigaid whose default model is openai/gpt-4o, on the fake provider."""
    home = Path(tempfile.mkdtemp(prefix="ikst", dir="/tmp"))  # short: a socket path's limit
    write_home(home, fake_provider, default_model="openai/gpt-4o")
    d = DaemonProcess(home)
    try:
        await d.start()
        yield d
    finally:
        d.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
async def ikigaid(fake_provider):
    async with gpt_daemon(fake_provider) as d:
        yield d


async def ikictl(d: DaemonProcess, *args: str, code: int = 0, stdin: bytes = b"") -> tuple[str, str]:
    with trio.fail_after(READY_TIMEOUT):
        r = await trio.run_process(
            [*IKICTL, "--no-autostart", *args], capture_stdout=True, capture_stderr=True,
            check=False, env=clean_env(d.home), stdin=stdin,
        )
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == code, f"ikictl {args} -> {r.returncode}\n{out}\n{err}"
    return out, err


async def test_send_tool_forces_that_tool_on_the_first_call_only(ikigaid, fake_provider):
    await ikictl(ikigaid, "new", "--name", "t", "-q")
    fake_provider.push(Reply(tool_calls=[ToolCall("glob", {"pattern": "*.none"}, id="call_1")]), Reply(text="nothing there"))
    out, _ = await ikictl(ikigaid, "send", "t", "--tool", "glob", "find it")
    assert out.strip() == "nothing there"
    first, second = (r.json for r in fake_provider.requests)
    assert first["tool_choice"] == {"type": "function", "function": {"name": "glob"}}
    assert second["tool_choice"] == "auto"
    # --no-wait queues it with the same choice
    fake_provider.push(Reply(tool_calls=[ToolCall("glob", {"pattern": "*.x"}, id="call_2")]), Reply(text="ok"))
    out, _ = await ikictl(ikigaid, "--json", "send", "t", "--no-wait", "--tool", "glob", "again")
    assert json.loads(out)["turn"]
    with trio.fail_after(READY_TIMEOUT):
        await fake_provider.wait_for_requests(4)
    assert fake_provider.requests[2].json["tool_choice"] == first["tool_choice"]
    assert fake_provider.requests[3].json["tool_choice"] == "auto"


async def test_send_no_tools_says_none_on_every_call(ikigaid, fake_provider):
    await ikictl(ikigaid, "new", "--name", "t", "-q")
    fake_provider.push(Reply(tool_calls=[ToolCall("glob", {"pattern": "*"}, id="call_1")]), Reply(text="in words"))
    out, _ = await ikictl(ikigaid, "send", "t", "--no-tools", "just say it")
    assert out.strip() == "in words"
    assert [r.json["tool_choice"] for r in fake_provider.requests] == ["none", "none"]
    fake_provider.push(Reply(text="free"))
    await ikictl(ikigaid, "send", "t", "and now")
    assert fake_provider.requests[-1].json["tool_choice"] == "auto"


async def test_send_a_tool_the_agent_lacks_is_refused_and_nothing_is_sent(ikigaid, fake_provider):
    await ikictl(ikigaid, "new", "--name", "t", "-q")
    _, err = await ikictl(ikigaid, "send", "t", "--tool", "nope", "go", code=2)
    assert err.startswith("ikictl: tool_choice.name: agent t has no tool 'nope' (its tools: bash, "), err
    assert err.count("\n") == 1
    out, _ = await ikictl(ikigaid, "--json", "history", "t")
    assert json.loads(out)["messages"] == []
    assert fake_provider.requests == []
    # both at once is a usage error of ikictl's own
    _, err = await ikictl(ikigaid, "send", "t", "--tool", "glob", "--no-tools", "go", code=2)
    assert "not allowed with argument" in err
    out, _ = await ikictl(ikigaid, "send", "--help")
    assert "--tool NAME" in out and "--no-tools" in out
