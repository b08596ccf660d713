"""``worktree.*``: agents' git worktrees (agents/worktrees; rows in
store/_worktrees.py), and the worktree side of ``agent.kill`` and
``agent.remove`` {prune_worktree}. See docs/protocol.md, "Worktrees"."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import trio

import protocol as p
from agents import worktrees as wt
from daemon.methods.shapes import Family, stamp
from protocol import params as P
from protocol import results as R
from store import WorktreeRecord

if TYPE_CHECKING:
    from daemon.server import Connection, Handler

_LOOKS = 8  # worktrees looked at at once (each look is two git processes)


@contextmanager
def git_refusals() -> Iterator[None]:
    """A worktree refused (or git failed) -> a clear protocol error."""
    try:
        yield
    except wt.MergeConflict as e:
        raise p.RpcError(p.MERGE_CONFLICT, str(e), {"conflicts": e.conflicts[:1000]}) from None
    except (wt.WorktreeError, wt.GitError) as e:
        raise p.RpcError(p.REFUSED, str(e)) from None


def shown(rec: WorktreeRecord, look: wt.Look | None, size: int | None = None) -> R.Worktree:
    return {
        "agent": rec.agent_uuid,
        "name": rec.name,
        "alive": rec.alive,
        "path": rec.path,
        "branch": rec.branch,
        "base": rec.base,
        "repo": rec.repo,
        "created_at": stamp(rec.created_at),
        "pruned_at": None if rec.pruned_at is None else stamp(rec.pruned_at),
        "exists": look.exists if look else False,
        "head": look.head if look else None,
        "dirty": look.dirty if look else None,
        "ahead": look.ahead if look else None,
        "bytes": size,
    }


async def looks(recs: list[WorktreeRecord]) -> list[wt.Look | None]:
    """Each worktree's state, a few at a time."""
    out: list[wt.Look | None] = [None] * len(recs)
    limit = trio.Semaphore(_LOOKS)

    async def one(i: int, rec: WorktreeRecord) -> None:
        async with limit:
            if rec.pruned_at is None:
                try:
                    out[i] = await wt.look(rec)
                except wt.GitError:
                    out[i] = None

    async with trio.open_nursery() as nursery:
        for i, rec in enumerate(recs):
            nursery.start_soon(one, i, rec)
    return out


class WorktreesApi(Family):
    def handlers(self) -> dict[str, Handler]:
        return {
            p.WORKTREE_LIST: self.list,
            p.WORKTREE_DIFF: self.diff,
            p.WORKTREE_MERGE: self.merge,
            p.WORKTREE_PRUNE: self.prune,
        }

    async def _of(self, ref: str) -> WorktreeRecord:
        record = await self.host._record(ref)
        rec = await self.db.call(self.db.store.worktree, record.uuid)
        if rec is None:
            raise p.RpcError(
                p.REFUSED,
                f"agent {record.name} ({record.uuid}) has no worktree "
                "(it was not made with worktree: fork it with --worktree)",
            )
        if rec.pruned_at is not None:
            raise p.RpcError(
                p.REFUSED, f"agent {record.name}'s worktree was pruned on {stamp(rec.pruned_at)}"
            )
        return rec

    async def list(self, conn: Connection, params: P.WorktreeList) -> list[R.Worktree]:
        recs = await self.db.call(self.db.store.worktrees, include_pruned=params.all)
        states = await looks(recs)
        sizes: list[int | None] = [None] * len(recs)
        if params.disk:
            for i, rec in enumerate(recs):
                sizes[i] = await trio.to_thread.run_sync(wt.disk_use, rec.path)
        return [shown(r, s, z) for r, s, z in zip(recs, states, sizes, strict=True)]

    async def diff(self, conn: Connection, params: P.WorktreeDiff) -> R.WorktreeDiff:
        rec = await self._of(params.agent)
        with git_refusals():
            text, cut = await wt.diff(rec, stat=params.stat)
        return {
            "agent": rec.agent_uuid,
            "branch": rec.branch,
            "base": rec.base,
            "diff": text,
            "truncated": cut,
        }

    async def merge(self, conn: Connection, params: P.WorktreeMerge) -> R.WorktreeMerged:
        rec = await self._of(params.agent)
        with git_refusals():
            done = await wt.merge(rec, into=params.into, squash=params.squash, text=params.message)
        return {
            "agent": rec.agent_uuid,
            "branch": rec.branch,
            "into": done.into,
            "checkout": done.checkout,
            "commit": done.commit,
            "fast_forward": done.fast_forward,
            "squashed": done.squashed,
            "commits": done.commits,
        }

    async def prune(self, conn: Connection, params: P.WorktreePrune) -> R.WorktreePruned:
        if params.agents is None:
            recs = [
                r
                for r in await self.db.call(self.db.store.worktrees)
                if not r.alive and self.sup.actor_of(r.agent_uuid) is None
            ]
        else:
            recs = [await self._of(ref) for ref in params.agents]
        pruned: list[R.Worktree] = []
        kept: list[R.WorktreeKept] = []
        for rec in recs:
            if self.sup.actor_of(rec.agent_uuid) is not None:
                kept.append(
                    {
                        "agent": rec.agent_uuid,
                        "path": rec.path,
                        "reason": f"agent {rec.name} is alive: kill it first "
                        "(ikictl kill --prune-worktree)",
                    }
                )
                continue
            entry, reason = await self.prune_one(rec, force=params.force, dry_run=params.dry_run)
            if reason is not None:
                kept.append({"agent": rec.agent_uuid, "path": rec.path, "reason": reason})
            else:
                pruned.append(entry)
        return {"pruned": pruned, "kept": kept}

    async def prune_one(
        self, rec: WorktreeRecord, *, force: bool, dry_run: bool = False
    ) -> tuple[R.Worktree, str | None]:
        """Remove one worktree (folder, branch, row). (its entry, why it was
        kept or None)."""
        with git_refusals():
            done = await wt.prune(rec, force=force, dry_run=dry_run)
        entry = shown(rec, done.look)
        if done.note:
            entry["note"] = done.note
        if done.removed and not dry_run:
            await self.db.call(self.db.store.mark_worktree_pruned, rec.agent_uuid)
            self.sup.forget_worktree(rec.agent_uuid)
        return entry, done.reason

    async def check_prunable(self, uuid: str, *, force: bool) -> WorktreeRecord | None:
        """Before a kill or remove with prune_worktree: the worktree, or a
        refusal when it has uncommitted changes (nothing is done then)."""
        rec = await self.db.call(self.db.store.worktree, uuid)
        if rec is None or rec.pruned_at is not None:
            return None
        if not force:
            with git_refusals():
                _, reason = await wt.check(rec)
            if reason is not None:
                raise p.RpcError(
                    p.REFUSED,
                    f"agent {rec.name}'s worktree at {rec.path}: {reason}; nothing was done",
                )
        return rec


__all__ = ["WorktreesApi", "git_refusals"]
