"""Taking agents up and letting them go: what a daemon finds at start (or
adopts from a lost daemon) made live, and live agents dropped when another
daemon runs them now.

Restoring is what a killed daemon's restart does: a turn cut mid-way is
marked interrupted, a turn waiting for approval resumes (asked again),
acknowledged prompts queue again in their order, unread mail is delivered.
Adopting a lost daemon's agents is the same thing on fewer agents.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import structlog

from store import WorktreeSpec

from .events import Notice

log = structlog.get_logger("ikigai.agents")

CUT_REASON = "the daemon stopped during this turn"
ENDED_REASON = "its turn ended when the daemon stopped"


async def restore(sup: Any, only: Collection[str] | None = None) -> int:
    """Make the stored live agents live here (``only`` these; None: all of
    them, a daemon alone on its database). Returns how many. ``sup``: the
    Supervisor (typed Any: its module imports this one)."""
    db = sup.db
    cut, resume = await db.call(db.store.settle_open_turns, CUT_REASON, ENDED_REASON, only)
    queued: dict[str, list[Any]] = {}
    for q in await db.call(db.store.queued_prompts):
        queued.setdefault(q.agent_uuid, []).append(q)
    unread = await db.call(db.store.agents_with_unread_mail)
    for tree in await db.call(db.store.worktrees):
        sup.note_worktree(
            tree.agent_uuid,
            WorktreeSpec(path=tree.path, branch=tree.branch, base=tree.base, repo=tree.repo),
        )
    first = not sup.restored_once
    sup.restored_once = True
    records = await db.list_agents(include_dead=True)
    sup._parents.update((r.uuid, r.parent_uuid) for r in records)
    restored = 0
    for record in records:
        if not record.alive:
            sup.dead_count += first
            continue
        if (only is not None and record.uuid not in only) or record.uuid in sup.actors:
            continue
        actor = await sup.start(record)
        missing = _missing_here(sup, actor) if sup.shared else None
        if missing is not None:
            # adopted by a host that lacks what it works with: it waits, its
            # prompts and mail kept in the database, until it moves
            actor.needs_host = missing
            actor.set_state("needs_host")
            log.warning("adopted agent needs another host", agent=record.uuid, reason=missing)
            restored += 1
            continue
        if record.uuid in resume:
            actor.resume_turn(*resume[record.uuid])
        for q in queued.get(record.uuid, ()):
            actor.restore_prompt(
                q.turn, q.text, q.id, attachments=q.attachments, tool_choice=q.tool_choice,
                schema=q.schema,
            )
        if record.uuid in unread:
            actor.notify_mail()
        restored += 1
    for uuid, _start in cut:
        if uuid in sup.actors:
            sup.actors[uuid].log.publish(Notice(text=CUT_REASON + ": marked interrupted"))
    log.info(
        "agents restored" if first else "agents adopted",
        restored=restored,
        interrupted=len(cut),
        resumed=len(resume),
        queued=sum(len(queued.get(u, ())) for u in (only if only is not None else queued)),
    )
    return restored


def _missing_here(sup: Any, actor: Any) -> str | None:
    """What this host lacks of what the agent works with: its folder, or an
    MCP server of its list that this daemon has not configured."""
    if not actor.cwd.is_dir():
        return f"its folder {actor.cwd} does not exist on this host"
    hub = sup.deps.mcp
    if actor.mcp and hub is not None:
        known = set(hub.names())
        absent = [name for name in actor.mcp if name not in known]
        if absent:
            return f"MCP server {', '.join(absent)} is not configured on this daemon"
    return None


def release(sup: Any, uuids: Collection[str], why: str) -> list[str]:
    """Stop these live agents here, without a word to the database: another
    daemon runs them now, or will (this one lost its lease). Their running
    turns and tools are cancelled; their subscribers' streams end."""
    dropped = []
    for uuid in uuids:
        actor = sup.actors.pop(uuid, None)
        if actor is None:
            continue
        actor.drop_queue()
        actor.cancel(suspend=True)
        scope = sup._scopes.pop(uuid, None)
        if scope is not None:
            scope.cancel()
        actor.log.publish(Notice(text=why))
        actor.log.end_reason = "agent moved"  # its subscribers follow it to its next daemon
        actor.log.close()
        dropped.append(uuid)
    if dropped:
        log.warning("agents let go", agents=len(dropped), reason=why)
    return dropped
