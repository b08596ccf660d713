"""Each agent has a working directory: given at create, inherited by forks,
kept across a restart, used by every tool (issue 14 item 4). Before, tools ran
in whatever folder the daemon had been started from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from protocol import REFUSED
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply, ToolCall

ROOT = Path(__file__).resolve().parents[2]


def _tool_output(fake_provider, call_id: str) -> str:
    """The tool result the daemon sent back to the (Anthropic) fake for ``call_id``."""
    for req in reversed(fake_provider.requests):
        for m in req.json.get("messages", []):
            for block in m["content"] if isinstance(m["content"], list) else []:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                    content = block["content"]
                    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
    raise AssertionError(f"no tool result for {call_id}")


async def _run_pwd(c, fake_provider, agent: str, call_id: str) -> str:
    fake_provider.push(Reply(tool_calls=[ToolCall("bash", {"command": "pwd; ls"}, id=call_id)]))
    fake_provider.push(Reply(text="done"))
    await c.call("agent.prompt", agent=agent, text="where are you?", wait=True)
    return _tool_output(fake_provider, call_id)


async def test_tools_run_in_the_agents_folder_and_forks_inherit_it(daemon, fake_provider, nursery, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "marker-one").write_text("")
    (two / "marker-two").write_text("")
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    created = await c.call("agent.create", name="a", cwd=str(one))
    assert created["agent"]["cwd"] == str(one)
    assert "marker-one" in await _run_pwd(c, fake_provider, "a", "t1")
    # a fork inherits the folder; --cwd gives the child another one
    child = await c.call("agent.fork", agent="a", name="a2")
    assert child["agent"]["cwd"] == str(one)
    assert str(one) in await _run_pwd(c, fake_provider, "a2", "t2")
    other = await c.call("agent.fork", agent="a", name="a3", cwd=str(two))
    assert (await c.call("agent.show", agent="a3"))["cwd"] == str(two)
    assert "marker-two" in await _run_pwd(c, fake_provider, "a3", "t3")
    # file tools resolve relative paths there too
    fake_provider.push(Reply(tool_calls=[ToolCall("file_write", {"path": "made.txt", "content": "x"}, id="t4")]))
    fake_provider.push(Reply(text="written"))
    await c.call("agent.prompt", agent=other["agent"]["uuid"], text="write", wait=True)
    assert (two / "made.txt").read_text() == "x"
    assert not (one / "made.txt").exists()


async def test_the_folder_survives_a_restart(daemon, fake_provider, nursery, tmp_path):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="keep", cwd=str(tmp_path))
    daemon.stop()
    await daemon.start()
    c2 = await connect(nursery, str(daemon.socket))
    assert (await c2.call("agent.show", agent="keep"))["cwd"] == str(tmp_path)
    assert str(tmp_path) in await _run_pwd(c2, fake_provider, "keep", "r1")


@pytest.mark.parametrize(
    ("cwd", "says"),
    [
        ("relative/dir", "is not an absolute path"),
        ("/no/such/folder/anywhere", "is not an existing folder"),
        ("/etc/passwd", "is not an existing folder"),
        ("/tmp/a\0b", "NUL"),
        ("", "cwd"),
        ("/" + "x" * 5000, "cwd"),
    ],
)
async def test_a_bad_folder_is_refused_naming_it(daemon, nursery, cwd, says):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.create", name="bad", cwd=cwd)
    assert says in e.value.error["message"]
    # a malformed value is invalid params; a well-formed path that is no use, refused
    assert e.value.code == (-32602 if cwd in ("", "/" + "x" * 5000) else REFUSED)
    # nothing was created, and the daemon still serves
    assert [a["name"] for a in await c.call("agent.list")] == []


def _ikictl(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IKIGAI_")}
    env["IKIGAI_HOME"] = str(home)
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "ikictl", "--no-autostart", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=30,
    )


async def test_ikictl_new_defaults_to_its_own_folder(daemon, nursery, tmp_path):
    import trio

    await daemon.start()
    here = tmp_path / "here"
    (here / "sub").mkdir(parents=True)
    r = await trio.to_thread.run_sync(lambda: _ikictl(daemon.home, "new", "-n", "n1", "--json", cwd=here))
    assert r.returncode == 0, r.stderr
    r = await trio.to_thread.run_sync(lambda: _ikictl(daemon.home, "new", "-n", "n2", "--cwd", "sub", "--json", cwd=here))
    assert r.returncode == 0, r.stderr
    r = await trio.to_thread.run_sync(lambda: _ikictl(daemon.home, "fork", "n1", "-n", "n3", "--json", cwd=tmp_path))
    assert r.returncode == 0, r.stderr
    c = await connect(nursery, str(daemon.socket))
    assert (await c.call("agent.show", agent="n1"))["cwd"] == str(here)
    assert (await c.call("agent.show", agent="n2"))["cwd"] == str(here / "sub")
    assert (await c.call("agent.show", agent="n3"))["cwd"] == str(here)
    r = await trio.to_thread.run_sync(lambda: _ikictl(daemon.home, "show", "n2", cwd=tmp_path))
    assert "cwd" in r.stdout and str(here / "sub") in r.stdout
    r = await trio.to_thread.run_sync(lambda: _ikictl(daemon.home, "new", "--cwd", "missing", cwd=here))
    assert r.returncode == 2 and "is not an existing folder" in r.stderr and "Traceback" not in r.stderr
