"""Forks in worktrees of their own cannot touch each other or their parent
(issue 36, "What must be shown"): real git repositories, real bubblewrap.

Five forks edit the same file at once, commit and switch branches, and each
ends with only its own work; a fork's commands that try to write the parent's
checkout, a sibling's worktree, the branches checked out there or the files
that steer git (by absolute path, ``..``, a planted symlink, git itself)
fail and change nothing; so do the file tools. Then the model's fork tool
with the option, and a policy that requires it.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
import trio

from tests.daemon.rpc import RpcFailure, connect
from tests.fakes.script import ToolCall
from tests.worktrees.conftest import Jobs, files_of, git, tool_result, worktree_list

TIMEOUT = 120  # seconds for a whole scenario: CI machines are loaded


def _real(*paths: Path | str) -> set[str]:
    return {os.path.realpath(p) for p in paths}


def _read(*parts: Path | str) -> str:
    return Path(*parts).read_text()


def _work(name: str, branch: str) -> str:
    """What each fork does: the same file edited its own way, committed, a
    branch of its own made and committed on, then back to its branch."""
    return " && ".join(
        [
            "set -e",
            f"printf 'from {name}\\n' > shared.txt",
            f"echo {name} > own-{name}.txt",
            "git add -A",
            f"git commit -q -m '{name} edits shared'",
            f"git switch -q -c side-{name}",
            f"echo 'side {name}' >> shared.txt",
            f"git commit -q -am '{name} on side'",
            f"git switch -q {shlex.quote(branch)}",
            "echo WORKED",
        ]
    )


async def _five_work_at_once(daemon, fake_provider, nursery, forks: list[dict]) -> None:
    jobs = Jobs()
    for f in forks:
        jobs.add(
            f"work {f['name']}",
            ToolCall(
                "bash", {"command": _work(f["name"], f["worktree"]["branch"])}, id=f"b-{f['name']}"
            ),
        )
    fake_provider.responder = jobs

    async def prompt(f: dict) -> None:
        c = await connect(nursery, str(daemon.socket))  # a connection each: one sender at a time
        out = await c.call("agent.prompt", agent=f["name"], text=f"work {f['name']}", wait=True)
        assert out["status"] == "completed", out

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as n:
            for f in forks:
                n.start_soon(prompt, f)
    for f in forks:
        text, failed = tool_result(fake_provider, f"b-{f['name']}")
        assert not failed and "WORKED" in text, (f["name"], text)


def _each_kept_its_own(repo: Path, base: str, forks: list[dict]) -> None:
    # the parent: its files, its branch, its checkout untouched
    assert git(repo, "rev-parse", "main") == base
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(repo, "status", "--porcelain") == ""
    assert files_of(repo, skip=(".git",)) == {"README": b"hello\n", "shared.txt": b"line 1\n"}
    names = [f["name"] for f in forks]
    listed = worktree_list(repo)
    assert listed == {
        os.path.realpath(repo): "refs/heads/main",
        **{
            os.path.realpath(f["worktree"]["path"]): f"refs/heads/{f['worktree']['branch']}"
            for f in forks
        },
    }
    assert (
        len({f["worktree"]["path"] for f in forks})
        == len({f["worktree"]["branch"] for f in forks})
        == 5
    )
    made = {f["worktree"]["branch"] for f in forks} | {f"side-{n}" for n in names}
    assert set(git(repo, "branch", "--format=%(refname:short)").splitlines()) == {"main", *made}
    for f in forks:
        name, path, branch = f["name"], Path(f["worktree"]["path"]), f["worktree"]["branch"]
        # only its own edits, on its own branch, nothing left uncommitted
        assert files_of(path, skip=(".git",)) == {
            "README": b"hello\n",
            "shared.txt": f"from {name}\n".encode(),
            f"own-{name}.txt": f"{name}\n".encode(),
        }, name
        assert git(path, "symbolic-ref", "HEAD") == f"refs/heads/{branch}"
        assert git(path, "status", "--porcelain") == ""
        # no fork's commit on another's branch (nor on main)
        assert git(repo, "log", "--format=%s", f"{base}..{branch}").splitlines() == [
            f"{name} edits shared"
        ]
        assert git(repo, "log", "--format=%s", f"{base}..side-{name}").splitlines() == [
            f"{name} on side",
            f"{name} edits shared",
        ]
        assert git(repo, "show", f"side-{name}:shared.txt") == f"from {name}\nside {name}"


async def test_five_forks_of_one_call_edit_the_same_file_apart(
    box_daemon, fake_provider, nursery, repo: Path
):
    base = git(repo, "rev-parse", "HEAD")
    await box_daemon.start()
    c = await connect(nursery, str(box_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    made = await c.call("agent.fork", agent="boss", name="w", count=5, worktree=True)
    forks = [child["agent"] for child in made["children"]]
    assert [f["name"] for f in forks] == [f"w-{i}" for i in range(1, 6)]
    assert all(f["cwd"] == f["worktree"]["path"] and f["worktree"]["base"] == base for f in forks)
    await _five_work_at_once(box_daemon, fake_provider, nursery, forks)
    _each_kept_its_own(repo, base, forks)
    listed = await c.call("worktree.list")
    assert sorted((w["name"], w["ahead"], w["dirty"]) for w in listed) == [
        (f"w-{i}", 1, 0) for i in range(1, 6)
    ]


async def test_five_forks_of_five_calls_edit_the_same_file_apart(
    box_daemon, fake_provider, nursery, repo: Path
):
    base = git(repo, "rev-parse", "HEAD")
    await box_daemon.start()
    c = await connect(nursery, str(box_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    forks = [
        (await c.call("agent.fork", agent="boss", name=f"s{i}", worktree=True))["agent"]
        for i in range(1, 6)
    ]
    await _five_work_at_once(box_daemon, fake_provider, nursery, forks)
    _each_kept_its_own(repo, base, forks)


# ---------------------------------------------------------------- escapes


def _attempts(repo: Path, me: dict, sibling: dict) -> dict[str, str]:
    """Commands a fork might run to get out of its worktree, by name."""
    here, there = Path(me["worktree"]["path"]), Path(sibling["worktree"]["path"])
    common = repo / ".git"
    admin = Path(git(here, "rev-parse", "--absolute-git-dir"))
    up = os.path.relpath(repo, here)
    over = os.path.relpath(there, here)
    return {
        "parent by absolute path": f"echo pwned > {repo}/shared.txt",
        "new file in the parent": f"echo pwned > {repo}/new.txt",
        "parent by ..": f"echo pwned > {up}/shared.txt",
        "sibling by absolute path": f"echo pwned > {there}/shared.txt",
        "sibling by ..": f"echo pwned > {over}/shared.txt",
        "symlink to the parent": f"ln -s {repo} to-parent && echo pwned > to-parent/shared.txt",
        "symlink to the sibling": f"ln -s {there} to-sibling && echo pwned > to-sibling/shared.txt",
        "git -C parent commit": f"git -C {repo} commit -q --allow-empty -m pwned",
        "git -C parent checkout": f"git -C {repo} checkout -q --detach",
        "git -C parent checkout -b": f"git -C {repo} checkout -q -b pwned",
        "update-ref main": "git update-ref refs/heads/main HEAD",
        "update-ref -d main": "git update-ref -d refs/heads/main",
        "branch -f main": "git branch -f main HEAD",
        "mv over main": f"cp {common}/refs/heads/{me['worktree']['branch']} ./x && mv ./x {common}/refs/heads/main",
        "update-ref sibling": f"git update-ref refs/heads/{sibling['worktree']['branch']} HEAD",
        "commit onto main in one go": "git symbolic-ref HEAD refs/heads/main && git commit -q --allow-empty -m pwned",
        "rewrite .git": "echo 'gitdir: /var/tmp/evil' > .git",
        "remove .git": "rm -f .git",
        "move .git": "mv .git moved-git",
        "rewrite commondir": f"echo /var/tmp/evil > {admin}/commondir",
        "rewrite gitdir": f"echo /var/tmp/evil/.git > {admin}/gitdir",
        "rewrite config.worktree": f"printf '[core]\\n\\tfsmonitor = /bin/true\\n' > {admin}/config.worktree",
        "write common config": f"printf '[core]\\n\\tfsmonitor = /bin/true\\n' >> {common}/config",
        "git config": "git config core.fsmonitor /bin/true",
        "write a hook": f"echo pwned > {common}/hooks/x",
        "write post-commit hook": f"printf '#!/bin/sh\\ntouch {repo}/hooked\\n' > {common}/hooks/post-commit",
        "parent's HEAD": f"echo 'ref: refs/heads/pwned' > {common}/HEAD",
        "packed-refs": f"echo > {common}/packed-refs",
        "sibling's admin HEAD": f"echo 'ref: refs/heads/main' > {common}/worktrees/{Path(git(there, 'rev-parse', '--absolute-git-dir')).name}/HEAD",
        # the repository's object store: the parent's checkout is made of it
        "delete the repository's objects": f"rm -rf {common}/objects/pack {common}/objects/[0-9a-f][0-9a-f]",
        "plant a loose object": f"mkdir -p {common}/objects/ab && echo x > {common}/objects/ab/cdef",
        "rewrite the alternates": f"echo /var/tmp/evil >> {common}/objects/info/alternates",
        "unset the object folder": "env -u GIT_OBJECT_DIRECTORY git commit -q --allow-empty -m pwned",
        # branches checked out nowhere, and tags, are not the fork's either
        "update-ref a branch out nowhere": "git update-ref refs/heads/feature HEAD",
        "delete a branch out nowhere": "git branch -D feature",
        "make a tag": "git tag pwned",
    }


def _script(attempts: dict[str, str]) -> str:
    # each in a subshell of its own, the fork's HEAD put back after each
    lines = ["git commit -q --allow-empty -m 'mine first'", "own=$(git symbolic-ref HEAD)"]
    for i, cmd in enumerate(attempts.values()):
        lines.append(f"if ( {cmd} ) >/dev/null 2>&1; then echo ESCAPED-{i}; else echo HELD-{i}; fi")
        lines.append('git symbolic-ref HEAD "$own" 2>/dev/null || true')
    return "\n".join(lines)


def _steering(repo: Path, me: dict) -> dict[str, bytes]:
    """What steers git or belongs to others: the shared git folder but for
    the objects, refs, logs and index files (git may write those), and the
    fork's own admin folder but for the files pinned in it."""
    common = repo / ".git"
    admin = Path(git(Path(me["worktree"]["path"]), "rev-parse", "--absolute-git-dir"))
    mine = os.path.relpath(admin, common)
    got = files_of(common, skip=("objects", "refs", "logs", "index", mine))
    for name in ("commondir", "gitdir", "config.worktree"):
        got[f"{mine}/{name}"] = (admin / name).read_bytes()
    got["worktree .git"] = (Path(me["worktree"]["path"]) / ".git").read_bytes()
    return got


def _refs(repo: Path) -> str:
    return git(
        repo,
        "for-each-ref",
        "--format=%(refname) %(objectname)",
        "refs/heads/main",
        "refs/heads/feature",
        "refs/heads/ikigai/",
    )


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed-refs"])
async def test_a_forks_commands_cannot_write_outside_its_worktree(
    fenced_daemon, fake_provider, nursery, open_repo: Path, packed: bool
):
    repo = open_repo
    git(repo, "branch", "feature")
    if packed:  # main and feature only in packed-refs: the sandbox must still pin them
        git(repo, "pack-refs", "--all")
        assert not (repo / ".git/refs/heads/main").exists()
        assert not (repo / ".git/refs/heads/feature").exists()
    base = git(repo, "rev-parse", "HEAD")
    await fenced_daemon.start()
    c = await connect(nursery, str(fenced_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    made = await c.call("agent.fork", agent="boss", name="e", count=2, worktree=True)
    me, sibling = (child["agent"] for child in made["children"])
    attempts = _attempts(repo, me, sibling)
    parent_files, sibling_files = (
        files_of(repo, skip=(".git",)),
        files_of(Path(sibling["worktree"]["path"])),
    )
    steering, refs = _steering(repo, me), _refs(repo)
    objects = files_of(repo / ".git" / "objects")
    jobs = Jobs()
    jobs.add("escape", ToolCall("bash", {"command": _script(attempts)}, id="esc"))
    fake_provider.responder = jobs
    with trio.fail_after(TIMEOUT):
        out = await c.call("agent.prompt", agent=me["name"], text="escape", wait=True)
    assert out["status"] == "completed", out
    text, _ = tool_result(fake_provider, "esc")
    escaped = [name for i, name in enumerate(attempts) if f"ESCAPED-{i}" in text]
    assert escaped == [], f"these escaped the worktree: {escaped}\n{text}"
    assert all(f"HELD-{i}" in text for i in range(len(attempts))), text
    # nothing outside it changed
    assert files_of(repo, skip=(".git",)) == parent_files
    assert files_of(Path(sibling["worktree"]["path"])) == sibling_files
    assert _steering(repo, me) == steering
    mine = f"refs/heads/{me['worktree']['branch']}"
    assert [r for r in _refs(repo).splitlines() if not r.startswith(mine + " ")] == [
        r for r in refs.splitlines() if not r.startswith(mine + " ")
    ]
    assert git(repo, "rev-parse", "main") == base
    assert git(repo, "rev-parse", "feature") == base
    assert git(repo, "tag", "--list") == ""
    # the repository's own objects are as they were: the fork's commits went to its own folder
    assert files_of(repo / ".git" / "objects") == objects
    git(repo, "fsck", "--no-dangling")
    # while its own commit is there, seen from the parent's repository
    assert git(repo, "log", "--format=%s", f"{base}..{me['worktree']['branch']}") == "mine first"
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(repo, "status", "--porcelain") == ""
    assert set(worktree_list(repo)) == _real(
        repo, me["worktree"]["path"], sibling["worktree"]["path"]
    )
    # the daemon's own git still reads the fork's worktree, not one it was pointed at
    diff = await c.call("worktree.diff", agent=me["name"])
    assert "pwned" not in diff["diff"]


async def test_a_head_pointed_at_main_in_one_command_cannot_move_it_in_the_next(
    fenced_daemon, fake_provider, nursery, open_repo: Path
):
    """The fork's HEAD is its own to write: pointed at main (or a sibling's
    branch) by one command, the next command's sandbox must still keep
    that branch read-only, and the commit there fail."""
    repo = open_repo
    base = git(repo, "rev-parse", "HEAD")
    await fenced_daemon.start()
    c = await connect(nursery, str(fenced_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    made = await c.call("agent.fork", agent="boss", name="h", count=2, worktree=True)
    me, sibling = (child["agent"] for child in made["children"])
    theirs = git(repo, "rev-parse", sibling["worktree"]["branch"])
    jobs = Jobs()
    jobs.add(
        "steer",
        ToolCall(
            "bash", {"command": "git symbolic-ref HEAD refs/heads/main; echo pointed"}, id="s1"
        ),
        ToolCall(
            "bash", {"command": "git commit -q --allow-empty -m pwned-main; echo rc=$?"}, id="s2"
        ),
        ToolCall(
            "bash",
            {
                "command": f"git symbolic-ref HEAD refs/heads/{sibling['worktree']['branch']}; echo pointed"
            },
            id="s3",
        ),
        ToolCall(
            "bash", {"command": "git commit -q --allow-empty -m pwned-sibling; echo rc=$?"}, id="s4"
        ),
    )
    fake_provider.responder = jobs
    with trio.fail_after(TIMEOUT):
        out = await c.call("agent.prompt", agent=me["name"], text="steer", wait=True)
    assert out["status"] == "completed", out
    moved = {
        "main": git(repo, "log", "--format=%s", f"{base}..main"),
        "sibling's branch": git(
            repo, "log", "--format=%s", f"{theirs}..{sibling['worktree']['branch']}"
        ),
    }
    assert moved == {"main": "", "sibling's branch": ""}, moved
    assert "rc=0" not in tool_result(fake_provider, "s2")[0]
    assert "rc=0" not in tool_result(fake_provider, "s4")[0]
    assert "pwned" not in git(repo, "log", "--all", "--format=%s")


def _file_targets(repo: Path, here: Path, there: Path) -> dict[str, str]:
    return {
        "abs-parent": str(repo / "shared.txt"),
        "dotdot-parent": f"{os.path.relpath(repo, here)}/shared.txt",
        "abs-sibling": str(there / "shared.txt"),
        "dotdot-sibling": f"{os.path.relpath(there, here)}/shared.txt",
        "link-parent": "to-parent/shared.txt",
        "link-sibling": "to-sibling/shared.txt",
        "common-config": str(repo / ".git" / "config"),
    }


async def test_the_file_tools_refuse_paths_outside_the_worktree(
    fenced_daemon, fake_provider, nursery, open_repo: Path
):
    repo = open_repo
    await fenced_daemon.start()
    c = await connect(nursery, str(fenced_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    made = await c.call("agent.fork", agent="boss", name="f", count=2, worktree=True)
    me, sibling = (child["agent"] for child in made["children"])
    here, there = Path(me["worktree"]["path"]), Path(sibling["worktree"]["path"])
    parent_files, sibling_files = files_of(repo, skip=(".git",)), files_of(there)
    (here / "to-parent").symlink_to(repo)  # as a command of the fork could plant them
    (here / "to-sibling").symlink_to(there)
    targets = _file_targets(repo, here, there)
    calls = []
    for key, path in targets.items():
        calls.append(ToolCall("file_write", {"path": path, "content": "pwned\n"}, id=f"w-{key}"))
        calls.append(
            ToolCall(
                "file_edit",
                {"path": path, "old_string": "line 1", "new_string": "pwned"},
                id=f"e-{key}",
            )
        )
    jobs = Jobs()
    jobs.add("write out", *calls)
    fake_provider.responder = jobs
    with trio.fail_after(TIMEOUT):
        out = await c.call("agent.prompt", agent=me["name"], text="write out", wait=True)
    assert out["status"] == "completed", out
    for call in calls:
        text, failed = tool_result(fake_provider, call.id)
        assert failed and "denied" in text, (call.id, text)
    assert files_of(repo, skip=(".git",)) == parent_files
    assert files_of(there) == sibling_files
    assert "pwned" not in (repo / ".git" / "config").read_text()
    # inside the worktree, the same tools work
    jobs.add(
        "write in",
        ToolCall(
            "file_edit",
            {"path": "shared.txt", "old_string": "line 1", "new_string": "mine"},
            id="in",
        ),
    )
    with trio.fail_after(TIMEOUT):
        await c.call("agent.prompt", agent=me["name"], text="write in", wait=True)
    assert tool_result(fake_provider, "in")[1] is False
    assert (here / "shared.txt").read_text() == "mine\n"


async def test_the_file_tools_cannot_rewrite_the_worktrees_git_file(
    fenced_daemon, fake_provider, nursery, open_repo: Path
):
    """The .git file lies inside the worktree, but rewritten it would point
    the daemon's own git (status, diff, merge) at a repository the agent
    made: the sandbox pins it for bash, and the file tools, which run in the
    daemon outside the sandbox, must refuse it too."""
    repo = open_repo
    await fenced_daemon.start()
    c = await connect(nursery, str(fenced_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    me = (await c.call("agent.fork", agent="boss", name="g", worktree=True))["agent"]
    dot_git = Path(me["worktree"]["path"]) / ".git"
    before = dot_git.read_bytes()
    jobs = Jobs()
    jobs.add(
        "rewrite",
        ToolCall(
            "file_edit",
            {"path": ".git", "old_string": "gitdir: ", "new_string": "gitdir: /var/tmp/evil"},
            id="e",
        ),
        ToolCall("file_write", {"path": ".git", "content": "gitdir: /var/tmp/evil\n"}, id="w"),
    )
    fake_provider.responder = jobs
    with trio.fail_after(TIMEOUT):
        out = await c.call("agent.prompt", agent=me["name"], text="rewrite", wait=True)
    assert out["status"] == "completed", out
    assert dot_git.read_bytes() == before
    assert tool_result(fake_provider, "e")[1] and tool_result(fake_provider, "w")[1]


# ---------------------------------------------------------------- the fork tool, the policy


def _commit_as(name: str) -> str:
    return (
        f"echo {name} > by-{name}.txt && git add -A && git commit -q -m 'by {name}' && echo WORKED"
    )


async def test_the_fork_tool_gives_each_child_a_worktree(
    fenced_daemon, fake_provider, nursery, open_repo: Path
):
    repo = open_repo
    base = git(repo, "rev-parse", "HEAD")
    await fenced_daemon.start()
    c = await connect(nursery, str(fenced_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo))
    jobs = Jobs()
    fan_out = {"prompts": ["job t a", "job t b"], "name": "t", "worktree": True}
    jobs.add(
        "fan out",
        ToolCall("fork", fan_out, id="fork"),
        ToolCall("wait", {"agents": ["t-1", "t-2"]}, id="wait"),
    )
    jobs.add("job t a", ToolCall("bash", {"command": _commit_as("t-1")}, id="t1"))
    jobs.add("job t b", ToolCall("bash", {"command": _commit_as("t-2")}, id="t2"))
    fake_provider.responder = jobs
    with trio.fail_after(TIMEOUT):
        out = await c.call("agent.prompt", agent="boss", text="fan out", wait=True)
    assert out["status"] == "completed", out
    text, failed = tool_result(fake_provider, "fork")
    assert not failed and "worktree" in text, text
    for name, call in (("t-1", "t1"), ("t-2", "t2")):
        shown = await c.call("agent.show", agent=name)
        tree = shown["worktree"]
        assert tree is not None and tree["branch"] == f"ikigai/{name}" and tree["base"] == base
        assert shown["cwd"] == tree["path"]
        assert "WORKED" in tool_result(fake_provider, call)[0]
        assert _read(tree["path"], f"by-{name}.txt") == f"{name}\n"
        assert git(repo, "log", "--format=%s", f"{base}..ikigai/{name}") == f"by {name}"
    assert git(repo, "rev-parse", "main") == base
    assert git(repo, "status", "--porcelain") == ""
    assert files_of(repo, skip=(".git",)) == {"README": b"hello\n", "shared.txt": b"line 1\n"}
    assert len(worktree_list(repo)) == 3


async def test_a_policy_requiring_worktrees_isolates_every_fork_in_a_repo(
    fenced_daemon, fake_provider, nursery, open_repo: Path, tmp_path: Path
):
    repo = open_repo
    base = git(repo, "rev-parse", "HEAD")
    await fenced_daemon.start()
    c = await connect(nursery, str(fenced_daemon.socket))
    await c.call("agent.create", name="boss", cwd=str(repo), policy="isolating")
    # a plain fork gets a worktree
    plain = (await c.call("agent.fork", agent="boss", name="c1"))["agent"]
    assert plain["worktree"] is not None and plain["worktree"]["branch"] == "ikigai/c1"
    assert plain["cwd"] == plain["worktree"]["path"] != str(repo)
    # asking for none is refused, and nothing is made
    trees, branches = worktree_list(repo), git(repo, "branch", "--list")
    with pytest.raises(RpcFailure) as refused:
        await c.call("agent.fork", agent="boss", name="c2", worktree=False)
    assert "fork_isolation" in str(refused.value)
    assert (worktree_list(repo), git(repo, "branch", "--list")) == (trees, branches)
    assert all(a["name"] != "c2" for a in await c.call("agent.list"))
    # the model's fork tool: a worktree unasked, none refused
    jobs = Jobs()
    jobs.add(
        "delegate",
        ToolCall("fork", {"prompt": "job m", "name": "m"}, id="fork-m"),
        ToolCall("fork", {"prompt": "job n", "name": "n", "worktree": False}, id="fork-n"),
        ToolCall("wait", {"agents": ["m"]}, id="wait-m"),
    )
    jobs.add("job m", ToolCall("bash", {"command": _commit_as("m")}, id="m1"))
    fake_provider.responder = jobs
    with trio.fail_after(TIMEOUT):
        out = await c.call("agent.prompt", agent="boss", text="delegate", wait=True)
    assert out["status"] == "completed", out
    assert not tool_result(fake_provider, "fork-m")[1]
    text, failed = tool_result(fake_provider, "fork-n")
    assert failed and "fork_isolation" in text, text
    m = await c.call("agent.show", agent="m")
    assert m["worktree"] is not None and m["cwd"] == m["worktree"]["path"]
    assert _read(m["cwd"], "by-m.txt") == "m\n"
    assert git(repo, "rev-parse", "main") == base and git(repo, "status", "--porcelain") == ""
    assert set(worktree_list(repo)) == _real(repo, plain["cwd"], m["cwd"])
    # an agent outside any repository forks as before, without a worktree
    folder = tmp_path / "not-a-repo"
    folder.mkdir()
    await c.call("agent.create", name="loner", cwd=str(folder), policy="isolating")
    child = (await c.call("agent.fork", agent="loner", name="l1"))["agent"]
    assert child["worktree"] is None and child["cwd"] == str(folder)
    jobs.add("job l", ToolCall("bash", {"command": "echo l > by-l.txt && echo WORKED"}, id="l1"))
    with trio.fail_after(TIMEOUT):
        out = await c.call("agent.prompt", agent="l1", text="job l", wait=True)
    assert out["status"] == "completed", out
    assert "WORKED" in tool_result(fake_provider, "l1")[0]
    assert (folder / "by-l.txt").read_text() == "l\n"
