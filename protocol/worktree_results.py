"""Results of the ``worktree.*`` methods and the ``worktree`` field of an
agent (docs/protocol.md, "Worktrees"), re-exported by protocol.results.
TypedDicts, as there."""

# no ``from __future__ import annotations``: TypedDict must see its types
from typing import NotRequired, TypedDict


class WorktreeBrief(TypedDict):
    """What never changes about an agent's worktree (agent.list, agent.show)."""

    path: str  # the worktree folder: the agent's cwd
    branch: str
    base: str  # the commit it started from (full hash)
    repo: str  # the checkout it was made from (the parent's): where merges land
    # agent.show and worktree.list look at the folder: None when it is gone
    dirty: NotRequired[int | None]  # files with uncommitted changes (untracked too)
    ahead: NotRequired[int | None]  # commits on branch not in base


class Worktree(TypedDict):
    agent: str
    name: str
    alive: bool
    path: str
    branch: str
    base: str
    repo: str
    created_at: str
    pruned_at: str | None
    exists: bool  # the folder is still there
    head: str | None  # the commit the worktree is on now
    dirty: int | None  # files with uncommitted changes (untracked too)
    ahead: int | None  # commits on branch not in base
    bytes: int | None  # disk use, with worktree.list {disk}; else None
    note: NotRequired[str]  # worktree.prune: what was left (a branch with unmerged commits)


class WorktreeDiff(TypedDict):
    agent: str
    branch: str
    base: str
    diff: str  # from base to the files as they are now, committed or not, new files too
    truncated: bool  # the diff was cut at the size a line may carry


class WorktreeMerged(TypedDict):
    agent: str
    branch: str
    into: str  # the branch merged into
    checkout: str  # where: the folder that has it checked out
    commit: str  # the new HEAD of ``into``
    fast_forward: bool
    squashed: bool
    commits: int  # commits of the branch brought in


class WorktreePruned(TypedDict):
    pruned: list[Worktree]  # removed (with dry_run: would be)
    kept: list["WorktreeKept"]


class WorktreeKept(TypedDict):
    agent: str
    path: str
    reason: str  # e.g. "3 files have uncommitted changes (force discards them)"
