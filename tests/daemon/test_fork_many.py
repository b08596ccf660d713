"""agent.fork {count} / {prompts} over the socket, and ikictl fork --count /
--prompts: many children, one call, each with its first turn running."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import trio

from protocol import INVALID_PARAMS, MAX_FORKS
from store import MAX_NAME as MAX_AGENT_NAME
from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import Reply


async def test_fork_with_prompts_makes_one_child_each(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="p")
    fake_provider.default = Reply(text="done")
    await c.call("agent.prompt", agent="p", text="context", wait=True)
    res = await c.call("agent.fork", agent="p", prompts=["one", "two", "three"], name="w")
    children = res["children"]
    assert [ch["agent"]["name"] for ch in children] == ["w-1", "w-2", "w-3"]
    assert all(ch["turn"] for ch in children)
    for ch in children:
        outcome = await c.call("agent.wait", agent=ch["agent"]["uuid"], turn=ch["turn"])
        assert outcome["status"] == "completed" and outcome["reply"] == "done"
    # each child saw the parent's history, then its own prompt
    for ch, text in zip(children, ["one", "two", "three"], strict=True):
        rows = (await c.call("agent.history", agent=ch["agent"]["uuid"]))["messages"]
        assert [r["content"] for r in rows if r["kind"] in ("user", "assistant")][-2:] == [
            text,
            "done",
        ]


async def test_fork_with_count_and_wait_answers_every_outcome(daemon, fake_provider, nursery):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="p")
    fake_provider.default = Reply(text="same answer")
    with trio.fail_after(60):
        res = await c.call("agent.fork", agent="p", count=5, prompt="try", wait=True)
    assert len(res["children"]) == 5
    assert {ch["outcome"]["reply"] for ch in res["children"]} == {"same answer"}
    # count without a prompt: idle children
    res = await c.call("agent.fork", agent="p", count=2)
    assert [ch["turn"] for ch in res["children"]] == [None, None]


@pytest.mark.parametrize(
    ("params", "wanted"),
    [
        ({"prompts": ["a"], "prompt": "b"}, "not both"),
        ({"prompts": ["a"], "count": 1}, "not both"),
        ({"prompts": []}, "at least one"),
        ({"count": 0}, "count: must be 1 or more"),
        ({"count": MAX_FORKS + 1}, "count"),
        ({"prompts": ["x"] * (MAX_FORKS + 1)}, "prompts"),
        ({"prompts": ["ok", "  "]}, "empty"),
    ],
)
async def test_bad_fan_outs_are_refused_and_make_nothing(daemon, nursery, params, wanted):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="p")
    with pytest.raises(RpcFailure) as e:
        await c.call("agent.fork", agent="p", **params)
    assert wanted in e.value.error["message"]
    if "empty" not in wanted:
        assert e.value.code == INVALID_PARAMS
    assert len(await c.call("agent.list")) == 1


async def test_ikictl_fork_count_and_prompts(daemon, fake_provider, nursery, tmp_path):
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="p")
    fake_provider.default = Reply(text="ok")
    env = daemon.env

    def ikictl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ikictl", *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )

    out = await trio.to_thread.run_sync(lambda: ikictl("fork", "p", "--count", "3", "go", "-q"))
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.split()) == 3
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("first idea\n\nsecond idea\n")
    out = await trio.to_thread.run_sync(
        lambda: ikictl("fork", "p", "--prompts", str(prompts), "--json")
    )
    assert out.returncode == 0, out.stderr
    made = json.loads(out.stdout)["children"]
    assert len(made) == 2 and all(ch["turn"] for ch in made)
    out = await trio.to_thread.run_sync(
        lambda: ikictl("fork", "p", "--prompts", "-", "--name", "s", stdin="a\nb\n")
    )
    assert out.returncode == 0, out.stderr
    assert "s-1" in out.stdout and "s-2" in out.stdout
    bad = await trio.to_thread.run_sync(
        lambda: ikictl("fork", "p", "--prompts", str(tmp_path / "missing"))
    )
    assert bad.returncode != 0 and "cannot read it" in bad.stderr
    bad = await trio.to_thread.run_sync(lambda: ikictl("fork", "p", "--count", "0", "x"))
    assert bad.returncode != 0 and "--count must be 1 or more" in bad.stderr


async def test_a_long_name_is_cut_keeping_each_childs_number(daemon, fake_provider, nursery):
    # the longest name an agent may have, asked of 12 children: each name is
    # cut from the front so that it fits and still ends with its number
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="p")
    long = "n" * MAX_AGENT_NAME
    res = await c.call("agent.fork", agent="p", count=12, name=long)
    names = [ch["agent"]["name"] for ch in res["children"]]
    assert [n.rsplit("-", 1)[1] for n in names] == [str(i) for i in range(1, 13)]
    assert all(len(n) == MAX_AGENT_NAME for n in names)
    # one child keeps the name as given
    res = await c.call("agent.fork", agent="p", count=1, name="solo")
    assert res["children"][0]["agent"]["name"] == "solo"
