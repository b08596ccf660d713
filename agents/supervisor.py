"""The supervisor: one nursery, one task per live agent, and the registry.

    async with trio.open_nursery() as nursery:
        sup = await nursery.start(Supervisor(db, pool, tools).run)
        agent = await sup.create(model="claude-sonnet-4-5/med", name="a")
        turn, position = await sup.prompt(actor, "hello")

A crash inside one actor is logged and recorded on that agent (its turn
marked interrupted, an error event) and never ends the supervisor or other
agents. Killing an agent ends its descendants; dead agents stay readable.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

import structlog
import trio

from providers.modelspec import ResolvedModel, resolve_model
from providers.secrets import scrub
from providers.types import ThinkingLevel
from store import ApprovalRecord, Budget, StoreError, WorktreeSpec

from . import _mcp_select as mcp_select
from . import worktrees
from ._commands import Attached
from ._forks import checked_folder as _folder
from ._forks import checked_priority as _checked
from ._forks import fork_many
from ._isolate import isolated
from ._ops import SupervisorOps
from ._restore import release, restore
from ._shared import SharedDatabase
from ._waits import wait_for
from .actor import Actor
from .compactor import CompactOutcome, ContextStatus, context_status
from .deps import ActorDeps, AgentConfig
from .errors import AgentError
from .events import AgentEnded, Notice
from .permissions import Permissions, dump_chain, parse_chain
from .permissions._gate import Approvals
from .pool import ProviderPool
from .schedules import Scheduler
from .store import AsyncStore
from .tools import ToolRegistry
from .tracing import caused_here

if TYPE_CHECKING:
    from .tools.mcp import McpHub

log = structlog.get_logger("ikigai.agents")



class Supervisor(SharedDatabase):
    """Owns the nursery every actor runs in, the registry of live actors, and
    what concerns several agents at once: fork, kill with descendants, mail,
    waits. On start it restores what a stopped or killed daemon left. It is
    the actors' Neighbours; the daemon's API calls its methods."""

    def __init__(
        self,
        db: AsyncStore,
        pool: ProviderPool,
        tools: ToolRegistry,
        config: AgentConfig | None = None,
        permissions: Permissions | None = None,
        mcp: McpHub | None = None,
    ) -> None:
        self.db = db
        self.pool = pool
        self.tools = tools
        self.config = config or AgentConfig()
        self.actors: dict[str, Actor] = {}
        self._scopes: dict[str, trio.CancelScope] = {}
        self._nursery: trio.Nursery | None = None
        self._stopping = False
        self._changed = trio.Event()  # pulsed on every turn end, death and mail
        # caller uuid -> {agent it waits on: how many waits}; their mail is left for the wait
        self.waiting: dict[str, dict[str, int]] = {}
        self.ops = SupervisorOps(self)
        self.scheduler = Scheduler(self)  # started by run, once the agents are restored
        self.approvals = Approvals()  # who waits on which approval; session answers
        self.dead_count = 0  # kept in memory so status never waits on the database
        # the agents run restores (this daemon's, on a shared database); None: all
        self.restore_only: set[str] | None = None
        self.restored_once = False
        self.shared = False  # other daemons may share the database (daemon/cluster)
        self._to_adopt: set[str] = set()  # handed over to this daemon, being adopted
        self._parents: dict[str, str | None] = {}  # every agent's parent: its tree, no query
        # every worktree not pruned, by agent (dead ones too): listings read it,
        # no query; and its branch by folder, for the agents working there
        self.worktrees: dict[str, WorktreeSpec] = {}
        self._branch_at: dict[str, str] = {}
        self.deps = ActorDeps(
            db=db,
            pool=pool,
            tools=tools,
            config=self.config,
            neighbours=self,
            ops=self.ops,
            permissions=permissions or Permissions(),
            mcp=mcp,
        )

    # ------------------------------------------------------------ lifetime

    async def run(
        self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await restore(self, self.restore_only)
            self.restore_only = None
            await nursery.start(self.scheduler.run)
            task_status.started(self)
            await trio.sleep_forever()

    async def adopt(self, uuids: Collection[str]) -> int:
        """Make these stored agents live here (taken from a lost daemon, or
        handed over); what they were doing is restored as after a crash."""
        restored = await restore(self, set(uuids))
        if restored and self.shared:
            await self.scheduler.reload()
        return restored

    def let_go(self, uuids: Collection[str], why: str) -> list[str]:
        """Stop these agents here: another daemon runs them now (or will)."""
        return release(self, uuids, why)

    async def start(self, record: Any) -> Actor:
        """A live actor for a stored agent that has none (an imported one)."""
        return await self._start(record)

    async def _start(self, record: Any) -> Actor:
        actor = self._adopt(record)
        await trio.lowlevel.checkpoint()
        return actor

    def _adopt(self, record: Any) -> Actor:
        """The live actor of a stored agent, without a checkpoint: a fan-out
        adopts all its children before any of their turns may run."""
        assert self._nursery is not None, "the supervisor is not running"
        actor = Actor(record, self.deps, self.approvals)
        actor.worktree_branch = self._branch_at.get(str(actor.cwd))
        self._parents[actor.uuid] = record.parent_uuid
        actor.tree = self._tree_of(actor.uuid)
        self.actors[actor.uuid] = actor
        # its task starts when it has work and ends when it has none
        actor._spawn = self._spawn
        return actor

    def note_worktree(self, uuid: str, spec: WorktreeSpec) -> None:
        """An agent's worktree, made (or found at start)."""
        self.worktrees[uuid] = spec
        self._branch_at[spec.path] = spec.branch

    def forget_worktree(self, uuid: str) -> None:
        """An agent's worktree, pruned."""
        spec = self.worktrees.pop(uuid, None)
        if spec is not None:
            self._branch_at.pop(spec.path, None)

    def begin_soon(self, begins: list[Callable[[], None]]) -> None:
        """Call ``begins`` (held first turns of a fan-out, see _forks) in a
        task of their own: after the caller's answer has been sent, which
        is queued in this scheduler pass and written in the next."""
        if not begins:
            return

        async def begin() -> None:
            for fn in begins:
                fn()

        assert self._nursery is not None, "the supervisor is not running"
        self._nursery.start_soon(begin)

    def _spawn(self, actor: Actor) -> None:
        if self._nursery is not None and not self._stopping:
            self._nursery.start_soon(self._supervise, actor)
        else:
            actor._looping = False

    async def _supervise(self, actor: Actor) -> None:
        if not actor.alive:  # killed between its work arriving and this task starting
            actor._looping = False
            return
        with trio.CancelScope() as scope:
            self._scopes[actor.uuid] = scope
            try:
                while True:
                    try:
                        await actor.work()
                        return
                    except Exception as exc:  # the loop itself failed: record it, go on
                        log.exception("agent crashed; restarting its loop", agent=actor.uuid)
                        actor.log.publish(
                            Notice(
                                text=scrub(
                                    f"agent loop crashed ({type(exc).__name__}: {exc}); restarted"
                                )
                            )
                        )
                        await trio.sleep(0.1)
                        actor._looping = True
            finally:
                if self._scopes.get(actor.uuid) is scope:
                    del self._scopes[actor.uuid]

    async def shutdown(self, grace: float = 5.0) -> None:
        """Cancel every running turn (marked interrupted) and wait up to ``grace``
        for them to record it."""
        for actor in self.actors.values():
            actor.drop_queue()
            actor.cancel(suspend=True)  # a turn waiting for approval resumes after the restart
        with trio.move_on_after(grace):
            for actor in list(self.actors.values()):
                while actor.current_turn is not None:
                    await actor.wait_turn_end()
        self._stopping = True  # no actor starts new work from here on
        for scope in list(self._scopes.values()):
            scope.cancel()
        for actor in self.actors.values():
            actor.log.close()

    # ------------------------------------------------------------ lookup

    def actor_of(self, uuid: str) -> Actor | None:
        """The live actor of an agent, or None (dead or unknown)."""
        return self.actors.get(uuid)

    @property
    def running_count(self) -> int:
        return len(self.actors)

    def label_of(self, uuid: str) -> str:
        actor = self.actors.get(uuid)
        return f"{actor.name} ({uuid})" if actor else uuid

    def awaited_by(self, uuid: str) -> set[str]:
        return set(self.waiting.get(uuid, ()))

    async def resolve(self, ref: str) -> Any:
        """The agent record for a uuid, a unique uuid prefix, or a name (live first)."""
        try:
            return await self.db.resolve(ref)
        except LookupError as e:
            raise AgentError(str(e)) from None

    async def live(self, ref: str) -> Actor:
        record = await self.resolve(ref)
        actor = self.actors.get(record.uuid)
        if actor is None:
            raise AgentError(f"agent {record.name} ({record.uuid}) is dead")
        return actor

    def resolve_model(
        self, text: str, *, current_thinking: ThinkingLevel = "none"
    ) -> ResolvedModel:
        return resolve_model(text, catalog=self.pool.catalog, current_thinking=current_thinking)

    # ------------------------------------------------------------ agents

    async def create(
        self,
        *,
        model: str,
        name: str | None = None,
        system: str = "",
        prompt: str | None = None,
        parent: str | None = None,
        thinking: ThinkingLevel = "none",
        cwd: str | None = None,
        policy: str | None = None,
        mcp: list[str] | None = None,
        priority: str | None = None,
        origin: str = "interactive",
        budget: Budget | None = None,
        worktree: worktrees.Wish | bool | None = None,
    ) -> tuple[Any, ResolvedModel, str | None]:
        """A new agent (no history). Returns (record, resolved model, first turn id).
        Its tools run in ``cwd`` (default: the daemon's working directory); its
        tool calls are checked against the named ``policy`` (default: the
        configured default, followed across reloads); it may use the MCP
        servers ``mcp`` (default: those marked default in config)."""
        chain = None if policy is None else [self._policy_name(policy)]
        settings: dict[str, Any] = {
            "model": model,
            "system": system,
            "prompt": prompt,
            "parent": parent,
            "thinking": thinking,
            "chain": chain,
            "servers": None if mcp is None else mcp_select.checked(self.deps.mcp, mcp),
            "priority": _checked(priority),
            "origin": origin,
            # a root without one gets the configured default (budget.root)
            "budget": budget if budget or parent else self.config.daily.root,
        }
        if worktree is None or worktree is False:
            return await self._create(name=name, cwd=cwd, **settings)
        if worktree is True:
            worktree = worktrees.Wish()
        where = _folder(cwd) if cwd is not None else str(self.deps.config.cwd)
        async with isolated(self, where, [name], worktree, parent_name=None) as [plan]:
            return await self._create(
                name=plan.name, cwd=plan.spec.path, uuid=plan.uuid, worktree=plan.spec, **settings
            )

    def _policy_name(self, name: str) -> str:
        known = self.deps.permissions.known()
        if name not in known:
            raise AgentError(f"unknown policy {name!r} (known: {', '.join(known)})")
        return name

    async def _create(
        self,
        *,
        model: str,
        name: str | None,
        system: str,
        prompt: str | None,
        parent: str | None,
        thinking: ThinkingLevel,
        cwd: str | None,
        chain: list[str] | None,
        servers: list[str] | None,
        priority: str | None = None,
        origin: str = "interactive",
        budget: Budget | None = None,
        uuid: str | None = None,
        worktree: WorktreeSpec | None = None,
    ) -> tuple[Any, ResolvedModel, str | None]:
        try:
            resolved = self.resolve_model(model, current_thinking=thinking)
        except ValueError as e:
            raise AgentError(str(e)) from None
        folder = _folder(cwd) if cwd is not None else str(self.deps.config.cwd)
        try:
            record = await self.db.create_agent(
                name=name,
                provider=resolved.provider,
                model=resolved.model,
                thinking_level=resolved.thinking.level,
                system_prompt=system,
                parent_uuid=parent,
                cwd=folder,
                policy=dump_chain(chain),
                mcp=mcp_select.dump(servers),
                priority=priority,
                budget=budget,
                uuid=uuid,
                worktree=worktree,
            )
        except (StoreError, ValueError) as e:
            raise AgentError(str(e)) from None
        if worktree is not None:
            self.note_worktree(record.uuid, worktree)
        actor = await self._start(record)
        if prompt:  # continues the trace of the tool call (a fork) or script making it
            causes = caused_here(self.deps.tracer, "fork" if parent else "prompt")
            turn = (await actor.submit(prompt, priority=origin, causes=causes))[0]
        else:
            turn = None
        return record, resolved, turn

    async def fork(
        self, ref: str, *, prompt: str | None = None, name: str | None = None, **kwargs: Any
    ) -> tuple[Any, ResolvedModel, str | None]:
        """A child that inherits the parent's history up to its last completed
        message (or ``at_message``), its model and its working directory, unless
        ``model`` or ``cwd`` is given. Its policy chain is the parent's, with
        ``policy`` added at the end when given: the strictest of the chain
        decides, so a fork can only narrow what its parent may do."""
        [forked] = await self.fork_many(ref, [prompt], names=[name], **kwargs)
        return forked

    async def fork_many(
        self, ref: str, prompts: list[str | None], **kwargs: Any
    ) -> list[tuple[Any, ResolvedModel, str | None]]:
        """One child per entry of ``prompts`` (see fork), all at one fork point
        and in one transaction with their first turns' user rows (_forks.py)."""
        return await fork_many(self, ref, prompts, **kwargs)

    async def kill(self, ref: str, *, reason: str = "killed") -> list[str]:
        """End an agent and all its descendants. Returns the uuids ended."""
        record = await self.resolve(ref)
        doomed = [record.uuid, *await self.db.descendants(record.uuid, live_only=True)]
        doomed = [u for u in doomed if u in self.actors or u == record.uuid]
        for uuid in reversed(doomed):  # children first
            actor = self.actors.get(uuid)
            if actor is not None:
                actor.drop_queue()
                actor.cancel()
        with trio.move_on_after(5):
            for uuid in doomed:
                actor = self.actors.get(uuid)
                if actor is not None and actor.current_turn is not None:
                    await actor.wait_turn_end()
        await self.db.kill(doomed, reason=reason)
        for uuid in doomed:
            actor = self.actors.pop(uuid, None)
            if actor is not None:
                self.dead_count += 1
                actor.ended()
                actor.log.publish(AgentEnded(reason=reason))
                actor.log.close()
            scope = self._scopes.pop(uuid, None)
            if scope is not None:
                scope.cancel()
        self._pulse()
        for uuid in doomed:
            self.tell_others(f"turn:{uuid}")
        return doomed

    async def prompt(
        self,
        actor: Actor,
        text: str,
        attachments: list[Attached] | None = None,
        **submit: Any,
    ) -> tuple[str, int]:
        """Queue a prompt (files after its text); committed when this returns.
        (turn id, position). ``submit``: Actor.submit's causes, tool_choice, schema."""
        if not text.strip():
            raise AgentError("the prompt is empty")
        try:
            return await actor.submit(text, attachments=attachments, **submit)
        except StoreError as e:
            raise AgentError(str(e)) from None

    async def switch_model(self, ref: str, spec: str, *, queue: bool = False) -> ResolvedModel:
        actor = await self.live(ref)
        try:
            resolved = self.resolve_model(spec, current_thinking=actor.thinking_level)
        except ValueError as e:
            raise AgentError(str(e)) from None
        if actor.busy:
            if not queue:
                raise AgentError(
                    f"agent {actor.name} is running a turn: cancel it first, "
                    "or queue the switch to run after it"
                )
            actor.queue_switch(resolved)
            return resolved
        await actor.apply_switch(resolved)
        return resolved

    async def set_system(self, ref: str, text: str) -> None:
        actor = await self.live(ref)
        await self.db.set_system(actor.uuid, text)
        actor.system_prompt = text

    async def history_op(self, ref: str, kind: str, label: str | None = None) -> int:
        """clear, mark [label] or rewind [label]; refused while a turn runs."""
        actor = await self.live(ref)
        if actor.busy:
            raise AgentError(f"agent {actor.name} is running a turn: {kind} it when it is idle")
        try:
            row = await self.db.control(actor.uuid, kind, label)
        except LookupError as e:
            raise AgentError(str(e)) from None
        actor.invalidate_context()
        return row

    def mcp_servers_of(self, uuid: str) -> list[str]:
        """The MCP servers a live agent uses now ([] for a dead one)."""
        actor = self.actors.get(uuid)
        return mcp_select.effective(self.deps.mcp, actor.mcp) if actor else []

    async def context_status(self, ref: str) -> ContextStatus:
        """The agent's context size against its model's window (a live agent)."""
        actor = await self.live(ref)
        return await context_status(actor, actor.deps)

    async def compact(self, ref: str, *, keep_turns: int | None = None) -> CompactOutcome:
        """Summarize the oldest part of the agent's context now (between turns)."""
        actor = await self.live(ref)
        if actor.busy:
            raise AgentError(
                f"agent {actor.name} is running a turn: compact it when it is idle "
                "(a turn compacts by itself when its context nears the window)"
            )
        cmd = actor.queue_compact(keep_turns)
        await cmd.done.wait()
        if cmd.outcome is None:
            raise AgentError(f"agent {actor.name} ended before its context was compacted")
        return cmd.outcome

    # ------------------------------------------------------------ approvals

    async def approve(
        self,
        approval_id: str,
        decision: str,
        *,
        remember: str = "once",
        reason: str | None = None,
        by: str,
    ) -> ApprovalRecord:
        """Answer a pending approval (committed, with its permission row, before
        the waiting turn wakes). NoSuchApproval / ApprovalClosed (store) when
        there is none such or it was decided already."""
        if decision not in ("allow", "deny"):
            raise AgentError(f"decision must be allow or deny, not {decision!r}")
        if remember not in ("once", "agent", "session"):
            raise AgentError(f"remember must be once, agent or session, not {remember!r}")
        record = await self.db.call(
            self.db.store.decide_approval,
            approval_id,
            decision,  # type: ignore[arg-type]
            by=by,
            reason=reason,
            remember=remember,
        )
        if decision == "allow" and remember != "once":
            key = (record.policy, record.rule, record.tool)
            self.approvals.remember(record.agent_uuid, key, remember)
        self.approvals.deliver(record, remember)
        if decision == "allow" and remember != "once":
            await self.approvals.answer_covered(self.db, record, remember, by)
        return record

    async def pending_approvals(self, agent_uuid: str | None = None) -> list[ApprovalRecord]:
        return await self.db.call(self.db.store.pending_approvals, agent_uuid)

    # ------------------------------------------------------------ mail

    async def send_mail(self, sender: str | None, to_ref: str, text: str) -> int:
        record = await self.resolve(to_ref)
        target = self.actors.get(record.uuid)
        if target is None and record.alive and self.elsewhere(record):
            # another daemon runs it: told on commit, through the database
            sent = await self.db.call(
                self.db.store.send_mail, record.uuid, text, from_uuid=sender, notify=True
            )
            return sent.id
        if target is None:
            raise AgentError(f"agent {record.name} ({record.uuid}) is dead")
        mail_id = await self.db.send_mail(sender, target.uuid, text)
        if self.deps.tracer is not None:  # the turn that reads it links to the sender's span
            self.deps.tracer.mail_sent(mail_id)
        target.notify_mail()
        self._pulse()
        return mail_id

    def turn_finished(self, uuid: str) -> None:
        self._pulse()
        self.tell_others(f"turn:{uuid}")

    async def wait_for(
        self,
        caller: str,
        refs: list[str],
        timeout: float | None,  # noqa: ASYNC109 - the model's own wait limit, part of the tool
    ) -> list[dict[str, Any]]:
        """Until each agent has mailed ``caller``, finished its work, or died."""
        return await wait_for(self, caller, refs, timeout)

    # ------------------------------------------------------------ the limiter

    def _tree_of(self, uuid: str) -> str:
        """Its root ancestor's uuid (parents known since start: no query)."""
        seen = 0
        while (parent := self._parents.get(uuid)) is not None and seen < 10_000:
            uuid, seen = parent, seen + 1
        return uuid

    async def set_policy(self, ref: str, policy: str | None) -> list[str]:
        """The agent's own policy (None: its parent's chain, or the configured
        default for a root), stored; its next tool call is gated by it. A fork
        keeps its ancestors' policies before its own: it can only narrow them."""
        actor = await self.live(ref)
        record = await self.resolve(actor.uuid)
        inherited: list[str] | None = None
        if record.parent_uuid is not None:
            parent = self.actors.get(record.parent_uuid)
            if parent is not None:
                inherited = parent.policy
            else:
                inherited = parse_chain((await self.resolve(record.parent_uuid)).policy)
        if policy is None:
            chain = inherited
        else:
            own = self._policy_name(policy)
            chain = [*self.deps.permissions.names(inherited), own] if record.parent_uuid else [own]
        await self.db.call(self.db.store.set_policy, actor.uuid, dump_chain(chain))
        actor.policy = chain
        return self.deps.permissions.names(chain)

    async def set_priority(self, ref: str, priority: str | None) -> str | None:
        """The agent's own priority for its model calls (None: each turn's,
        by who started it), stored so it outlives a restart."""
        _checked(priority)
        actor = await self.live(ref)
        await self.db.call(self.db.store.set_priority, actor.uuid, priority)
        actor.priority = priority
        return priority
