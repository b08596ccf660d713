"""Bringing an agent's work back: its branch merged (or squashed) into a
branch in the checkout that has it, only when that checkout is clean, and
never left half-merged: on a conflict git's own merge is aborted and its
message returned (MergeConflict)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import trio

from store import WorktreeRecord

from ._git import git, message
from ._make import WorktreeError
from ._objects import absorb


class MergeConflict(WorktreeError):
    """git stopped on conflicts; the checkout was put back as it was."""

    def __init__(self, text: str, conflicts: list[str]) -> None:
        super().__init__(text)
        self.conflicts = conflicts


@dataclass(frozen=True)
class Merged:
    into: str
    checkout: str
    commit: str
    fast_forward: bool
    squashed: bool
    commits: int


async def _checkouts(repo: str) -> dict[str, str]:
    """branch -> the folder that has it checked out, of every worktree."""
    done = await git("worktree", "list", "--porcelain", cwd=repo)
    out: dict[str, str] = {}
    path = ""
    for line in done.out.splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree ") :]
        elif line.startswith("branch refs/heads/"):
            out[line[len("branch refs/heads/") :]] = path
    return out


async def _target(rec: WorktreeRecord, into: str | None) -> tuple[str, str]:
    checkouts = await _checkouts(rec.repo)
    if into is None:
        done = await git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=rec.repo, check=False)
        if done.code != 0:
            raise WorktreeError(
                f"merge: the checkout at {rec.repo} is on no branch (a detached HEAD); "
                "check a branch out there or give --into BRANCH"
            )
        into = done.out.strip()
    if into == rec.branch:
        raise WorktreeError(f"merge: cannot merge {rec.branch} into itself; give --into BRANCH")
    place = checkouts.get(into)
    if place is None:
        raise WorktreeError(
            f"merge: branch {into[:200]!r} is not checked out in any worktree of {rec.repo}; "
            f"check it out there first (git switch {into[:200]})"
        )
    return into, place


async def merge(rec: WorktreeRecord, *, into: str | None, squash: bool, text: str | None) -> Merged:
    into, place = await _target(rec, into)
    tip = await git(
        "rev-parse", "--verify", "--quiet", f"refs/heads/{rec.branch}", cwd=rec.repo, check=False
    )
    if tip.code != 0:
        raise WorktreeError(f"merge: the branch {rec.branch} no longer exists in {rec.repo}")
    dirty = await git("status", "--porcelain", "--untracked-files=no", cwd=place)
    if dirty.out.strip():
        count = len(dirty.out.splitlines())
        raise WorktreeError(
            f"merge: the checkout at {place} has uncommitted changes ({count} files); "
            "commit or stash them first. Nothing was merged."
        )
    count = int((await git("rev-list", "--count", f"{into}..{rec.branch}", cwd=place)).out)
    before = (await git("rev-parse", "HEAD", cwd=place)).out.strip()
    if count == 0:
        return Merged(into, place, before, False, squash, 0)
    # the agent's commits into the repository's own store first: ``into``
    # must not come to depend on the daemon's folder
    common = (await git("rev-parse", "--git-common-dir", cwd=place)).out.strip()
    await trio.to_thread.run_sync(absorb, os.path.join(place, common), rec.path)
    if squash:
        await _squash(rec, place, text or _squash_message(rec, count))
    else:
        args = ["merge", "--no-edit", *(["-m", text] if text else []), rec.branch]
        done = await git(*args, cwd=place, check=False)
        if done.code != 0:
            await _back_out(place, done.out + done.err, abort=("merge", "--abort"))
    after = (await git("rev-parse", "HEAD", cwd=place)).out.strip()
    return Merged(into, place, after, after == tip.out.strip() and not squash, squash, count)


def _squash_message(rec: WorktreeRecord, count: int) -> str:
    s = "" if count == 1 else "s"
    return f"Squashed {count} commit{s} of agent {rec.name} (branch {rec.branch})"


async def _squash(rec: WorktreeRecord, place: str, text: str) -> None:
    done = await git("merge", "--squash", rec.branch, cwd=place, check=False)
    if done.code != 0:
        await _back_out(place, done.out + done.err, abort=("reset", "--merge"))
    commit = await git("commit", "--no-edit", "-m", text, cwd=place, check=False)
    if commit.code != 0:
        await git("reset", "--merge", cwd=place, check=False)
        raise WorktreeError(f"merge: git commit failed, nothing was merged: {message(commit)}")


async def _back_out(place: str, said: str, *, abort: tuple[str, ...]) -> None:
    """Undo a failed merge and raise: MergeConflict with the conflicting
    paths, else WorktreeError with git's words."""
    listed = await git("diff", "--name-only", "--diff-filter=U", cwd=place, check=False)
    conflicts = [p for p in listed.out.splitlines() if p]
    await git(*abort, cwd=place, check=False)
    text = "\n".join(said.strip().splitlines()[-12:])[-2000:]
    if conflicts:
        raise MergeConflict(
            f"merge: conflicts in {len(conflicts)} file(s); the checkout at {place} was left "
            f"as it was. git said:\n{text}",
            conflicts,
        )
    raise WorktreeError(f"merge: git refused, nothing was merged. git said:\n{text}")
