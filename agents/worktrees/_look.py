"""What a worktree holds now: its commit, uncommitted files, commits ahead
of its base, its diff and its size. Read-only git commands, run without
fsmonitor or hooks (the files are an agent's)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import trio

from store import WorktreeRecord

from ._git import GitError, git, is_dir

DIFF_LIMIT = 8 * 1024 * 1024  # bytes of diff an answer carries; the rest is cut


@dataclass(frozen=True)
class Look:
    exists: bool
    head: str | None
    dirty: int | None  # files changed, new files too
    ahead: int | None


def present(rec: WorktreeRecord) -> bool:
    return os.path.isdir(rec.path) and os.path.lexists(os.path.join(rec.path, ".git"))


async def look(rec: WorktreeRecord) -> Look:
    """The worktree's state; the parts git cannot read are None."""
    if not await trio.to_thread.run_sync(present, rec):
        return Look(False, None, None, await _ahead(rec))
    done = await git(
        "status", "--porcelain=v2", "--branch", "--untracked-files=all",
        cwd=rec.path, check=False, quiet=True,
    )  # fmt: skip
    head: str | None = None
    dirty: int | None = None
    if done.code == 0:
        dirty = 0
        for line in done.out.splitlines():
            if line.startswith("# branch.oid "):
                oid = line.split()[-1]
                head = None if oid == "(initial)" else oid
            elif not line.startswith("#"):
                dirty += 1
    return Look(True, head, dirty, await _ahead(rec))


async def _ahead(rec: WorktreeRecord) -> int | None:
    where = rec.repo if await is_dir(rec.repo) else rec.path
    done = await git(
        "rev-list", "--count", f"{rec.base}..refs/heads/{rec.branch}", "--",
        cwd=where, check=False, quiet=True,
    )  # fmt: skip
    return int(done.out.strip()) if done.code == 0 and done.out.strip().isdigit() else None


async def diff(rec: WorktreeRecord, *, stat: bool = False) -> tuple[str, bool]:
    """The change from the base to the files as they are, committed or not,
    new files included: every file added to a throwaway index (the
    worktree's own index is not touched). (text, cut)."""
    if not await trio.to_thread.run_sync(present, rec):
        raise GitError(f"the worktree folder {rec.path} is gone")
    with tempfile.TemporaryDirectory(prefix="ikigai-diff-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        await git("read-tree", "HEAD", cwd=rec.path, quiet=True, env=env)
        await git("add", "--all", "--", ".", cwd=rec.path, quiet=True, env=env)
        args = ["diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv"]
        args += ["--stat"] if stat else ["--binary"]
        done = await git(
            *args, rec.base, "--", cwd=rec.path, quiet=True, env=env, limit=DIFF_LIMIT + 1
        )
    text = done.out
    cut = len(done.out.encode("utf-8", errors="replace")) > DIFF_LIMIT
    return (text[:DIFF_LIMIT] if cut else text), cut


def disk_use(path: str) -> int | None:
    """Bytes of the files under ``path`` (not following links); None when gone."""
    if not os.path.isdir(path):
        return None
    total = 0
    for folder, dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    return total
