"""Making worktrees for new agents, before their rows are written.

Everything that can be refused is checked first (the folder is in a git
repository, the branch names are valid and free, ``from`` resolves), then
the worktrees are added one by one; if one fails, or the transaction that
writes the agents does, every worktree and branch made so far is removed
(``undo``): nothing is left half-made.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import trio

from store import WorktreeSpec

from ._git import GitError, git
from ._names import branch_problem, default_branch, slug
from ._objects import attach, detach


class WorktreeError(Exception):
    """A worktree cannot be made, merged or pruned; the message says why and
    what to do."""


@dataclass(frozen=True)
class Wish:
    """A worktree asked for: on ``branch`` (None: ikigai/<agent name>) from
    ``base`` (None: the HEAD of the folder it is made from)."""

    branch: str | None = None
    base: str | None = None


@dataclass(frozen=True)
class Repo:
    top: str  # the checkout's top folder
    common: str  # the repository's git folder (shared by its worktrees)
    head: str  # the commit checked out


@dataclass(frozen=True)
class Planned:
    uuid: str
    name: str
    spec: WorktreeSpec


async def repo_of(folder: str) -> Repo:
    """The git checkout ``folder`` is in. WorktreeError when it is in none."""
    done = await git(
        "rev-parse", "--show-toplevel", "--git-common-dir", "HEAD", cwd=folder, check=False
    )
    lines = done.out.splitlines()
    if done.code != 0 or len(lines) != 3:
        if "not a git repository" in done.err:
            raise WorktreeError(
                f"worktree: {folder} is not inside a git repository; give a cwd inside one "
                "(or run git init there first)"
            )
        if "ambiguous argument 'HEAD'" in done.err or "unknown revision" in done.err:
            raise WorktreeError(
                f"worktree: the repository at {folder} has no commit yet; commit once first"
            )
        raise WorktreeError(f"worktree: git cannot read the repository at {folder}: {done.err}")
    top, common, head = lines
    return Repo(top=top, common=_joined(folder, common), head=head)


def _joined(folder: str, path: str) -> str:
    return os.path.normpath(os.path.join(folder, path))


async def _base(repo: Repo, ref: str | None) -> str:
    if ref is None:
        return repo.head
    if ref.startswith("-") or "\0" in ref:
        raise WorktreeError(f"from: {ref[:200]!r} is not a revision (it starts with '-')")
    done = await git(
        "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
        cwd=repo.top, check=False,
    )  # fmt: skip
    if done.code != 0 or not done.out.strip():
        raise WorktreeError(
            f"from: {ref[:200]!r} does not name a commit in {repo.top} "
            "(give a branch, tag or commit hash that git rev-parse knows)"
        )
    return done.out.strip()


async def branches(top: str) -> set[str]:
    """The local branches of the repository at ``top``."""
    done = await git("for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/", cwd=top)
    return set(done.out.splitlines())


def _conflicting(branches: list[str], have: set[str]) -> str | None:
    """A branch that cannot be made beside the existing ones: a/b and a/b/c
    cannot both exist (one is a file where the other needs a folder)."""
    for b in branches:
        for h in have:
            if h.startswith(b + "/") or b.startswith(h + "/"):
                return h
    return None


async def plan(
    folder: str,
    root: Path,
    children: list[tuple[str, str]],
    *,
    branch: str | None = None,
    base: str | None = None,
) -> tuple[Repo, list[Planned]]:
    """Where each child's worktree goes and on which branch: ``children`` are
    (uuid, agent name). ``branch``: for one child that name, for several
    NAME-1, NAME-2...; else ikigai/<agent name>. Refuses (WorktreeError)
    before anything is made."""
    repo = await repo_of(folder)
    start = await _base(repo, base)
    if branch is not None:
        if problem := branch_problem(branch):
            raise WorktreeError(f"branch: {branch[:200]!r} is not a valid branch name: {problem}")
        given = (
            [branch]
            if len(children) == 1
            else [f"{branch}-{i}" for i in range(1, len(children) + 1)]
        )
        for name in given:
            if problem := branch_problem(name):
                raise WorktreeError(f"branch: {name[:200]!r} is not a valid branch name: {problem}")
    else:
        given = [default_branch(name) for _, name in children]
    have = await branches(repo.top)
    taken = set(given) & have
    if branch is not None:
        clash = sorted(taken) or ([c] if (c := _conflicting(given, have)) else [])
        if clash:
            raise WorktreeError(
                f"branch: {clash[0]!r} already exists in {repo.top}; choose another name "
                "(or leave --branch out: ikigai/<agent name>)"
            )
    planned: list[Planned] = []
    used: set[str] = set()
    for (uuid, name), wanted in zip(children, given, strict=True):
        chosen = wanted
        if branch is None and (
            wanted in taken or wanted in used or _conflicting([wanted], have | used)
        ):
            chosen = f"{wanted}-{uuid[-6:]}"  # a dead agent of that name left its branch
        used.add(chosen)
        place = root / slug(name)
        if place.exists() or any(p.spec.path == str(place) for p in planned):
            place = root / f"{slug(name)}-{uuid[-12:]}"
        spec = WorktreeSpec(path=str(place), branch=chosen, base=start, repo=repo.top)
        planned.append(Planned(uuid=uuid, name=name, spec=spec))
    return repo, planned


async def make(repo: Repo, planned: list[Planned]) -> None:
    """Add each planned worktree. On a failure the ones made are removed and
    WorktreeError says git's reason."""
    made: list[Planned] = []
    try:
        for item in planned:
            Path(item.spec.path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            await git(
                "worktree", "add", "--quiet", "-b", item.spec.branch, "--",
                item.spec.path, item.spec.base,
                cwd=repo.top,
            )  # fmt: skip
            made.append(item)
            await trio.to_thread.run_sync(_prepare, repo.common, item.spec.path)
    except GitError as e:
        await undo(made)
        raise WorktreeError(f"worktree: git worktree add failed: {e}") from None
    except BaseException:
        await undo(made)
        raise


def _prepare(common: str, path: str) -> None:
    """What the sandbox of an agent in this worktree needs (_gitmounts.py):
    its own object folder, listed in the repository's alternates; the
    reflog folder of branches (writable in the sandbox, so it must exist);
    an empty config.worktree in the admin folder, bound read-only there, so
    that the agent cannot give its worktree a config of its own (an
    fsmonitor or hook path the daemon's git would run)."""
    attach(common, path)
    (Path(common) / "logs" / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    admin = admin_dir(path)
    if admin is not None:
        target = admin / "config.worktree"
        if not target.exists():
            target.touch(mode=0o644)


def admin_dir(path: str) -> Path | None:
    """A linked worktree's admin folder (<common>/worktrees/<id>), from its
    .git file; None when ``path`` is not one."""
    try:
        text = (Path(path) / ".git").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return Path(path, text[len("gitdir:") :].strip()).resolve()


async def undo(planned: list[Planned]) -> None:
    """Remove these worktrees and their branches (a fork that failed after
    they were made). Best effort: each step is tried."""
    for item in reversed(planned):
        repo = item.spec.repo
        common = await git("rev-parse", "--git-common-dir", cwd=repo, check=False)
        await git("worktree", "remove", "--force", "--force", item.spec.path, cwd=repo, check=False)
        await git("branch", "-D", "--", item.spec.branch, cwd=repo, check=False)
        if common.code == 0:
            where = _joined(repo, common.out.strip())
            await trio.to_thread.run_sync(detach, where, item.spec.path)
