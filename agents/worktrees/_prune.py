"""Removing a worktree: its folder (git worktree remove) and its branch.

Without ``force`` a worktree with uncommitted changes is kept, and a branch
with commits that no other branch holds is kept (its commits would be lost
otherwise); the folder of such a worktree is still removed, the kept branch
named in the note.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

import trio

from store import WorktreeRecord

from ._git import exists, git, is_dir, message
from ._look import Look, look
from ._objects import detach


@dataclass(frozen=True)
class Outcome:
    removed: bool
    reason: str | None = None  # why it was kept (removed False)
    note: str | None = None  # what was left (a branch kept)
    look: Look | None = None


def _kept_reason(state: Look) -> str | None:
    if state.dirty:
        return (
            f"{state.dirty} file(s) have uncommitted changes "
            "(commit them, or prune with force to discard them)"
        )
    return None


async def check(rec: WorktreeRecord) -> tuple[Look, str | None]:
    """The worktree's state, and why prune without force would keep it."""
    state = await look(rec)
    return state, _kept_reason(state)


async def prune(rec: WorktreeRecord, *, force: bool, dry_run: bool = False) -> Outcome:
    state, reason = await check(rec)
    if reason is not None and not force:
        return Outcome(False, reason=reason, look=state)
    unmerged = await _unmerged(rec)
    keep_branch = bool(unmerged) and not force
    note = (
        f"branch {rec.branch} kept: {unmerged} commit(s) on no other branch "
        f"(git branch -D {rec.branch} deletes it)"
        if keep_branch
        else None
    )
    if dry_run:
        return Outcome(True, note=note, look=state)
    repo_there = await is_dir(rec.repo)
    if state.exists and repo_there:
        done = await git(
            "worktree", "remove", "--force", "--force", rec.path, cwd=rec.repo, check=False
        )
        if done.code != 0 and await is_dir(rec.path):
            return Outcome(False, reason=f"git worktree remove failed: {message(done)}", look=state)
    if await exists(rec.path):  # the repository is gone, or git left files
        await trio.to_thread.run_sync(shutil.rmtree, rec.path, True)
    if repo_there:
        await git("worktree", "prune", cwd=rec.repo, check=False)
        if not keep_branch:
            await git("branch", "-D", "--", rec.branch, cwd=rec.repo, check=False)
        common = await git("rev-parse", "--git-common-dir", cwd=rec.repo, check=False)
        if common.code == 0:
            # its commits into the repository's own store before its folder goes
            where = os.path.join(rec.repo, common.out.strip())
            await trio.to_thread.run_sync(detach, where, rec.path)
    return Outcome(True, note=note, look=state)


async def _unmerged(rec: WorktreeRecord) -> int:
    """Commits of the branch that no other branch holds (0: deleting the
    branch loses nothing)."""
    if not await is_dir(rec.repo):
        return 0
    done = await git(
        "rev-list", "--count", f"refs/heads/{rec.branch}", "--not",
        f"--exclude={rec.branch}", "--branches", "--",
        cwd=rec.repo, check=False,
    )  # fmt: skip
    text = done.out.strip()
    return int(text) if done.code == 0 and text.isdigit() else 0
