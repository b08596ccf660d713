"""The methods on one agent's life: ``agent.create``, ``agent.list``,
``agent.show``, ``agent.prompt``, ``agent.subscribe`` / ``agent.unsubscribe``,
``agent.cancel``, ``agent.kill``, ``agent.fork``, ``agent.set_model``,
``agent.set_system`` and ``agent.set_priority``. See docs/protocol.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import msgspec

import protocol as p
from agents import fork_names
from agents.tracing import continuing, prompt_causes
from agents.worktrees import Wish
from daemon.methods._context import context_of
from daemon.methods.attachments import checked_files, forwarded
from daemon.methods.budgets import budget_info, to_budget
from daemon.methods.cluster import placement
from daemon.methods.refusals import refusals
from daemon.methods.schemas import checked_schema
from daemon.methods.shapes import Family, model_info, plain, stamp
from daemon.methods.tool_choice import checked_choice
from daemon.methods.worktrees import looks
from daemon.server.forwarding import Elsewhere
from protocol import params as P
from protocol import results as R

if TYPE_CHECKING:
    from daemon.server import Connection, Handler


class AgentsApi(Family):
    """Create, prompt, fork, switch, cancel and kill agents."""

    def handlers(self) -> dict[str, Handler]:
        return {
            p.AGENT_CREATE: self.create,
            p.AGENT_LIST: self.list,
            p.AGENT_SHOW: self.show,
            p.AGENT_PROMPT: self.prompt,
            p.AGENT_SUBSCRIBE: self.subscribe,
            p.AGENT_UNSUBSCRIBE: self.unsubscribe,
            p.AGENT_CANCEL: self.cancel,
            p.AGENT_KILL: self.kill,
            p.AGENT_FORK: self.fork,
            p.AGENT_SET_MODEL: self.set_model,
            p.AGENT_SET_SYSTEM: self.set_system,
            p.AGENT_SET_PRIORITY: self.set_priority,
            p.AGENT_SET_POLICY: self.set_policy,
        }

    async def create(self, conn: Connection, params: P.Create) -> R.Created:
        there = await placement(self, params.on)
        if there is not None:  # made by that daemon, which then runs it
            raise Elsewhere(there, "(new)", msgspec.structs.replace(params, on=there))
        tracer = self.sup.deps.tracer
        with refusals(), continuing(tracer, params.traceparent):
            record, resolved, turn = await self.sup.create(
                model=params.model or self.host.info.default_model,
                name=params.name,
                system=params.system,
                prompt=params.prompt,
                cwd=params.cwd,
                policy=params.policy,
                mcp=params.mcp,
                priority=params.priority,
                budget=to_budget(params.budget),
                worktree=wish(params.worktree) if params.worktree is not False else None,
            )
        info = await self.host._described(record)
        created: R.Created = {"agent": info, "model": model_info(resolved), "turn": turn}
        return await self.host._created(created, params.wait)

    async def list(self, conn: Connection, params: P.ListAgents) -> list[R.ListedAgent]:
        listing = await self.db.listing(include_dead=params.include_dead)
        totals, active, shorts = listing.totals, listing.active, listing.shorts
        info = self.host._info
        memo: dict[Any, Any] = {}  # what the agents share, worked out once (Api._info)
        # one object for every agent without usage: the answer is only encoded
        unused: R.UsageBrief = {
            "turns": 0,
            "calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cost_usd": 0.0,
        }
        out: list[R.ListedAgent] = []
        for r in listing.records:
            # completed in place: a copy of each agent's keys costs as much as making them
            entry = cast("R.ListedAgent", info(r, shorts[r.uuid], memo))
            t = totals.get(r.uuid)
            entry["usage"] = (
                unused
                if t is None
                else {
                    "turns": t.turns,
                    "calls": t.calls,
                    "input_tokens": t.input_tokens,
                    "output_tokens": t.output_tokens,
                    "cost_usd": t.cost_usd,
                }
            )
            last = active.get(r.uuid)
            # no row of its own: active when it was made
            entry["last_active_at"] = entry["created_at"] if last is None else stamp(last)
            out.append(entry)
        return out

    async def show(self, conn: Connection, params: P.AgentRef) -> R.ShownAgent:
        record = await self.host._record(params.agent)
        report = await self.db.usage(record.uuid)
        active = await self.db.call(self.db.store.last_active, [record.uuid])
        actor = self.sup.actor_of(record.uuid)
        last = actor.last_result if actor else None
        last_turn: R.LastTurn | None = (
            None
            if last is None
            else {
                "turn": last.turn,
                "status": last.status,
                "reply": last.reply,
                "error": plain(last.error),
            }
        )
        info = await self.host._described(record)
        tree = info["worktree"]
        if tree is not None:  # what it holds now: two git commands
            rec = await self.db.call(self.db.store.worktree, record.uuid)
            state = None if rec is None else (await looks([rec]))[0]
            info["worktree"] = {
                **tree,
                "dirty": None if state is None else state.dirty,
                "ahead": None if state is None else state.ahead,
            }
        return {
            **info,
            "usage": plain(report.total),
            "last_turn": last_turn,
            "context": await context_of(self.sup, record.uuid),
            "last_active_at": stamp(active.get(record.uuid, record.created_at)),
            "budget": await budget_info(self.db, record.uuid),
        }

    async def prompt(self, conn: Connection, params: P.Prompt) -> R.Queued | R.TurnOutcome:
        try:
            actor = await self.host._actor(params.agent)
        except Elsewhere as e:  # its daemon may be on another machine: files go as data
            sent = await forwarded(params, self.sup, conn, e.daemon)
            raise Elsewhere(e.daemon, e.agent, sent if sent is not params else None) from None
        choice = await checked_choice(self.sup, actor, params.tool_choice)
        schema = await checked_schema(self.sup, actor, params.schema)
        # read last: a path or URL is read only once the rest is known good
        default = self.host.info.default_model  # suggested for a file the model does not take
        files = await checked_files(params.attachments or [], self.sup, actor, default)
        # read only when traces are on: off, a traceparent costs nothing
        on = self.sup.deps.tracer is not None
        causes = prompt_causes(params.traceparent) if on else ()
        with refusals():
            turn, position = await self.sup.prompt(
                actor, params.text, files, causes=causes, tool_choice=choice, schema=schema
            )
        if not params.wait:
            return {"turn": turn, "position": position}
        result = await self.host._outcome(actor.uuid, turn)
        if result["status"] == "error":
            raise p.RpcError(p.TURN_FAILED, f"the turn ended in error: {result['error']}", result)
        return result

    async def subscribe(self, conn: Connection, params: P.Subscribe) -> R.Subscribed:
        actor = await self.host._actor(params.agent)
        if params.from_seq is not None and params.from_seq < 1:
            raise p.RpcError(p.INVALID_PARAMS, "from_seq: must be 1 or more")
        next_seq = actor.log.next_seq
        from_seq = params.from_seq if params.from_seq is not None else next_seq
        return {"subscription": conn.subscribe(actor.log, from_seq), "next_seq": next_seq}

    async def unsubscribe(self, conn: Connection, params: P.Unsubscribe) -> R.Ok:
        return {"ok": conn.unsubscribe(params.subscription)}

    async def cancel(self, conn: Connection, params: P.Cancel) -> R.Cancelled:
        actor = await self.host._actor(params.agent)
        return {"cancelled": actor.cancel(at_boundary=params.at_boundary)}

    async def kill(self, conn: Connection, params: P.Kill) -> R.Killed:
        record = await self.host._record(params.agent)
        if self.sup.actor_of(record.uuid) is None:
            raise p.RpcError(p.REFUSED, f"agent {record.name} ({record.uuid}) is already dead")
        trees = self.host.worktree_api
        tree = (
            await trees.check_prunable(record.uuid, force=params.force)
            if params.prune_worktree
            else None
        )
        with refusals():
            killed = await self.sup.kill(record.uuid)
        done: R.Killed = {"killed": killed}
        if tree is not None:
            # (refused above when it had uncommitted changes, unless force)
            done["worktree"], _ = await trees.prune_one(tree, force=params.force)
        return done

    async def fork(self, conn: Connection, params: P.Fork) -> R.Created | R.Forked:
        record = await self.host._record(params.agent)
        prompts, names = _fan_out(params)
        # the children's first turns begin once this answer is on its way
        begins: list[Callable[[], None]] = []
        try:
            with refusals(), continuing(self.sup.deps.tracer, params.traceparent):
                forked = await self.sup.fork_many(
                    record.uuid,
                    prompts,
                    names=names,
                    model=params.model,
                    at_message=params.at,
                    cwd=params.cwd,
                    policy=params.policy,
                    mcp=params.mcp,
                    priority=params.priority,
                    budget=to_budget(params.budget),
                    hold=begins,
                    worktree=None if params.worktree is None else wish(params.worktree),
                )
            shorts = await self.db.short_refs([child.uuid for child, _, _ in forked])
        finally:
            self.sup.begin_soon(begins)
        made: list[R.Created] = [
            {
                "agent": self.host._info(child, shorts[child.uuid]),
                "model": model_info(resolved),
                "turn": turn,
            }
            for child, resolved, turn in forked
        ]
        if params.count is None and params.prompts is None:
            return await self.host._created(made[0], params.wait)
        if params.wait:
            made = [await self.host._created(c, True) for c in made]
        return {"children": made}

    async def set_model(self, conn: Connection, params: P.SetModel) -> R.ModelInfo:
        actor = await self.host._actor(params.agent)
        with refusals():
            resolved = await self.sup.switch_model(actor.uuid, params.model, queue=params.queue)
        return model_info(resolved)

    async def set_system(self, conn: Connection, params: P.SetSystem) -> R.Ok:
        actor = await self.host._actor(params.agent)
        with refusals():
            await self.sup.set_system(actor.uuid, params.text)
        return {"ok": True}

    async def set_priority(self, conn: Connection, params: P.SetPriority) -> R.PrioritySet:
        actor = await self.host._actor(params.agent)
        with refusals():
            priority = await self.sup.set_priority(actor.uuid, params.priority)
        return {"agent": actor.uuid, "priority": priority}

    async def set_policy(self, conn: Connection, params: P.SetPolicy) -> R.PolicySet:
        known = self.sup.deps.permissions.known()
        if params.policy is not None and params.policy not in known:
            raise p.RpcError(
                p.INVALID_PARAMS,
                f"policy: unknown policy {params.policy[:80]!r} (known: {', '.join(known)})",
            )
        actor = await self.host._actor(params.agent)
        with refusals():
            chain = await self.sup.set_policy(actor.uuid, params.policy)
        return {"agent": actor.uuid, "policy": chain}


def wish(asked: bool | P.WorktreeAsk) -> Wish | bool:
    """A worktree asked in params, as agents/worktrees takes it."""
    if isinstance(asked, bool):
        return asked
    return Wish(branch=asked.branch, base=asked.from_)


def _fan_out(params: P.Fork) -> tuple[list[str | None], list[str | None]]:
    """The prompt and name of each child agent.fork makes."""
    if params.prompts is not None:
        if params.prompt is not None or params.count is not None:
            raise p.RpcError(
                p.INVALID_PARAMS, "invalid params: give prompts, or prompt and count, not both"
            )
        if not params.prompts:
            raise p.RpcError(p.INVALID_PARAMS, "prompts: give at least one prompt")
        prompts: list[str | None] = list(params.prompts)
    elif params.count is not None:
        if params.count < 1:
            raise p.RpcError(p.INVALID_PARAMS, "count: must be 1 or more")
        prompts = [params.prompt] * params.count
    else:
        prompts = [params.prompt]
    return prompts, fork_names(params.name, len(prompts))
