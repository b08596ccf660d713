"""A fork schedule's runs under a policy with fork_isolation: worktree get
a worktree each, as every other fork of that agent does."""

from __future__ import annotations

from pathlib import Path

import trio

from tests.daemon.rpc import connect
from tests.fakes.script import Reply
from tests.worktrees.conftest import git, tree_folders


async def test_each_fork_run_of_an_isolating_agent_gets_a_worktree(
    fenced_daemon, fake_provider, nursery, open_repo: Path
):
    fake_provider.responder = lambda request: Reply(text="done")
    await fenced_daemon.start()
    c = await connect(nursery, str(fenced_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(open_repo), policy="isolating")
    sched = await c.call(
        "schedule.add", agent="boss", prompt="try", every="1h", fork=True, name="nightly"
    )
    first = await c.call("schedule.run", schedule=str(sched["id"]))
    second = await c.call("schedule.run", schedule=str(sched["id"]))
    runs = [first["agent"], second["agent"]]
    trees = {w["agent"]: w for w in await c.call("worktree.list")}
    assert sorted(trees) == sorted(runs)
    for agent in runs:
        shown = await c.call("agent.show", agent=agent)
        assert shown["cwd"] == trees[agent]["path"] == shown["worktree"]["path"]
        assert trees[agent]["branch"].startswith("ikigai/nightly-")
    assert len({w["branch"] for w in trees.values()}) == 2
    branches = git(open_repo, "branch", "--list", "--format=%(refname:short)").split()
    assert sorted(branches) == sorted(["main", *(w["branch"] for w in trees.values())])
    # and the parent, not forked, is still in the repository itself
    assert (await c.call("agent.show", agent="boss"))["worktree"] is None
    with trio.fail_after(60):
        for agent in runs:  # their turns ran in their worktrees
            await c.call("agent.wait", agent=agent, turn=(first if agent == runs[0] else second)["turn"])
    assert len([f for f in tree_folders(fenced_daemon.home) if not f.startswith(".")]) == 2
