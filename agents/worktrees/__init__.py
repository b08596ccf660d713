"""Git worktrees for agents (issue 36): a fork, or a new agent started on a
repository, can work in a worktree of its own, on a branch of its own.

- ``plan``/``make``/``undo`` (_make): checked first, then made; undone when
  the agents' transaction fails.
- ``look``/``diff`` (_look): the state an agent's worktree is in.
- ``merge`` (_merge): its branch brought back, clean or not at all.
- ``prune`` (_prune): folder and branch removed, never losing work silently.

The sandbox side (which git folders a worktree agent may write) is in
agents/tools/_gitmounts.py: the tools sit below this package.
"""

from ._git import GitError, git
from ._look import DIFF_LIMIT, Look, diff, disk_use, look, present
from ._make import Planned, Repo, Wish, WorktreeError, admin_dir, make, plan, repo_of, undo
from ._merge import MergeConflict, Merged, merge
from ._names import PREFIX, branch_problem, default_branch, slug
from ._prune import Outcome, check, prune

__all__ = [
    "DIFF_LIMIT",
    "PREFIX",
    "GitError",
    "Look",
    "MergeConflict",
    "Merged",
    "Outcome",
    "Planned",
    "Repo",
    "Wish",
    "WorktreeError",
    "admin_dir",
    "branch_problem",
    "check",
    "default_branch",
    "diff",
    "disk_use",
    "git",
    "look",
    "make",
    "merge",
    "plan",
    "present",
    "prune",
    "repo_of",
    "slug",
    "undo",
]
