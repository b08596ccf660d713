"""Bad worktree requests through the real daemon (issue 36): each refused
with the field it is about named, and nothing left behind (no agent, no
branch, no folder under <IKIGAI_HOME>/worktrees, `git worktree list` as it
was). Hypothesis over branch names and ``from`` refs, one daemon per test."""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path
from typing import Any

import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import protocol as p
from tests.daemon.conftest import DaemonProcess
from tests.daemon.rpc import Client, RpcFailure, connect
from tests.worktrees.conftest import commit, git, make_repo, repo_state, tree_folders

HYPOTHESIS = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


async def _up(d: DaemonProcess, nursery: trio.Nursery) -> Client:
    await d.start()
    return await connect(nursery, str(d.socket))


async def _world(c: Client, home: Path, repo: Path | None) -> dict[str, Any]:
    """Everything a refused request must leave as it was."""
    return {
        "agents": sorted(a["uuid"] for a in await c.call("agent.list", include_dead=True)),
        "trees": await c.call("worktree.list", all=True),
        "folders": tree_folders(home),
        "repo": repo_state(repo) if repo is not None else None,
    }


async def _refused_naming(
    c: Client, home: Path, repo: Path | None, field: str, method: str, **params: Any
) -> str:
    """``method`` refused with ``field`` in its message, the world unchanged;
    the message."""
    before = await _world(c, home, repo)
    try:
        got = await c.call(method, **params)
    except RpcFailure as e:
        assert e.code in (p.REFUSED, p.INVALID_PARAMS), e.error
        message = e.error["message"]
        assert field in message, (field, message)
    else:
        raise AssertionError(f"{method} {params} was not refused: {got}")
    assert await _world(c, home, repo) == before
    return message


async def test_worktree_outside_a_git_repository(box_daemon, nursery, tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    c = await _up(box_daemon, nursery)
    home = box_daemon.home
    said = await _refused_naming(
        c, home, None, "worktree", "agent.create", name="x", cwd=str(plain), worktree={}
    )
    assert "not inside a git repository" in said
    await c.call("agent.create", name="boss", cwd=str(plain))
    for ask in (True, {"branch": "b"}):
        said = await _refused_naming(
            c, home, None, "worktree", "agent.fork", agent="boss", worktree=ask
        )
        assert "not inside a git repository" in said


async def test_worktree_of_a_repository_with_no_commit(box_daemon, nursery, tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "main")
    c = await _up(box_daemon, nursery)
    said = await _refused_naming(
        c, box_daemon.home, None, "worktree", "agent.create", name="x", cwd=str(empty), worktree={}
    )
    assert "no commit" in said
    assert (
        git(empty, "branch", "--list") == ""
        and git(empty, "worktree", "list", "--porcelain").count("worktree ") == 1
    )


BAD_BRANCHES = [
    "", "a..b", "x.lock", "a/x.lock/b", "-x", "a b", "a:b", "a~1", "a^", "a?", "a*", "a[b", "a\\b",
    "@", "HEAD", "/a", "a/", "a//b", ".a", "a/.b", "a.", "a@{b", "tab\there", "nul\x00", "del\x7f",
    "x" * 251,
]  # fmt: skip


async def test_bad_branch_names_are_refused(box_daemon, nursery, repo: Path):
    git(repo, "branch", "taken")
    c = await _up(box_daemon, nursery)
    await c.call("agent.create", name="boss", cwd=str(repo))
    home = box_daemon.home
    for name in BAD_BRANCHES:
        await _refused_naming(
            c, home, repo, "branch", "agent.create", cwd=str(repo), worktree={"branch": name}
        )
        await _refused_naming(
            c, home, repo, "branch", "agent.fork", agent="boss", worktree={"branch": name}
        )
    for name in ("main", "taken", "taken/sub"):  # existing, or a file where a folder would go
        said = await _refused_naming(
            c, home, repo, "branch", "agent.fork", agent="boss", worktree={"branch": name}
        )
        assert "already exists" in said


async def test_from_that_does_not_resolve(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    await c.call("agent.create", name="boss", cwd=str(repo))
    blob = git(repo, "rev-parse", "HEAD:README")
    for ref in ("nope", "v9", "HEAD~5", "main:README", blob, "-x", "--all", "0" * 40, "main..HEAD"):
        await _refused_naming(
            c, box_daemon.home, repo, "from", "agent.fork", agent="boss", worktree={"from": ref}
        )


async def test_count_with_a_branch_makes_numbered_branches(box_daemon, nursery, repo: Path):
    c = await _up(box_daemon, nursery)
    await c.call("agent.create", name="boss", cwd=str(repo))
    made = await c.call("agent.fork", agent="boss", count=3, worktree={"branch": "try"})
    got = sorted(child["agent"]["worktree"]["branch"] for child in made["children"])
    assert got == ["try-1", "try-2", "try-3"]
    branches = git(repo, "branch", "--list", "--format=%(refname:short)").split()
    assert sorted(branches) == ["main", "try-1", "try-2", "try-3"]
    paths = {child["agent"]["worktree"]["path"] for child in made["children"]}
    assert len(paths) == 3 and all(map(os.path.isdir, paths))


async def test_fork_of_several_refused_when_one_numbered_branch_exists(
    box_daemon, nursery, repo: Path
):
    git(repo, "branch", "x-2")
    c = await _up(box_daemon, nursery)
    await c.call("agent.create", name="boss", cwd=str(repo))
    said = await _refused_naming(
        c,
        box_daemon.home,
        repo,
        "branch",
        "agent.fork",
        agent="boss",
        count=3,
        worktree={"branch": "x"},
    )
    assert "'x-2' already exists" in said
    assert "x-1" not in git(repo, "branch", "--list")
    # and one fork on a branch that exists: refused alike
    await _refused_naming(
        c, box_daemon.home, repo, "branch", "agent.fork", agent="boss", worktree={"branch": "x-2"}
    )


# ------------------------------------------------------------------ hypothesis


def _git_accepts_branch(name: str, cwd: Path) -> bool:
    if "\x00" in name:
        return False
    done = subprocess.run(
        ["git", "check-ref-format", "--branch", name], cwd=cwd, capture_output=True, check=False,
        env={"PATH": "/usr/bin:/bin", "GIT_CEILING_DIRECTORIES": str(cwd.parent), "HOME": str(cwd)},
    )  # fmt: skip
    return done.returncode == 0


def _commit_of(repo: Path, ref: str) -> str | None:
    if "\x00" in ref or ref.startswith("-"):
        return None
    out = git(
        repo,
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        f"{ref}^{{commit}}",
        check=False,
    )
    return out or None


HOSTILE = "/.@{}~^:?*[\\ -\tab\x00\x7fé"
branch_names = st.one_of(
    st.text(alphabet=st.sampled_from(HOSTILE), min_size=1, max_size=10),
    st.sampled_from(BAD_BRANCHES[1:]),
    st.sampled_from(["main", "taken", "taken/x", "ok/name", "ünï", "a-b.c"]),
)
refs = st.one_of(
    st.text(
        alphabet=st.sampled_from("HEADmainv1~^@{}:.-0123456789abcdef/ \x00"),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(
        ["main", "v1", "HEAD", "HEAD~1", "HEAD^", "main~1", "v1^{}", "@", "HEAD@{0}", "main^2"]
    ),
)


async def test_hypothesis_bad_branches_and_refs_leave_nothing(box_daemon, nursery, tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    git(repo, "tag", "v1")
    commit(repo, {"shared.txt": "line 2\n"}, "second")
    git(repo, "branch", "taken")
    outside = tmp_path / "outside"
    outside.mkdir()
    c = await _up(box_daemon, nursery)
    home = box_daemon.home
    await c.call("agent.create", name="boss", cwd=str(repo))
    seen = {"refused": 0, "made": 0}
    names = itertools.count()

    async def made_then_gone(ask: dict[str, str]) -> dict[str, Any]:
        # a good one must be made, and is removed again so the next example starts clean
        got = await c.call("agent.fork", agent="boss", name=f"h{next(names)}", worktree=ask)
        tree = got["agent"]["worktree"]
        await c.call("agent.remove", agent=got["agent"]["uuid"], force=True, prune_worktree=True)
        seen["made"] += 1
        return tree

    async def one_branch(name: str) -> None:
        have = set(git(repo, "branch", "--list", "--format=%(refname:short)").split())
        clash = name in have or any(
            h.startswith(name + "/") or name.startswith(h + "/") for h in have
        )
        if (
            _git_accepts_branch(name, outside)
            and name not in ("@",)
            and len(name) <= 250
            and not clash
        ):
            tree = await made_then_gone({"branch": name})
            assert tree["branch"] == name
        else:
            await _refused_naming(
                c, home, repo, "branch", "agent.fork", agent="boss", worktree={"branch": name}
            )
            seen["refused"] += 1

    async def one_ref(ref: str) -> None:
        target = _commit_of(repo, ref)
        if target is not None:
            tree = await made_then_gone({"from": ref})
            assert tree["base"] == target
        else:
            await _refused_naming(
                c, home, repo, "from", "agent.fork", agent="boss", worktree={"from": ref}
            )
            seen["refused"] += 1

    @HYPOTHESIS
    @given(branch_names)
    @example("taken/x")
    @example("a..b")
    def branches(name: str) -> None:
        trio.from_thread.run(one_branch, name)

    @HYPOTHESIS
    @given(refs)
    @example("v1")
    @example("nope")
    def from_refs(ref: str) -> None:
        trio.from_thread.run(one_ref, ref)

    before = await _world(c, home, repo)
    await trio.to_thread.run_sync(branches)
    await trio.to_thread.run_sync(from_refs)
    after = await _world(c, home, repo)
    assert (after["repo"], after["folders"]) == (before["repo"], before["folders"])
    assert seen["refused"] >= 10 and seen["made"] >= 2, seen
