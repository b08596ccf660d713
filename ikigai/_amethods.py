"""Every control method as a typed call.

``scripts/unasync`` writes ikigai/_methods.py (the synchronous twin) from
this file; edit this one.

tests/client/test_unasync.py fails when the two differ. Each method's
result is the TypedDict of protocol.results that the daemon is held to
(docs/protocol.md shows them; docs/protocol.schema.json is their JSON Schema).
"""

from __future__ import annotations

import protocol as p
from ikigai._astream import AsyncSubscription, AsyncTurn
from ikigai._structured import json_schema, typed_answer
from ikigai._trace import with_trace
from ikigai._wire_files import attachments_param
from ikigai.errors import RpcError, TurnFailed

TYPE_CHECKING = False  # importing typing itself costs ikictl start-up time
if TYPE_CHECKING:
    from typing import Any, Literal

    from ikigai._structured import SchemaLike
    from ikigai._wire_files import Attachment
    from protocol import results as R

    Remember = Literal["once", "agent", "session"]
    # agent.create / agent.fork's ``worktree``: True, or {"branch": ..., "from": ...}
    WorktreeOption = bool | dict[str, str | None] | None


class AsyncMethods:
    """The typed methods of AsyncClient (the connection supplies ``call``,
    ``send``, ``route``, ``unroute`` and ``next_of``)."""

    path: str

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    async def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        raise NotImplementedError

    async def wait_for(self, rid: int, timeout: float | None = None) -> Any:
        raise NotImplementedError

    def route(self, sid: int) -> None:
        raise NotImplementedError

    def unroute(self, sid: int) -> None:
        raise NotImplementedError

    async def next_of(self, sid: int, timeout: float | None = None) -> dict[str, Any] | None:
        raise NotImplementedError

    # ------------------------------------------------------------ the daemon

    async def status(self) -> R.Status:
        """Version, protocol_version, pid, uptime, agents, max_line_bytes..."""
        return await self.call(p.DAEMON_STATUS)

    async def reload(self) -> R.Ok:
        """Read config.json and credentials.json again (as SIGHUP)."""
        return await self.call(p.DAEMON_RELOAD)

    async def shutdown(self) -> R.Ok:
        """Stop the daemon gracefully (it answers first)."""
        return await self.call(p.DAEMON_SHUTDOWN)

    async def models(self, provider: str | None = None) -> list[R.ModelRow]:
        return await self.call(p.MODELS_LIST, {"provider": provider})

    async def providers(self) -> list[R.ProviderRow]:
        return await self.call(p.PROVIDERS_LIST)

    async def fleet(self, *, since: int | None = None, wait_s: float = 0.0) -> R.FleetSnapshot:
        """Every live agent (state, model, tokens/s, spend, budget, what it
        waits on) and every provider key's queue. With ``since`` (a
        snapshot's ``version``) and ``wait_s``: answered at the fleet's next
        change, or after ``wait_s`` seconds."""
        params: dict[str, Any] = {"since": since}
        if wait_s:
            params["wait_s"] = wait_s
        return await self.call(p.FLEET_SNAPSHOT, params)

    async def daemons(self, *, include_gone: bool = False) -> R.DaemonsListed:
        """The daemons sharing this one's database (docs/cluster.md): each
        one's id, host, pid, state (up, draining; ``include_gone``: stopped
        and lost ones too), running agents, heartbeat age, version, labels;
        ``self`` is the id of the daemon that answered."""
        return await self.call(p.DAEMONS_LIST, {"include_gone": include_gone})

    # ------------------------------------------------------------ agents

    async def create(
        self,
        *,
        model: str | None = None,
        name: str | None = None,
        system: str | None = None,
        cwd: str | None = None,
        policy: str | None = None,
        mcp: list[str] | None = None,
        priority: str | None = None,
        budget: dict[str, Any] | None = None,
        worktree: WorktreeOption = None,
        on: str | None = None,
    ) -> R.Created:
        """A new agent (``model`` as "provider/model/thinking", an alias, or
        the daemon's default). Prompt it with ``prompt``. ``priority``
        (interactive, background): its model calls' place in the provider's
        queue for every turn (default: each turn's, by who started it).
        ``budget``: {max_cost_usd, max_tokens, max_turns, allow_unpriced} for
        it and its descendants. ``worktree``: True, or {"branch", "from"}, for
        a git worktree of its own (``cwd`` must be in a repository): its cwd
        becomes the worktree, on branch ikigai/NAME unless ``branch``, from
        ``cwd``'s HEAD unless ``from``. ``on``: the daemon to run it, among
        several sharing one PostgreSQL database (docs/cluster.md): a daemon's
        id, a host name or a label (the one of them with the fewest running
        agents), or "any" (the live daemon with the fewest); None: the daemon
        asked. One that names no live daemon raises RpcError -32602 listing
        the live ones."""
        params: dict[str, Any] = {"model": model, "name": name, "system": system, "cwd": cwd}
        params.update({"policy": policy, "mcp": mcp, "priority": priority, "budget": budget})
        params["worktree"] = worktree
        if on is not None:  # left out: the call a daemon of one database alone knows
            params["on"] = on
        return await self.call(p.AGENT_CREATE, params)

    async def fork(
        self,
        agent: str,
        *,
        model: str | None = None,
        name: str | None = None,
        at: int | None = None,
        cwd: str | None = None,
        policy: str | None = None,
        mcp: list[str] | None = None,
        priority: str | None = None,
        budget: dict[str, Any] | None = None,
        worktree: WorktreeOption = None,
    ) -> R.Created:
        """A child that inherits ``agent``'s history (up to message ``at``),
        model and priority, unless given another ``model`` or ``priority``.
        ``budget``: as create's, at most what the parent's budgets have left.
        ``worktree``: True, or {"branch", "from"}: the child works in a git
        worktree of the parent's repository (its ``agent.worktree`` says
        where); False: none; None: as the parent's policy says (fork_isolation)."""
        params: dict[str, Any] = {
            "agent": agent,
            "model": model,
            "name": name,
            "at": at,
            "cwd": cwd,
        }
        params.update({"policy": policy, "mcp": mcp, "priority": priority, "budget": budget})
        params["worktree"] = worktree
        return await self.call(p.AGENT_FORK, params)

    async def fork_many(
        self,
        agent: str,
        *,
        prompts: list[str] | None = None,
        count: int | None = None,
        prompt: str | None = None,
        wait: bool = False,
        model: str | None = None,
        name: str | None = None,
        at: int | None = None,
        cwd: str | None = None,
        policy: str | None = None,
        mcp: list[str] | None = None,
        priority: str | None = None,
        budget: dict[str, Any] | None = None,
        worktree: WorktreeOption = None,
        traceparent: str | None = None,
    ) -> R.Forked:
        """Several children of ``agent`` at once, in one transaction, each with
        its first turn started: one per entry of ``prompts``, or ``count`` of
        them each given ``prompt`` (or no prompt). ``name`` becomes NAME-1,
        NAME-2...; the other settings are fork's, shared by every child.
        ``wait``: answered when every first turn has ended (each child's
        ``outcome``). ``worktree``: fork's, a worktree for each child (a
        ``branch`` given is NAME-1, NAME-2... as the names are).
        ``traceparent``: as prompt's, the trace the first turns continue."""
        params: dict[str, Any] = {"agent": agent, "prompts": prompts, "count": count}
        params.update({"prompt": prompt, "wait": wait, "model": model, "name": name, "at": at})
        params.update({"cwd": cwd, "policy": policy, "mcp": mcp, "priority": priority})
        params.update({"budget": budget, "worktree": worktree})
        return await self.call(p.AGENT_FORK, with_trace(params, traceparent))

    async def agents(self, *, include_dead: bool = False) -> list[R.ListedAgent]:
        """Every agent (``include_dead``: the ended ones too; removed ones never)."""
        return await self.call(p.AGENT_LIST, {"include_dead": include_dead})

    async def show(self, agent: str) -> R.ShownAgent:
        return await self.call(p.AGENT_SHOW, {"agent": agent})

    async def prompt(
        self,
        agent: str,
        text: str,
        *,
        attachments: list[Attachment] | None = None,
        traceparent: str | None = None,
        tool_choice: str | dict[str, str] | None = None,
        schema: SchemaLike | None = None,
    ) -> AsyncTurn:
        """Queue ``text`` as the agent's next turn; the handle streams the
        turn's events (subscribed before the prompt is sent, so none is
        missed) and ``wait()`` gives how it ended. ``attachments``: files, each
        a path (str or Path: the daemon reads it), bytes, or an agent.prompt
        dict ({path | url | data + media_type, name?}). ``traceparent``:
        the W3C trace context the turn continues (default: the current
        OpenTelemetry span's, when the program uses OpenTelemetry).
        ``tool_choice``: "auto" (the default), "none" (no tool call in the
        turn), "required" or ``{"name": TOOL}`` (a tool call, or that tool's,
        on the turn's first model call). ``schema``: the final answer must be
        JSON matching it — a JSON Schema dict, a saved schema's name, or a
        msgspec Struct / TypedDict / dataclass / pydantic model type; the
        outcome's ``data`` is the answer (an instance of the type, for a type)."""
        sub = await self.subscribe(agent)
        try:
            queued = await self.enqueue(
                agent,
                text,
                attachments=attachments,
                traceparent=traceparent,
                tool_choice=tool_choice,
                schema=schema,
            )
        except BaseException:
            await sub.aclose()
            raise
        return AsyncTurn(self, sub, queued["turn"], queued["position"], schema)

    async def enqueue(
        self,
        agent: str,
        text: str,
        *,
        attachments: list[Attachment] | None = None,
        traceparent: str | None = None,
        tool_choice: str | dict[str, str] | None = None,
        schema: SchemaLike | None = None,
    ) -> R.Queued:
        """Queue ``text`` as the agent's next turn and return at once: the
        turn's id and the turns ahead of it (``prompt`` to follow it, ``ask``
        or ``wait_turn`` to wait for its outcome). ``attachments``,
        ``traceparent``, ``tool_choice`` and ``schema`` as ``prompt``'s."""
        params: dict[str, Any] = {"agent": agent, "text": text, **attachments_param(attachments)}
        if tool_choice is not None:
            params["tool_choice"] = tool_choice
        if schema is not None:
            params["schema"] = json_schema(schema)
        return await self.call(p.AGENT_PROMPT, with_trace(params, traceparent))

    async def ask(
        self,
        agent: str,
        text: str,
        *,
        check: bool = False,
        timeout: float | None = None,
        attachments: list[Attachment] | None = None,
        traceparent: str | None = None,
        tool_choice: str | dict[str, str] | None = None,
        schema: SchemaLike | None = None,
    ) -> R.TurnOutcome:
        """Prompt and wait for the outcome, without streaming: ``reply``,
        ``status``, ``usage``, ``cost_usd`` (and ``data`` with a ``schema``).
        ``check``: raise TurnFailed unless it completed. ``attachments``,
        ``traceparent``, ``tool_choice`` and ``schema`` as ``prompt``'s."""
        params: dict[str, Any] = {"agent": agent, "text": text, "wait": True}
        params.update(attachments_param(attachments))
        if tool_choice is not None:
            params["tool_choice"] = tool_choice
        if schema is not None:
            params["schema"] = json_schema(schema)
        rid = await self.send(p.AGENT_PROMPT, with_trace(params, traceparent))
        try:
            outcome: R.TurnOutcome = await self.wait_for(rid, timeout)
        except RpcError as e:
            if e.code != p.TURN_FAILED or not isinstance(e.data, dict):
                raise
            outcome = e.data  # type: ignore[assignment]
        if check and outcome.get("status") != "completed":
            raise TurnFailed(outcome)
        return typed_answer(outcome, schema) if schema is not None else outcome

    async def wait_turn(
        self, agent: str, turn: str, *, check: bool = False, timeout: float | None = None
    ) -> R.TurnOutcome:
        """How ``turn`` ended, once it has (the daemon keeps the last 64 turns')."""
        rid = await self.send(p.AGENT_WAIT, {"agent": agent, "turn": turn})
        outcome: R.TurnOutcome = await self.wait_for(rid, timeout)
        if check and outcome.get("status") != "completed":
            raise TurnFailed(outcome)
        return outcome

    async def subscribe(self, agent: str, *, from_seq: int | None = None) -> AsyncSubscription:
        """The agent's events from now (or from ``from_seq``, what the daemon
        still keeps), resumed by itself when the connection falls behind."""
        params: dict[str, Any] = {"agent": agent, "from_seq": from_seq}
        sub: R.Subscribed = await self.call(p.AGENT_SUBSCRIBE, params)
        sid = sub["subscription"]
        self.route(sid)
        return AsyncSubscription(self, agent, sid, from_seq or sub["next_seq"])

    async def cancel(self, agent: str, *, at_boundary: bool = False) -> R.Cancelled:
        params: dict[str, Any] = {"agent": agent, "at_boundary": at_boundary}
        return await self.call(p.AGENT_CANCEL, params)

    async def kill(
        self, agent: str, *, prune_worktree: bool = False, force: bool = False
    ) -> R.Killed:
        """End the agent and all its descendants (history kept). ``prune_worktree``:
        delete its git worktree and branch too; refused (REFUSED, nothing done)
        when the worktree has uncommitted changes, unless ``force``."""
        # left out when False: the call a daemon without worktrees knows
        params: dict[str, Any] = {"agent": agent, "prune_worktree": prune_worktree or None}
        params["force"] = force or None
        return await self.call(p.AGENT_KILL, params)

    async def set_model(self, agent: str, model: str, *, queue: bool = False) -> R.ModelInfo:
        params: dict[str, Any] = {"agent": agent, "model": model, "queue": queue}
        return await self.call(p.AGENT_SET_MODEL, params)

    async def set_system(self, agent: str, text: str) -> R.Ok:
        params: dict[str, Any] = {"agent": agent, "text": text}
        return await self.call(p.AGENT_SET_SYSTEM, params)

    async def set_policy(self, agent: str, policy: str | None) -> R.PolicySet:
        """The agent's tool policy from its next tool call on (None: the
        configured default, or its parent's chain for a fork)."""
        params: dict[str, Any] = {"agent": agent, "policy": policy}
        return await self.call(p.AGENT_SET_POLICY, params)

    async def set_priority(self, agent: str, priority: str | None) -> R.PrioritySet:
        """The agent's place in the provider's queue for all its turns:
        interactive or background (None: each turn's, by who started it)."""
        params: dict[str, Any] = {"agent": agent, "priority": priority}
        return await self.call(p.AGENT_SET_PRIORITY, params)

    async def set_budget(
        self,
        agent: str,
        max_cost_usd: float | None = None,
        *,
        max_tokens: int | None = None,
        max_turns: int | None = None,
        allow_unpriced: bool = False,
        clear: bool = False,
    ) -> R.BudgetInfo:
        """Set the agent's own budget (it covers its descendants too), or
        ``clear`` it; answers every budget now in force with its spend."""
        params: dict[str, Any] = {"agent": agent, "clear": clear}
        if not clear:
            params["budget"] = {
                "max_cost_usd": max_cost_usd,
                "max_tokens": max_tokens,
                "max_turns": max_turns,
                "allow_unpriced": allow_unpriced,
            }
        return await self.call(p.AGENT_SET_BUDGET, params)

    async def rename(self, agent: str, name: str) -> R.AgentInfo:
        params: dict[str, Any] = {"agent": agent, "name": name}
        return await self.call(p.AGENT_RENAME, params)

    async def remove(
        self, agent: str, *, purge: bool = False, force: bool = False, prune_worktree: bool = False
    ) -> R.Removed:
        """Take an ended agent out of every listing (``purge``: delete its
        rows too, except those a descendant still reads; ``force``: kill it
        first). ``prune_worktree``: delete its git worktree and branch too;
        refused when it has uncommitted changes, unless ``force``."""
        params: dict[str, Any] = {"agent": agent, "purge": purge, "force": force}
        params["prune_worktree"] = prune_worktree or None
        return await self.call(p.AGENT_REMOVE, params)

    async def prune(self, *, purge: bool = False, dry_run: bool = False) -> R.Removed:
        """``remove`` every ended agent."""
        return await self.call(p.AGENT_PRUNE, {"purge": purge, "dry_run": dry_run})

    # ------------------------------------------------------------ history

    async def history(
        self,
        agent: str,
        *,
        limit: int | None = None,
        before: int | None = None,
        blocks: bool = False,
        signatures: bool = False,
    ) -> R.History:
        """The agent's rows, oldest first (its ancestors' up to each fork
        point too); ``blocks``: each message's blocks, model, usage, turn."""
        params: dict[str, Any] = {"agent": agent, "limit": limit, "before": before}
        params.update({"blocks": blocks or None, "signatures": signatures or None})
        return await self.call(p.AGENT_HISTORY, params)

    async def usage(self, agent: str, *, descendants: bool = False) -> R.UsageReport:
        """Tokens and cost of ``agent`` (with ``descendants``: its whole tree)."""
        params: dict[str, Any] = {"agent": agent, "descendants": descendants or None}
        return await self.call(p.AGENT_USAGE, params)

    async def usage_all(self) -> R.AllUsage:
        """Tokens and cost of every agent, tree by tree."""
        return await self.call(p.AGENT_USAGE)

    async def clear(self, agent: str) -> R.MessageId:
        return await self.call(p.AGENT_CLEAR, {"agent": agent})

    async def mark(self, agent: str, label: str | None = None) -> R.MessageId:
        params: dict[str, Any] = {"agent": agent, "label": label}
        return await self.call(p.AGENT_MARK, params)

    async def rewind(self, agent: str, label: str | None = None) -> R.MessageId:
        params: dict[str, Any] = {"agent": agent, "label": label}
        return await self.call(p.AGENT_REWIND, params)

    async def compact(self, agent: str, *, keep: int | None = None) -> R.Compacted:
        params: dict[str, Any] = {"agent": agent, "keep": keep}
        return await self.call(p.AGENT_COMPACT, params)

    async def export(self, agent: str, *, signatures: bool = True) -> R.ExportDoc:
        """The agent's whole lineage and settings as one document (ExportDoc)."""
        return await self.call(p.AGENT_EXPORT, {"agent": agent, "signatures": signatures})

    async def import_agent(
        self, document: R.ExportDoc | dict[str, Any], *, name: str | None = None
    ) -> R.Created:
        """A new agent from an ``export`` document: its history and model."""
        params: dict[str, Any] = {"document": document, "name": name}
        return await self.call(p.AGENT_IMPORT, params)

    # ------------------------------------------------------------ mail, approvals

    async def send_mail(self, to: str, text: str, *, sender: str | None = None) -> R.MailId:
        """Mail ``to`` (it takes it as its next prompt), from agent ``sender``."""
        params: dict[str, Any] = {"to": to, "text": text, "from": sender}
        return await self.call(p.MAIL_SEND, params)

    async def inbox(self, agent: str, *, unread: bool = False) -> list[R.Mail]:
        params: dict[str, Any] = {"agent": agent, "unread": unread}
        return await self.call(p.MAIL_INBOX, params)

    async def approvals(self, agent: str | None = None) -> list[R.Approval]:
        """The tool calls waiting for an answer."""
        return await self.call(p.APPROVALS_LIST, {"agent": agent})

    async def approve(self, approval: str, *, remember: Remember = "once") -> R.Approved:
        params: dict[str, Any] = {"approval": approval, "decision": "allow", "remember": remember}
        return await self.call(p.AGENT_APPROVE, params)

    async def deny(
        self, approval: str, *, reason: str | None = None, remember: Remember = "once"
    ) -> R.Approved:
        params: dict[str, Any] = {"approval": approval, "decision": "deny", "reason": reason}
        params["remember"] = remember
        return await self.call(p.AGENT_APPROVE, params)

    # ------------------------------------------------------------ MCP

    async def mcp_servers(self) -> R.McpServers:
        return await self.call(p.MCP_LIST)

    async def mcp_tools(self, server: str) -> R.McpTools:
        return await self.call(p.MCP_TOOLS, {"server": server})

    async def mcp_prompts(self, server: str) -> R.McpPrompts:
        return await self.call(p.MCP_PROMPTS, {"server": server})

    async def mcp_restart(self, server: str) -> R.McpServerState:
        return await self.call(p.MCP_RESTART, {"server": server})

    # ------------------------------------------------------------ schedules

    async def schedule_add(
        self,
        agent: str,
        prompt: str,
        *,
        cron: str | None = None,
        tz: str | None = None,
        every: str | None = None,
        at: str | None = None,
        in_: str | None = None,
        fork: bool = False,
        keep: int | None = None,
        name: str | None = None,
        missed: str | None = None,
        overlap: str | None = None,
        budget_usd: float | None = None,
        allow_fast: bool = False,
    ) -> R.Schedule:
        """Prompt ``agent`` (``fork``: a fresh fork of it each run, the ``keep``
        newest kept, each with its own ``budget_usd`` in USD) at the times of one
        rule: ``cron`` (5 fields, in ``tz``), ``every`` ("10m", "1h30m"),
        ``at`` (ISO 8601; without an offset in ``tz``) or ``in_`` (once, that
        long from now). The texts are the daemon's to parse: a bad one is
        RpcError -32602 naming it. ``missed``: skip, once or all; ``overlap``:
        skip or queue."""
        params: dict[str, Any] = {"agent": agent, "prompt": prompt, "cron": cron, "tz": tz}
        params.update({"every": every, "at": at, "in": in_, "fork": fork, "keep": keep})
        params.update({"name": name, "missed": missed, "overlap": overlap})
        params.update({"budget_usd": budget_usd, "allow_fast": allow_fast})
        return await self.call(p.SCHEDULE_ADD, params)

    async def schema_save(
        self, name: str, schema: SchemaLike, *, description: str = ""
    ) -> R.SavedSchema:
        """Save ``schema`` (as ``prompt`` takes it) by ``name``, replacing one of that name."""
        params = {"name": name, "schema": json_schema(schema), "description": description}
        return await self.call(p.SCHEMA_SAVE, params)

    async def schema_list(self) -> list[R.SavedSchema]:
        return await self.call(p.SCHEMA_LIST, {})

    async def schema_show(self, name: str) -> R.SchemaShown:
        return await self.call(p.SCHEMA_SHOW, {"name": name})

    async def schema_delete(self, name: str) -> R.SchemaDeleted:
        return await self.call(p.SCHEMA_DELETE, {"name": name})

    async def schedule_list(self, *, include_removed: bool = False) -> list[R.Schedule]:
        """The schedules by id (``include_removed``: the removed ones too)."""
        return await self.call(p.SCHEDULE_LIST, {"all": include_removed})

    async def schedule_show(
        self, schedule: int | str, *, limit: int | None = None
    ) -> R.ScheduleShown:
        """One schedule (its id or name) with its runs, newest first."""
        params: dict[str, Any] = {"schedule": schedule, "limit": limit}
        return await self.call(p.SCHEDULE_SHOW, params)

    async def schedule_remove(self, schedule: int | str) -> R.ScheduleRemoved:
        return await self.call(p.SCHEDULE_REMOVE, {"schedule": schedule})

    async def schedule_pause(self, schedule: int | str) -> R.Schedule:
        return await self.call(p.SCHEDULE_PAUSE, {"schedule": schedule})

    async def schedule_resume(self, schedule: int | str) -> R.Schedule:
        return await self.call(p.SCHEDULE_RESUME, {"schedule": schedule})

    async def schedule_run(self, schedule: int | str) -> R.ScheduleRun:
        """Fire the schedule once now, paused or not: the run (fired, or
        skipped with its ``reason``)."""
        return await self.call(p.SCHEDULE_RUN, {"schedule": schedule})

    # ------------------------------------------------------------ git worktrees

    async def worktrees(
        self, *, include_pruned: bool = False, disk: bool = False
    ) -> list[R.Worktree]:
        """The agents' git worktrees (made with ``worktree=``), live and dead
        agents': branch, base, head, uncommitted files (``dirty``), commits
        ``ahead`` of the base. ``include_pruned``: the pruned ones too;
        ``disk``: each one's ``bytes`` (reads every file's size)."""
        return await self.call(p.WORKTREE_LIST, {"all": include_pruned, "disk": disk})

    async def worktree_diff(self, agent: str, *, stat: bool = False) -> R.WorktreeDiff:
        """The agent's changes against its worktree's base, committed or not,
        new files too (``stat``: git diff --stat's summary instead)."""
        return await self.call(p.WORKTREE_DIFF, {"agent": agent, "stat": stat})

    async def worktree_merge(
        self,
        agent: str,
        *,
        into: str | None = None,
        squash: bool = False,
        message: str | None = None,
    ) -> R.WorktreeMerged:
        """Merge the agent's branch into ``into`` (default: the branch of the
        parent's checkout) in the checkout that has it, which must be clean;
        ``squash``: as one commit (``message``). A conflict raises RpcError
        MERGE_CONFLICT (``data["conflicts"]``: the paths) and changes nothing."""
        params: dict[str, Any] = {"agent": agent, "into": into, "squash": squash}
        params["message"] = message
        return await self.call(p.WORKTREE_MERGE, params)

    async def move(self, agent: str, *, to: str) -> R.Moved:
        """Hand an idle agent to another daemon of the database (docs/cluster.md):
        ``to`` is a daemon id, a host, a label or "any". Its events go on from
        ``next_seq`` there; a subscription to it ends with "agent moved"."""
        return await self.call(p.AGENT_MOVE, {"agent": agent, "to": to})

    async def worktree_prune(
        self, agents: list[str] | None = None, *, force: bool = False, dry_run: bool = False
    ) -> R.WorktreePruned:
        """Delete worktrees and their branches: these ``agents``' (live ones
        too), or every dead agent's. One with uncommitted changes or commits
        not merged is kept (in ``kept``, with the reason) unless ``force``."""
        params: dict[str, Any] = {"agents": agents, "force": force, "dry_run": dry_run}
        return await self.call(p.WORKTREE_PRUNE, params)
