"""The ``Api``: what every method family shares (agent references resolved,
refusals mapped to error codes, turn outcomes) and the one table of handlers
the control server dispatches on. Each family's methods live in their own
module (daemon/methods/__init__.py lists them). See docs/protocol.md.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import protocol as p
from agents import Supervisor
from agents.actor import Actor
from agents.permissions import parse_chain
from daemon.methods.admin import AdminApi
from daemon.methods.agents import AgentsApi
from daemon.methods.approvals import ApprovalsApi
from daemon.methods.budgets import BudgetsApi
from daemon.methods.cluster import ClusterApi
from daemon.methods.daemon import DaemonApi
from daemon.methods.fleet import FleetApi
from daemon.methods.history import HistoryApi
from daemon.methods.mail import MailApi
from daemon.methods.mcp import McpApi, agent_servers
from daemon.methods.refusals import refusals
from daemon.methods.schedules import SchedulesApi
from daemon.methods.schemas import SchemasApi
from daemon.methods.shapes import DaemonInfo, plain, stamp, tokens
from daemon.methods.transfer import TransferApi
from daemon.methods.worktrees import WorktreesApi
from daemon.server.forwarding import Elsewhere
from protocol import results as R
from providers.catalog import Catalog
from store import AgentNotFound, AgentRecord, AmbiguousAgent, WorktreeSpec

if TYPE_CHECKING:
    from daemon.server import Handler

__all__ = ["Api", "DaemonInfo"]

_CANDIDATES = 20  # agents an ambiguous-ref error lists


def _brief(spec: WorktreeSpec | None) -> R.WorktreeBrief | None:
    if spec is None:
        return None
    return {"path": spec.path, "branch": spec.branch, "base": spec.base, "repo": spec.repo}


def _listed(names: list[str] | None) -> tuple[str, ...] | None:
    """A list of names as a key of _info's memo."""
    return None if names is None else tuple(names)


def _next_model(actor: Actor) -> str | None:
    """``provider/model/level`` of the last model switch queued behind the running turn."""
    r = actor.next_model
    return None if r is None else f"{r.provider}/{r.model}/{r.thinking.level}"


class Api:
    def __init__(self, sup: Supervisor, catalog: Catalog, info: DaemonInfo) -> None:
        self.sup = sup
        self.db = sup.db
        self.info = info
        del catalog  # the pool's is read (see below): the same one at start
        # agent.kill and agent.remove prune worktrees through it too
        self.worktree_api = WorktreesApi(self)

    @property
    def catalog(self) -> Catalog:
        # the pool's, which a reload replaces: a provider added to config.json
        # is listed and usable without a restart
        return self.sup.pool.catalog

    def handlers(self) -> dict[str, Handler]:
        """Every method's handler, by method name (protocol's constants)."""
        return {
            **DaemonApi(self).handlers(),
            **AgentsApi(self).handlers(),
            **BudgetsApi(self).handlers(),
            **HistoryApi(self).handlers(),
            **MailApi(self).handlers(),
            **ApprovalsApi(self).handlers(),
            **McpApi(lambda: self.sup.deps.mcp).handlers(),
            **AdminApi(self).handlers(),
            **TransferApi(self).handlers(),
            **FleetApi(self).handlers(),
            **SchedulesApi(self).handlers(),
            **self.worktree_api.handlers(),
            **ClusterApi(self).handlers(),
            **SchemasApi(self).handlers(),
        }

    # ------------------------------------------------------------ helpers

    def _refusals(self) -> AbstractContextManager[None]:
        return refusals()

    async def _record(self, ref: str) -> AgentRecord:
        try:
            record = await self.db.resolve(ref)
        except AmbiguousAgent:
            # the candidates go in data only, so a client lists them once
            ref = ref.strip()
            found = [r for r in await self.db.find_agents(ref) if r.uuid.startswith(ref.lower())]
            shown = found[:_CANDIDATES]
            shorts = await self.db.short_refs([r.uuid for r in shown])
            more = f" (the first {len(shown)} listed)" if len(found) > len(shown) else ""
            raise p.RpcError(
                p.AMBIGUOUS_AGENT,
                f"{ref!r} is the start of {len(found)} agent ids{more}: "
                "give more of the id, or a name",
                {
                    "candidates": [
                        {
                            "uuid": r.uuid,
                            "short": shorts[r.uuid],
                            "name": r.name,
                            "status": r.status,
                        }
                        for r in shown
                    ]
                },
            ) from None
        except AgentNotFound as e:
            raise p.RpcError(p.AGENT_NOT_FOUND, str(e)) from None
        else:
            self._here(record)
            return record

    def _here(self, record: AgentRecord) -> None:
        """Nothing if this daemon may answer for the agent; Elsewhere (the
        request goes to its daemon) if another daemon runs it."""
        me = self.db.store.daemon_id
        if not record.alive or record.daemon == me or me is None:
            return
        if record.uuid in self.sup.actors:
            return
        if record.daemon is None:
            raise p.RpcError(
                p.AGENT_UNAVAILABLE,
                f"agent {record.name} ({record.uuid}) has no daemon at the moment: its daemon "
                "was lost and another adopts it within the lease; try again shortly",
                {"daemon": None},
            )
        raise Elsewhere(record.daemon, f"{record.name} ({record.uuid})")

    async def _actor(self, ref: str) -> Actor:
        # an exact id wins over every other reading of ``ref`` (AgentsMixin.resolve):
        # a live agent's id needs no query (scripts prompt by id, in loops)
        live = self.sup.actor_of(ref.strip().lower())
        if live is not None:
            return live
        record = await self._record(ref)
        actor = self.sup.actor_of(record.uuid)
        if actor is None:
            raise p.RpcError(
                p.REFUSED,
                f"agent {record.name} ({record.uuid}) is dead; dead agents can be read, not run",
            )
        return actor

    async def _described(self, record: AgentRecord) -> R.AgentInfo:
        """``_info`` of one agent, with its short id looked up."""
        return self._info(record, (await self.db.short_refs([record.uuid]))[record.uuid])

    def _can_think(self, provider: str, model: str) -> bool:
        # as the model resolver judges it: a model the catalog lacks gets its provider's default
        entry, _known = self.catalog.entry_or_default(provider, model)
        return entry.thinking.kind != "none"

    def _info(
        self, record: AgentRecord, short: str, memo: dict[Any, Any] | None = None
    ) -> R.AgentInfo:
        """The agent as the protocol shows it. ``memo``: one dict for every
        agent of a listing, to work out once what many agents share (thinking
        per model, policies per chain, MCP servers per list). Only within
        one synchronous pass: config, catalog and MCP servers change between
        awaits, not during it."""
        if memo is None:
            memo = {}
        actor = self.sup.actor_of(record.uuid)
        provider = actor.provider if actor else record.provider
        model = actor.model if actor else record.model
        can_think = memo.get(("think", provider, model))
        if can_think is None:
            can_think = memo["think", provider, model] = self._can_think(provider, model)
        # a live agent's policy chain and MCP servers are its actor's (as
        # agent_servers reads them), a dead one's are its row's
        policy_key = ("policy", _listed(actor.policy)) if actor else ("policy row", record.policy)
        policy = memo.get(policy_key)
        if policy is None:
            perms = self.sup.deps.permissions
            chain = actor.policy if actor else parse_chain(record.policy)
            policy = memo[policy_key] = (perms.names(chain), perms.is_yolo(chain))
        mcp_key = ("mcp", _listed(actor.mcp)) if actor else ("mcp row", record.mcp)
        mcp = memo.get(mcp_key)
        if mcp is None:
            mcp = memo[mcp_key] = agent_servers(self.sup, record, actor is not None)
        return {
            "uuid": record.uuid,
            "short": short,
            "name": record.name,
            "parent": record.parent_uuid,
            "provider": provider,
            "model": model,
            "thinking_level": actor.thinking_level if actor else record.thinking_level,
            "can_think": can_think,
            "next_model": None if actor is None else _next_model(actor),
            "system_prompt": actor.system_prompt if actor else record.system_prompt,
            "status": "running" if actor else record.status,
            "state": actor.state if actor else None,
            "current_turn": actor.current_turn if actor else None,
            "queued": actor.queued if actor else 0,
            "created_at": stamp(record.created_at),
            "ended_at": None if record.ended_at is None else stamp(record.ended_at),
            "cwd": str(actor.cwd) if actor else record.cwd,
            "policy": policy[0],
            "yolo": policy[1],
            "mcp": mcp,
            "priority": actor.priority if actor else record.priority,
            "worktree": _brief(self.sup.worktrees.get(record.uuid)),
            "daemon": record.daemon,
        }

    # ------------------------------------------------------------ daemon

    # ------------------------------------------------------------ agents

    async def _outcome(self, uuid: str, turn: str) -> R.TurnOutcome:
        """How the turn ended, once it has. Waits on the actor itself, not on a
        subscription: a burst that makes subscribers lag cannot fail a waiting request."""
        actor = self.sup.actor_of(uuid)
        ended = await actor.wait_turn(turn) if actor is not None else None
        if ended is None:
            raise p.RpcError(p.REFUSED, f"agent {uuid} ended before the turn finished")
        return {
            "turn": turn,
            "status": ended.status,
            "reply": ended.reply,
            "error": plain(ended.error),
            "usage": tokens(ended.usage),
            "cost_usd": ended.cost_usd,
            **({"message": ended.message} if ended.message else {}),  # type: ignore[typeddict-item]
            **({"data": ended.data} if ended.schema else {}),  # type: ignore[typeddict-item]
        }

    async def _created(self, created: R.Created, wait: bool) -> R.Created:
        """agent.create / agent.fork with ``wait`` and a prompt: answered when
        the first turn ends, as agent.prompt with ``wait`` is."""
        turn = created["turn"]
        if not wait or turn is None:
            return created
        result = await self._outcome(created["agent"]["uuid"], turn)
        if result["status"] == "error":
            data = {**result, "agent": created["agent"]["uuid"]}
            raise p.RpcError(p.TURN_FAILED, f"the turn ended in error: {result['error']}", data)
        return {**created, "outcome": result}

    # ------------------------------------------------------------ approvals
