"""An agent's worktree from birth to prune, through the real daemon (issue
36): made by agent.create and agent.fork (from HEAD, a tag, an older
commit), diffed, merged every way (and refused cleanly), pruned with and
without force, and found again after a restart and after kill -9."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
import trio

import protocol as p
from tests.daemon.conftest import DaemonProcess
from tests.daemon.rpc import Client, RpcFailure, connect
from tests.worktrees.conftest import commit, git, repo_state, tree_folders


async def _up(d: DaemonProcess, nursery: trio.Nursery) -> Client:
    await d.start()
    return await connect(nursery, str(d.socket))


async def _refused(c: Client, method: str, code: int = p.REFUSED, **params: Any) -> RpcFailure:
    try:
        got = await c.call(method, **params)
    except RpcFailure as e:
        assert e.code == code, e.error
        return e
    raise AssertionError(f"{method} {params} was not refused: {got}")


async def _worker(c: Client, repo: Path, name: str, **ask: Any) -> dict[str, Any]:
    """A new agent on ``repo`` in a worktree of its own; its ``worktree``.
    ``worktree: {}`` asks for the defaults (``worktree: true`` has a test of its own)."""
    made = await c.call("agent.create", name=name, cwd=str(repo), worktree=ask)
    tree = made["agent"]["worktree"]
    assert made["agent"]["cwd"] == tree["path"]
    return tree


# the checks below read the disk: plain functions (trio's lint wants no blocking
# Path calls in async tests; these are tiny and the test owns the files)
def _there(path: Path | str) -> bool:
    return os.path.exists(path)


def _read(*parts: str) -> str:
    with open(os.path.join(*parts)) as f:
        return f.read()


def _same(a: Path | str, b: Path | str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _roots(home: Path) -> list[str]:
    """The worktree folders (their object folders beside them)."""
    return [x for x in tree_folders(home) if not x.startswith(".objects/")]


# ------------------------------------------------------------------ making


async def test_create_with_worktree_true(engine_box_daemon, nursery, repo: Path):
    c = await _up(engine_box_daemon, nursery)
    made = await c.call("agent.create", name="solo", cwd=str(repo), worktree=True)
    tree = made["agent"]["worktree"]
    assert made["agent"]["cwd"] == tree["path"]
    assert tree["branch"] == "ikigai/solo"
    assert tree["base"] == git(repo, "rev-parse", "HEAD")
    assert _same(tree["repo"], repo)
    path = Path(tree["path"])
    assert path.parent == engine_box_daemon.home / "worktrees"
    assert (path / "shared.txt").read_text() == "line 1\n"
    assert git(path, "symbolic-ref", "--short", "HEAD") == "ikigai/solo"
    assert str(path) in git(repo, "worktree", "list")
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"  # the parent's stays


async def test_create_from_a_tag_and_from_an_older_commit(box_daemon, nursery, repo: Path):
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "v1")
    second = commit(repo, {"shared.txt": "line 2\n"}, "second")
    commit(repo, {"shared.txt": "line 3\n"}, "third")
    c = await _up(box_daemon, nursery)
    tagged = await _worker(c, repo, "t", branch="from-tag", **{"from": "v1"})
    assert (tagged["branch"], tagged["base"]) == ("from-tag", first)
    assert git(Path(tagged["path"]), "rev-parse", "HEAD") == first
    assert _read(tagged["path"], "shared.txt") == "line 1\n"
    older = await _worker(c, repo, "o", branch="from-old", **{"from": second[:10]})
    assert older["base"] == second
    assert _read(older["path"], "shared.txt") == "line 2\n"
    assert git(repo, "rev-parse", "from-old") == second
    # fork of a worker on a worktree takes the parent's cwd: a worktree of the same repository
    forked = await c.call("agent.fork", agent="o", name="o2", worktree={"branch": "o2"})
    assert forked["agent"]["worktree"]["base"] == second


# ------------------------------------------------------------------ diff


async def test_diff_shows_committed_uncommitted_and_new_files(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    tree = await _worker(c, repo, "w")
    path = Path(tree["path"])
    commit(path, {"shared.txt": "line 1\ncommitted\n"}, "work")
    (path / "README").write_text("hello\nuncommitted\n")
    (path / "fresh.txt").write_text("brand new\n")
    shown = await c.call("worktree.diff", agent="w")
    assert (shown["base"], shown["branch"], shown["truncated"]) == (tree["base"], "ikigai/w", False)
    text = shown["diff"]
    for part in ("+committed", "+uncommitted", "+brand new", "b/fresh.txt", "b/README"):
        assert part in text, text
    stat = (await c.call("worktree.diff", agent="w", stat=True))["diff"]
    assert "diff --git" not in stat
    assert all(n in stat for n in ("shared.txt", "README", "fresh.txt")), stat
    assert "3 files changed" in stat
    # the diff used an index of its own: the agent's worktree is as it left it
    assert git(path, "status", "--porcelain").split("\n") == [
        "M README",
        "?? fresh.txt",
    ]  # stripped
    listed = {w["name"]: w for w in await c.call("worktree.list")}
    assert (listed["w"]["dirty"], listed["w"]["ahead"], listed["w"]["exists"]) == (2, 1, True)
    assert listed["w"]["head"] == git(path, "rev-parse", "HEAD")


# ------------------------------------------------------------------ merge


async def test_merge_fast_forward(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    tip = commit(path, {"new.txt": "from w\n"}, "w's work")
    done = await c.call("worktree.merge", agent="w")
    assert (done["fast_forward"], done["squashed"], done["commits"]) == (True, False, 1)
    assert done["commit"] == tip == git(repo, "rev-parse", "HEAD")
    assert _same(done["checkout"], repo)
    assert (repo / "new.txt").read_text() == "from w\n"
    assert git(repo, "status", "--porcelain") == ""


async def test_merge_makes_a_merge_commit_when_main_moved(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    tip = commit(path, {"new.txt": "from w\n"}, "w's work")
    moved = commit(repo, {"other.txt": "meanwhile\n"}, "main moved")
    done = await c.call("worktree.merge", agent="w")
    assert (done["fast_forward"], done["commits"]) == (False, 1)
    head = git(repo, "rev-parse", "HEAD")
    assert done["commit"] == head
    assert git(repo, "rev-list", "--parents", "-n", "1", "HEAD").split()[1:] == [moved, tip]
    assert (repo / "new.txt").exists() and (repo / "other.txt").exists()
    assert git(repo, "status", "--porcelain") == ""


async def test_merge_squash_makes_one_commit(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    before = git(repo, "rev-parse", "HEAD")
    commit(path, {"a.txt": "a\n"}, "one")
    commit(path, {"b.txt": "b\n"}, "two")
    done = await c.call("worktree.merge", agent="w", squash=True, message="w: a and b")
    assert (done["squashed"], done["fast_forward"], done["commits"]) == (True, False, 2)
    assert git(repo, "rev-list", "--count", f"{before}..HEAD") == "1"
    assert git(repo, "rev-list", "--parents", "-n", "1", "HEAD").split()[1:] == [before]
    assert git(repo, "log", "-1", "--format=%s") == "w: a and b"
    assert (repo / "a.txt").exists() and (repo / "b.txt").exists()
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("squash", [False, True])
async def test_merge_conflict_leaves_the_checkout_as_it_was(
    box_daemon, nursery, repo: Path, squash: bool
):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    commit(path, {"shared.txt": "w's line\n", "new.txt": "x\n"}, "w's side")
    commit(repo, {"shared.txt": "main's line\n"}, "main's side")
    before = repo_state(repo)
    e = await _refused(c, "worktree.merge", p.MERGE_CONFLICT, agent="w", squash=squash)
    assert e.code == -32008
    assert e.error["data"]["conflicts"] == ["shared.txt"]
    assert "CONFLICT" in e.error["message"]
    assert repo_state(repo) == before
    assert before["status"] == "" and before["merging"] == ""
    assert (repo / "shared.txt").read_text() == "main's line\n"
    assert not (repo / "new.txt").exists()


async def test_merge_refused_when_the_parent_checkout_is_dirty(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    commit(path, {"new.txt": "x\n"}, "w's work")
    (repo / "README").write_text("edited by the user\n")
    before = repo_state(repo)
    e = await _refused(c, "worktree.merge", agent="w")
    assert (
        "uncommitted changes" in e.error["message"] and "Nothing was merged" in e.error["message"]
    )
    assert repo_state(repo) == before
    assert (repo / "README").read_text() == "edited by the user\n"
    assert not (repo / "new.txt").exists()


async def test_merge_into_a_branch_not_checked_out_is_refused(box_daemon, nursery, repo: Path):
    git(repo, "branch", "release")
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    commit(path, {"new.txt": "x\n"}, "w's work")
    before = repo_state(repo)
    e = await _refused(c, "worktree.merge", agent="w", into="release")
    assert "'release' is not checked out" in e.error["message"]
    assert repo_state(repo) == before
    await _refused(c, "worktree.merge", agent="w", into="no-such-branch")
    await _refused(c, "worktree.merge", agent="w", into="ikigai/w")  # into itself
    assert repo_state(repo) == before


# ------------------------------------------------------------------ kill / remove


async def test_kill_with_prune_refuses_uncommitted_changes_unless_force(
    box_daemon, nursery, repo: Path
):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    (path / "README").write_text("unsaved work\n")
    before = repo_state(repo)
    e = await _refused(c, "agent.kill", agent="w", prune_worktree=True)
    assert "uncommitted changes" in e.error["message"] and "nothing was done" in e.error["message"]
    assert (await c.call("agent.show", agent="w"))["status"] == "running"  # still alive
    assert (path / "README").read_text() == "unsaved work\n"
    assert repo_state(repo) == before
    assert [w["name"] for w in await c.call("worktree.list")] == ["w"]
    await c.call("agent.kill", agent="w", prune_worktree=True, force=True)
    assert (await c.call("agent.show", agent="w"))["status"] != "running"
    _gone(repo, path, "ikigai/w")
    assert await c.call("worktree.list") == []


@pytest.mark.parametrize("alive", [False, True])
async def test_remove_with_prune_refuses_uncommitted_changes_unless_force(
    box_daemon, nursery, repo: Path, alive: bool
):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    (path / "fresh.txt").write_text("new, never committed\n")
    if not alive:
        await c.call("agent.kill", agent="w")
    before = repo_state(repo)
    e = await _refused(c, "agent.remove", agent="w", prune_worktree=True)
    # a live agent is refused as running (remove needs force to kill it); a dead one for its changes
    assert ("kill it first" if alive else "uncommitted changes") in e.error["message"]
    shown = await c.call("agent.show", agent="w")  # not removed
    assert (shown["status"] == "running") is alive
    assert (path / "fresh.txt").exists() and repo_state(repo) == before
    await c.call("agent.remove", agent="w", prune_worktree=True, force=True)
    await _refused(c, "agent.show", p.AGENT_NOT_FOUND, agent="w")
    _gone(repo, path, "ikigai/w")
    assert await c.call("worktree.list") == []


def _gone(repo: Path, path: Path, branch: str) -> None:
    assert not path.exists()
    assert branch not in git(repo, "branch", "--list")
    assert str(path) not in git(repo, "worktree", "list")


# ------------------------------------------------------------------ prune


async def test_prune_dead_agents_keeps_dirty_and_unmerged_unless_force(
    box_daemon, nursery, repo: Path
):
    c = await _up(box_daemon, nursery)
    clean = Path((await _worker(c, repo, "clean"))["path"])
    dirty = Path((await _worker(c, repo, "dirty"))["path"])
    ahead = Path((await _worker(c, repo, "ahead"))["path"])
    alive = Path((await _worker(c, repo, "alive"))["path"])
    (dirty / "README").write_text("unsaved\n")
    commit(ahead, {"work.txt": "kept\n"}, "unmerged work")
    for name in ("clean", "dirty", "ahead"):
        await c.call("agent.kill", agent=name)
    before = repo_state(repo)
    dry = await c.call("worktree.prune", dry_run=True)
    assert sorted(w["name"] for w in dry["pruned"]) == ["ahead", "clean"]
    assert [Path(k["path"]) for k in dry["kept"]] == [dirty]
    assert repo_state(repo) == before
    assert all(x.exists() for x in (clean, dirty, ahead, alive))
    assert len(await c.call("worktree.list")) == 4

    done = await c.call("worktree.prune", agents=None)
    pruned = {w["name"]: w for w in done["pruned"]}
    assert sorted(pruned) == ["ahead", "clean"]
    [kept] = done["kept"]
    assert Path(kept["path"]) == dirty and "uncommitted changes" in kept["reason"]
    assert "note" not in pruned["clean"]
    assert "ikigai/ahead kept" in pruned["ahead"]["note"] and "1 commit" in pruned["ahead"]["note"]
    assert not _there(clean) and not _there(ahead)
    assert _there(dirty) and (dirty / "README").read_text() == "unsaved\n"
    assert _there(alive)  # a live agent's worktree is never in a prune of dead ones
    branches = git(repo, "branch", "--list", "--format=%(refname:short)").split()
    assert "ikigai/clean" not in branches
    assert "ikigai/ahead" in branches  # its commit lives on
    assert sorted(w["name"] for w in await c.call("worktree.list")) == ["alive", "dirty"]

    forced = await c.call("worktree.prune", force=True)
    assert [w["name"] for w in forced["pruned"]] == ["dirty"] and forced["kept"] == []
    assert not _there(dirty)
    assert [w["name"] for w in await c.call("worktree.list")] == ["alive"]
    assert sorted(w["name"] for w in await c.call("worktree.list", all=True)) == [
        "ahead", "alive", "clean", "dirty",
    ]  # fmt: skip
    # a kept branch with unmerged commits goes only with force, named explicitly
    ahead_worker = Path((await _worker(c, repo, "ahead2"))["path"])
    commit(ahead_worker, {"more.txt": "x\n"}, "more")
    await c.call("agent.kill", agent="ahead2")
    forced = await c.call("worktree.prune", agents=["ahead2"], force=True)
    assert "note" not in forced["pruned"][0]
    assert "ikigai/ahead2" not in git(repo, "branch", "--list")


async def test_prune_of_a_live_agent_by_name_is_kept(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    done = await c.call("worktree.prune", agents=["w"], force=True)
    assert done["pruned"] == [] and "is alive" in done["kept"][0]["reason"]
    assert _there(path)


async def test_a_worktree_whose_folder_was_deleted(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    path = Path((await _worker(c, repo, "w"))["path"])
    await c.call("agent.kill", agent="w")
    shutil.rmtree(path)
    [listed] = await c.call("worktree.list")
    assert (listed["exists"], listed["dirty"], listed["head"]) == (False, None, None)
    assert listed["ahead"] == 0  # the branch is still in the repository
    await _refused(c, "worktree.diff", agent="w")
    done = await c.call("worktree.prune")
    assert [w["name"] for w in done["pruned"]] == ["w"] and done["kept"] == []
    assert await c.call("worktree.list") == []
    assert "ikigai/w" not in git(repo, "branch", "--list")
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


# ------------------------------------------------------------------ restart


async def _rediscovered(c: Client, repo: Path, trees: dict[str, dict[str, Any]]) -> None:
    listed = {w["name"]: w for w in await c.call("worktree.list")}
    assert sorted(listed) == sorted(trees)
    for name, tree in trees.items():
        got = listed[name]
        assert (got["path"], got["branch"], got["base"]) == (
            tree["path"],
            tree["branch"],
            tree["base"],
        )
        assert got["exists"] is True
        shown = (await c.call("agent.show", agent=name))["worktree"]
        assert (shown["path"], shown["branch"], shown["base"]) == (
            tree["path"],
            tree["branch"],
            tree["base"],
        )
    rows = {a["name"]: a for a in await c.call("agent.list", include_dead=True)}
    for name, tree in trees.items():
        assert rows[name]["worktree"]["branch"] == tree["branch"]


@pytest.mark.parametrize("how", ["stop", "kill -9"])
async def test_restart_finds_the_worktrees_again(engine_box_daemon, nursery, repo: Path, how: str):
    d = engine_box_daemon
    c = await _up(d, nursery)
    trees = {"live": await _worker(c, repo, "live"), "dead": await _worker(c, repo, "dead")}
    commit(Path(trees["dead"]["path"]), {"x.txt": "x\n"}, "dead's work")
    (Path(trees["live"]["path"]) / "README").write_text("unsaved\n")
    await c.call("agent.kill", agent="dead")
    await _rediscovered(c, repo, trees)
    if how == "stop":
        d.stop()
    else:
        d.signal(signal.SIGKILL)
        assert await trio.to_thread.run_sync(d.wait) == -signal.SIGKILL
    c = await _up(d, nursery)
    await _rediscovered(c, repo, trees)
    listed = {w["name"]: w for w in await c.call("worktree.list")}
    assert (listed["dead"]["ahead"], listed["live"]["dirty"]) == (1, 1)
    # and the rules still hold on what was found: the dirty one is kept, the other pruned
    await c.call("agent.kill", agent="live")
    done = await c.call("worktree.prune")
    assert [w["name"] for w in done["pruned"]] == ["dead"]
    assert [Path(k["path"]) for k in done["kept"]] == [Path(trees["live"]["path"])]
    assert _roots(d.home) == [Path(trees["live"]["path"]).name]
