"""New agents in worktrees of their own (agent.fork/create {worktree}).

The worktrees are made before the agents' rows, named after the agents (so
their ids and names are chosen here), and removed again when the rows
cannot be written: nothing is left half-made.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from store import MAX_NAME, uuid7

from . import worktrees
from .errors import AgentError


def _root(sup: Any) -> Path:
    root = sup.deps.config.worktrees
    if root is None:
        raise AgentError("worktree: this daemon has no worktrees folder configured")
    return Path(root)


MAX_ISOLATED = 100  # worktrees one call may make (each is a checkout of the repository)


async def prepare(
    sup: Any,
    folder: str,
    names: list[str | None],
    wish: worktrees.Wish,
    *,
    parent_name: str | None,
) -> list[worktrees.Planned]:
    """Worktrees made for new agents of ``names`` (None: the default name,
    <parent>-<6 of its id>, or agent-<6 hex>) from the checkout ``folder``
    is in: each one's plan (its uuid, name and WorktreeSpec). The caller
    undoes them (worktrees.undo) if the agents are not made."""
    if len(names) > MAX_ISOLATED:
        raise AgentError(
            f"worktree: at most {MAX_ISOLATED} forks with worktrees at once "
            f"(each is a checkout of the repository), not {len(names)}; fork them in batches"
        )
    uuids = [uuid7() for _ in names]
    chosen = [
        n
        if n is not None
        else f"{parent_name}-{u[-6:]}"[-MAX_NAME:]
        if parent_name is not None
        else f"agent-{secrets.token_hex(3)}"
        for n, u in zip(names, uuids, strict=True)
    ]
    try:
        repo, planned = await worktrees.plan(
            folder,
            _root(sup),
            list(zip(uuids, chosen, strict=True)),
            branch=wish.branch,
            base=wish.base,
        )
        await worktrees.make(repo, planned)
    except worktrees.WorktreeError as e:
        raise AgentError(str(e)) from None
    except worktrees.GitError as e:
        raise AgentError(f"worktree: {e}") from None
    return planned


async def undo(planned: list[worktrees.Planned]) -> None:
    """Remove worktrees whose agents were not made (even in a cancelled scope)."""
    with trio.CancelScope(shield=True):
        await worktrees.undo(planned)


@asynccontextmanager
async def isolated(
    sup: Any,
    folder: str,
    names: list[str | None],
    wish: worktrees.Wish,
    *,
    parent_name: str | None,
) -> AsyncIterator[list[worktrees.Planned]]:
    """``prepare``'s worktrees for the block that makes their agents; when
    the block fails, they are removed."""
    planned = await prepare(sup, folder, names, wish, parent_name=parent_name)
    try:
        yield planned
    except BaseException:
        await undo(planned)
        raise
