"""Methods for scripts managing agents: ``agent.wait``, ``agent.rename``,
``agent.remove`` and ``agent.prune`` (api.py registers them). See
docs/protocol.md, "Managing agents"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import protocol as p
from agents.actor import KEEP_RESULTS

if TYPE_CHECKING:
    from daemon.methods.shapes import ApiHost
    from daemon.server.connection import Connection, Handler
    from protocol import params as P
    from protocol import results as R


class AdminApi:
    def __init__(self, host: ApiHost) -> None:
        self.host = host

    def handlers(self) -> dict[str, Handler]:
        return {
            p.AGENT_WAIT: self.wait,
            p.AGENT_RENAME: self.rename,
            p.AGENT_REMOVE: self.remove,
            p.AGENT_PRUNE: self.prune,
        }

    async def wait(self, conn: Connection, params: P.Wait) -> R.TurnOutcome:
        # long: the connection serves its other requests meanwhile (each runs in its own task)
        host = self.host
        record = await host._record(params.agent)
        actor = host.sup.actor_of(record.uuid)
        label = f"{record.name} ({record.uuid})"
        if actor is None:
            raise p.RpcError(
                p.REFUSED,
                f"agent {label} is dead: turn outcomes are kept for live agents only; "
                "read agent.history",
            )
        if not actor.knows_turn(params.turn):
            raise p.RpcError(
                p.REFUSED,
                f"no turn {params.turn!r} on agent {label}: the daemon keeps the outcome of "
                f"the last {KEEP_RESULTS} turns; read agent.history",
            )
        return await host._outcome(record.uuid, params.turn)

    async def rename(self, conn: Connection, params: P.Rename) -> R.AgentInfo:
        host = self.host
        record = await host._record(params.agent)
        with host._refusals():
            renamed = await host.db.call(host.db.store.rename_agent, record.uuid, params.name)
        actor = host.sup.actor_of(record.uuid)
        if actor is not None:
            actor.name = renamed.name  # what its events and mail labels say
        return await host._described(renamed)

    async def remove(self, conn: Connection, params: P.Remove) -> R.Removed:
        host = self.host
        record = await host._record(params.agent)
        doomed = [record.uuid]
        alive = host.sup.actor_of(record.uuid) is not None
        if alive and not params.force:
            raise p.RpcError(
                p.REFUSED,
                f"agent {record.name} ({record.uuid}) is running: kill it first, "
                "or remove it with force: true (ikictl rm --force)",
            )
        trees = host.worktree_api
        tree = (
            await trees.check_prunable(record.uuid, force=params.force)
            if params.prune_worktree
            else None
        )
        if alive:
            with host._refusals():
                doomed = await host.sup.kill(record.uuid, reason="removed")
        pruned = None
        if tree is not None:
            # (refused above when it had uncommitted changes, unless force)
            pruned, _ = await trees.prune_one(tree, force=params.force)
        done = await self._remove(doomed, purge=params.purge)
        if pruned is not None:
            done["worktree"] = pruned
        return done

    async def prune(self, conn: Connection, params: P.Prune) -> R.Removed:
        host = self.host
        records = await host.db.call(
            host.db.store.list_agents, include_dead=True, include_hidden=False
        )
        dead = [r.uuid for r in records if not r.alive and host.sup.actor_of(r.uuid) is None]
        if params.dry_run:
            return {"removed": dead, "purged_rows": 0}
        return await self._remove(dead, purge=params.purge)

    async def _remove(self, uuids: list[str], *, purge: bool) -> R.Removed:
        host = self.host
        purged = 0
        # newest first: a child (always newer than its parent) goes before its
        # parent, so the parent's purge finds one reader fewer
        for uuid in sorted(uuids, reverse=True):
            with host._refusals():
                removal: Any = await host.db.call(host.db.store.remove_agent, uuid, purge=purge)
            purged += removal.purged_rows
        return {"removed": uuids, "purged_rows": purged}
