"""A fork with a worktree: made, committed in through the sandbox, diffed,
merged, pruned (the shortest path through issue 36)."""

from __future__ import annotations

from pathlib import Path

from tests.daemon.rpc import connect
from tests.fakes.script import Reply, ToolCall
from tests.worktrees.conftest import git


def _read(*parts: str) -> str:
    return Path(*parts).read_text()


def _exists(path: str) -> bool:
    return Path(path).exists()


async def test_fork_commit_diff_merge_prune(box_daemon, fake_provider, nursery, repo: Path):
    await box_daemon.start()
    c = await connect(nursery, str(box_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    made = await c.call("agent.fork", agent="boss", name="w1", worktree=True)
    tree = made["agent"]["worktree"]
    assert tree["branch"] == "ikigai/w1"
    assert made["agent"]["cwd"] == tree["path"]
    assert tree["base"] == git(repo, "rev-parse", "HEAD")
    assert _read(tree["path"], "README") == "hello\n"
    cmd = "echo more >> shared.txt && git add -A && git commit -q -m 'from w1' && git log --oneline | head -1"
    fake_provider.push(Reply(tool_calls=[ToolCall("bash", {"command": cmd}, id="b1")]))
    fake_provider.push(Reply(text="done"))
    out = await c.call("agent.prompt", agent="w1", text="work", wait=True)
    assert out["status"] == "completed", out
    shown = await c.call("agent.show", agent="w1")
    assert shown["worktree"]["branch"] == "ikigai/w1"
    listed = await c.call("worktree.list")
    assert [(w["name"], w["ahead"], w["dirty"]) for w in listed] == [("w1", 1, 0)]
    diff = await c.call("worktree.diff", agent="w1")
    assert "+more" in diff["diff"]
    merged = await c.call("worktree.merge", agent="w1")
    assert merged["fast_forward"] and merged["into"] == "main" and merged["commits"] == 1
    assert (repo / "shared.txt").read_text() == "line 1\nmore\n"
    # main's new commit was made in the sandbox, in the agent's object
    # folder: the merge copied it into the repository's own store
    sha = git(repo, "rev-parse", "main")
    assert _exists(str(repo / ".git" / "objects" / sha[:2] / sha[2:]))
    await c.call("agent.kill", agent="w1", prune_worktree=True)
    assert not _exists(tree["path"])
    assert "ikigai/w1" not in git(repo, "branch", "--list")
    assert await c.call("worktree.list") == []


async def test_a_forks_commits_outlive_its_prune(box_daemon, fake_provider, nursery, repo: Path):
    """Commits made in the sandbox go to the agent's own object folder (the
    repository reads it through its alternates); a prune that keeps the
    unmerged branch first copies them into the repository's own store."""
    await box_daemon.start()
    c = await connect(nursery, str(box_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    tree = (await c.call("agent.fork", agent="boss", name="w2", worktree=True))["agent"]["worktree"]
    own = box_daemon.home / "worktrees" / ".objects" / Path(tree["path"]).name
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    assert _read(str(alternates)).splitlines() == [str(own)]
    cmd = "echo new > new.txt && git add -A && git commit -q -m 'sandboxed work' && git rev-parse HEAD"
    fake_provider.push(Reply(tool_calls=[ToolCall("bash", {"command": cmd}, id="c1")]))
    fake_provider.push(Reply(text="done"))
    await c.call("agent.prompt", agent="w2", text="work", wait=True)
    sha = git(repo, "rev-parse", tree["branch"])
    loose = f"{sha[:2]}/{sha[2:]}"
    assert _exists(str(own / loose))  # written where its sandbox let it
    assert not _exists(str(repo / ".git" / "objects" / loose))
    await c.call("agent.kill", agent="w2")
    done = await c.call("worktree.prune")
    [entry] = done["pruned"]
    assert "kept" in entry["note"]
    assert not _exists(str(own)) and not _exists(str(alternates))
    assert _exists(str(repo / ".git" / "objects" / loose))  # copied before the folder went
    git(repo, "fsck", "--no-dangling")
    assert git(repo, "log", "--format=%s", "-1", tree["branch"]) == "sandboxed work"
    assert git(repo, "show", f"{tree['branch']}:new.txt") == "new"
