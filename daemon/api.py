"""The control methods: each takes a Connection and its decoded params and
returns its result (the TypedDicts of daemon/results.py) or raises RpcError.
See docs/protocol.md.

Errors are mapped once, in ``_refusals``: the refusals the layers below raise
on purpose (no such agent, busy, bad model text, a store rule) become protocol
errors; anything else is a bug, which control.py logs with its traceback and
answers -32603.
"""

from __future__ import annotations

import builtins  # Api.list shadows list in the class body's annotations
import os
import socket
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from agents import AgentError, Supervisor
from agents.actor import Actor
from agents.permissions import parse_chain
from providers.catalog import Catalog
from store import AgentNotFound, AgentRecord, AmbiguousAgent, NoSuchApproval, StoreError

from . import params as P
from . import protocol as p
from . import results as R
from ._admin import AdminApi
from ._context import compacted, context_of
from ._history import read_history
from ._mcpapi import McpApi, agent_servers
from ._shapes import model_info as _model_info
from ._shapes import plain as _plain
from ._shapes import stamp as _stamp
from ._shapes import tokens as _tokens
from ._transfer import TransferApi
from ._version import __version__
from .control import Connection, Handler
from .rows import model_row

# Refusals raised on purpose below the API, and the code each becomes (the
# first match wins: subclasses before their bases).
_REFUSALS: tuple[tuple[type[Exception], int], ...] = (
    (AgentNotFound, p.AGENT_NOT_FOUND),
    (AgentError, p.REFUSED),
    (StoreError, p.REFUSED),
)


_CANDIDATES = 20  # agents an ambiguous-ref error lists


@contextmanager
def _refusals() -> Iterator[None]:
    try:
        yield
    except p.RpcError:
        raise
    except tuple(kind for kind, _ in _REFUSALS) as e:
        code = next(code for kind, code in _REFUSALS if isinstance(e, kind))
        raise p.RpcError(code, str(e)) from None


@dataclass
class DaemonInfo:
    socket: str
    database: str
    started_at: float
    default_model: str
    connections: Callable[[], int]
    shutdown: Callable[[], None]
    reload: Callable[[], str | None]  # None: done; else why it was refused
    settings: Callable[[str], Any]  # provider name -> ProviderSettings
    max_line_bytes: int = 0  # the longest request line the socket takes (read at start)


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

    @property
    def catalog(self) -> Catalog:
        # the pool's, which a reload replaces: a provider added to config.json
        # is listed and usable without a restart
        return self.sup.pool.catalog

    def handlers(self) -> dict[str, Handler]:
        return {
            p.DAEMON_STATUS: self.status,
            p.DAEMON_SHUTDOWN: self.shutdown,
            p.DAEMON_RELOAD: self.reload,
            p.MODELS_LIST: self.models,
            p.PROVIDERS_LIST: self.providers,
            p.PROVIDERS_CHECK: self.check_provider,
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
            p.AGENT_HISTORY: self.history,
            p.AGENT_USAGE: self.usage,
            p.AGENT_CLEAR: self.clear,
            p.AGENT_MARK: self.mark,
            p.AGENT_REWIND: self.rewind,
            p.AGENT_COMPACT: self.compact,
            p.MAIL_SEND: self.mail_send,
            p.MAIL_INBOX: self.inbox,
            p.AGENT_APPROVE: self.approve,
            p.APPROVALS_LIST: self.approvals,
            **McpApi(lambda: self.sup.deps.mcp).handlers(),
            **AdminApi(self).handlers(),
            **TransferApi(self).handlers(),
        }

    # ------------------------------------------------------------ helpers

    def _refusals(self) -> AbstractContextManager[None]:
        return _refusals()

    async def _record(self, ref: str) -> AgentRecord:
        try:
            return await self.db.resolve(ref)
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

    def _info(self, record: AgentRecord, short: str) -> R.AgentInfo:
        actor = self.sup.actor_of(record.uuid)
        provider = actor.provider if actor else record.provider
        model = actor.model if actor else record.model
        perms = self.sup.deps.permissions
        chain = actor.policy if actor else parse_chain(record.policy)
        return {
            "uuid": record.uuid,
            "short": short,
            "name": record.name,
            "parent": record.parent_uuid,
            "provider": provider,
            "model": model,
            "thinking_level": actor.thinking_level if actor else record.thinking_level,
            "can_think": self._can_think(provider, model),
            "next_model": None if actor is None else _next_model(actor),
            "system_prompt": actor.system_prompt if actor else record.system_prompt,
            "status": "running" if actor else record.status,
            "state": actor.state if actor else None,
            "current_turn": actor.current_turn if actor else None,
            "queued": actor.queued if actor else 0,
            "created_at": _stamp(record.created_at),
            "ended_at": None if record.ended_at is None else _stamp(record.ended_at),
            "cwd": str(actor.cwd) if actor else record.cwd,
            "policy": perms.names(chain),
            "yolo": perms.is_yolo(chain),
            "mcp": agent_servers(self.sup, record, actor is not None),
        }

    # ------------------------------------------------------------ daemon

    async def status(self, conn: Connection, params: P.NoParams) -> R.Status:
        # from memory: status is what scripts poll, it must not wait on the database
        return {
            "version": __version__,
            "pid": os.getpid(),
            "started_at": datetime.fromtimestamp(self.info.started_at, UTC).isoformat(),
            "uptime": round(time.time() - self.info.started_at, 3),
            "socket": self.info.socket,
            "database": self.info.database,
            "agents": {"running": self.sup.running_count, "dead": self.sup.dead_count},
            "connections": self.info.connections(),
            "default_model": self.info.default_model,
            "max_line_bytes": self.info.max_line_bytes,
            "protocol_version": p.PROTOCOL_VERSION,
        }

    async def shutdown(self, conn: Connection, params: P.NoParams) -> R.Ok:
        self.info.shutdown()
        return {"ok": True}

    async def reload(self, conn: Connection, params: P.NoParams) -> R.Ok:
        refused = self.info.reload()
        if refused is not None:
            raise p.RpcError(p.REFUSED, f"reload refused, the running config is kept: {refused}")
        return {"ok": True}

    async def models(self, conn: Connection, params: P.ModelsList) -> list[R.ModelRow]:
        if params.provider is not None and params.provider not in self.catalog.providers:
            known = ", ".join(self.catalog.providers)
            raise p.RpcError(
                p.REFUSED, f"unknown provider {params.provider!r} (providers: {known})"
            )
        return [model_row(m, self.catalog) for m in self.catalog.models_of(params.provider)]

    async def providers(self, conn: Connection, params: P.NoParams) -> list[R.ProviderRow]:
        out: list[R.ProviderRow] = []
        for entry in self.catalog.providers.values():
            settings = self.info.settings(entry.name)
            out.append(
                {
                    "name": entry.name,
                    "label": entry.label,
                    "api": settings.api,
                    "base_url": settings.base_url,
                    "key_env": list(entry.key_env),
                    "key_set": bool(settings.api_key) or not entry.key_env,
                }
            )
        return out

    async def check_provider(self, conn: Connection, params: P.ProvidersCheck) -> R.ProviderCheck:
        if params.provider not in self.catalog.providers:
            raise p.RpcError(p.REFUSED, f"unknown provider {params.provider!r}")
        settings = self.info.settings(params.provider)
        name = params.provider
        if settings.key_env and not settings.api_key:
            return {
                "provider": name,
                "ok": False,
                "error": f"no API key: set {' or '.join(settings.key_env)}",
            }
        try:
            async with httpx.AsyncClient(timeout=5) as client:
                r = await client.get(settings.base_url)
            return {"provider": name, "ok": True, "status": r.status_code}
        except httpx.HTTPError as e:
            return {
                "provider": name,
                "ok": False,
                "error": f"{settings.base_url} did not answer: {type(e).__name__}",
            }

    # ------------------------------------------------------------ agents

    async def create(self, conn: Connection, params: P.Create) -> R.Created:
        with _refusals():
            record, resolved, turn = await self.sup.create(
                model=params.model or self.info.default_model,
                name=params.name,
                system=params.system,
                prompt=params.prompt,
                cwd=params.cwd,
                policy=params.policy,
                mcp=params.mcp,
            )
        info = await self._described(record)
        created: R.Created = {"agent": info, "model": _model_info(resolved), "turn": turn}
        return await self._created(created, params.wait)

    async def list(self, conn: Connection, params: P.ListAgents) -> list[R.ListedAgent]:
        records = await self.db.call(
            self.db.store.list_agents, include_dead=params.include_dead, include_hidden=False
        )
        totals = await self.db.usage_totals()
        active = await self.db.call(self.db.store.last_active, None)
        shorts = await self.db.short_refs([r.uuid for r in records])
        out: list[R.ListedAgent] = []
        for r in records:
            t = totals.get(r.uuid)
            usage: R.UsageBrief = (
                {
                    "turns": t.turns,
                    "calls": t.calls,
                    "input_tokens": t.input_tokens,
                    "output_tokens": t.output_tokens,
                    "cost_usd": t.cost_usd,
                }
                if t is not None
                else {
                    "turns": 0,
                    "calls": 0,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cost_usd": 0.0,
                }
            )
            out.append(
                {
                    **self._info(r, shorts[r.uuid]),
                    "usage": usage,
                    "last_active_at": _stamp(active.get(r.uuid, r.created_at)),
                }
            )
        return out

    async def show(self, conn: Connection, params: P.AgentRef) -> R.ShownAgent:
        record = await self._record(params.agent)
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
                "error": _plain(last.error),
            }
        )
        return {
            **(await self._described(record)),
            "usage": _plain(report.total),
            "last_turn": last_turn,
            "context": await context_of(self.sup, record.uuid),
            "last_active_at": _stamp(active.get(record.uuid, record.created_at)),
        }

    async def prompt(self, conn: Connection, params: P.Prompt) -> R.Queued | R.TurnOutcome:
        actor = await self._actor(params.agent)
        with _refusals():
            turn, position = await self.sup.prompt(actor, params.text)
        if not params.wait:
            return {"turn": turn, "position": position}
        result = await self._outcome(actor.uuid, turn)
        if result["status"] == "error":
            raise p.RpcError(p.TURN_FAILED, f"the turn ended in error: {result['error']}", result)
        return result

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
            "error": _plain(ended.error),
            "usage": _tokens(ended.usage),
            "cost_usd": ended.cost_usd,
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

    async def subscribe(self, conn: Connection, params: P.Subscribe) -> R.Subscribed:
        actor = await self._actor(params.agent)
        if params.from_seq is not None and params.from_seq < 1:
            raise p.RpcError(p.INVALID_PARAMS, "from_seq: must be 1 or more")
        next_seq = actor.log.next_seq
        from_seq = params.from_seq if params.from_seq is not None else next_seq
        return {"subscription": conn.subscribe(actor.log, from_seq), "next_seq": next_seq}

    async def unsubscribe(self, conn: Connection, params: P.Unsubscribe) -> R.Ok:
        return {"ok": conn.unsubscribe(params.subscription)}

    async def cancel(self, conn: Connection, params: P.Cancel) -> R.Cancelled:
        actor = await self._actor(params.agent)
        return {"cancelled": actor.cancel(at_boundary=params.at_boundary)}

    async def kill(self, conn: Connection, params: P.AgentRef) -> R.Killed:
        record = await self._record(params.agent)
        if self.sup.actor_of(record.uuid) is None:
            raise p.RpcError(p.REFUSED, f"agent {record.name} ({record.uuid}) is already dead")
        with _refusals():
            killed = await self.sup.kill(record.uuid)
        return {"killed": killed}

    async def fork(self, conn: Connection, params: P.Fork) -> R.Created:
        record = await self._record(params.agent)
        with _refusals():
            child, resolved, turn = await self.sup.fork(
                record.uuid,
                model=params.model,
                at_message=params.at,
                name=params.name,
                prompt=params.prompt,
                cwd=params.cwd,
                policy=params.policy,
                mcp=params.mcp,
            )
        info = await self._described(child)
        created: R.Created = {"agent": info, "model": _model_info(resolved), "turn": turn}
        return await self._created(created, params.wait)

    async def set_model(self, conn: Connection, params: P.SetModel) -> R.ModelInfo:
        actor = await self._actor(params.agent)
        with _refusals():
            resolved = await self.sup.switch_model(actor.uuid, params.model, queue=params.queue)
        return _model_info(resolved)

    async def set_system(self, conn: Connection, params: P.SetSystem) -> R.Ok:
        actor = await self._actor(params.agent)
        with _refusals():
            await self.sup.set_system(actor.uuid, params.text)
        return {"ok": True}

    async def history(self, conn: Connection, params: P.History) -> R.History:
        return await read_history(self, self.catalog, params)

    async def usage(self, conn: Connection, params: P.Usage) -> R.UsageReport | R.AllUsage:
        if params.agent is None:
            records = await self.db.list_agents(include_dead=True)
            roots = [r.uuid for r in records if r.parent_uuid is None]
            reports = await self.db.usage_of_trees(roots)
            return {"agents": len(records), "roots": [_plain(r) for r in reports]}
        record = await self._record(params.agent)
        report: R.UsageReport = _plain(
            await self.db.usage(record.uuid, descendants=params.descendants)
        )
        return report

    async def _history_op(self, ref: str, kind: P.HistoryOp, label: str | None) -> R.MessageId:
        actor = await self._actor(ref)
        with _refusals():
            row = await self.sup.history_op(actor.uuid, kind, label)
        return {"message_id": row}

    async def clear(self, conn: Connection, params: P.AgentRef) -> R.MessageId:
        return await self._history_op(params.agent, "clear", None)

    async def mark(self, conn: Connection, params: P.Label) -> R.MessageId:
        return await self._history_op(params.agent, "mark", params.label)

    async def rewind(self, conn: Connection, params: P.Label) -> R.MessageId:
        return await self._history_op(params.agent, "rewind", params.label)

    async def compact(self, conn: Connection, params: P.Compact) -> R.Compacted:
        # long (the summary calls): the connection serves its other requests meanwhile
        actor = await self._actor(params.agent)
        with _refusals():
            outcome = await self.sup.compact(actor.uuid, keep_turns=params.keep)
        return compacted(outcome)

    async def mail_send(self, conn: Connection, params: P.MailSend) -> R.MailId:
        sender = None
        if params.from_ is not None:
            sender = (await self._record(params.from_)).uuid
        target = await self._actor(params.to)
        with _refusals():
            mail_id = await self.sup.send_mail(sender, target.uuid, params.text)
        return {"id": mail_id}

    async def inbox(self, conn: Connection, params: P.Inbox) -> builtins.list[R.Mail]:
        record = await self._record(params.agent)
        mail = await self.db.inbox(record.uuid, unread=params.unread)
        return [
            {
                "id": m.id,
                "from": m.from_uuid,
                "to": m.to_uuid,
                "body": m.body,
                "created_at": _stamp(m.created_at),
                "read_at": None if m.read_at is None else _stamp(m.read_at),
            }
            for m in mail
        ]

    # ------------------------------------------------------------ approvals

    async def approve(self, conn: Connection, params: P.Approve) -> R.Approved:
        with _refusals():
            try:
                record = await self.sup.approve(
                    params.approval,
                    params.decision,
                    remember=params.remember,
                    reason=params.reason,
                    by=_client(conn),
                )
            except NoSuchApproval:
                raise p.RpcError(
                    p.INVALID_PARAMS, f"approval: no approval has the id {params.approval!r}"
                ) from None
        return {"approval": record.id, "agent": record.agent_uuid, "decision": params.decision}

    async def approvals(
        self, conn: Connection, params: P.ApprovalsList
    ) -> builtins.list[R.Approval]:
        uuid = None if params.agent is None else (await self._record(params.agent)).uuid
        return [
            {
                "approval": a.id,
                "agent": a.agent_uuid,
                "agent_name": a.agent_name,
                "turn": a.turn,
                "tool": a.tool,
                "arguments": a.arguments,
                "rule": a.rule,
                "policy": a.policy,
                "created_at": _stamp(a.created_at),
            }
            for a in await self.sup.pending_approvals(uuid)
        ]


def _client(conn: Connection) -> str:
    """Who answered, for history: the client's process id when the socket tells it."""
    try:
        raw = conn.stream.socket.getsockopt(  # type: ignore[attr-defined]
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
        )
        return f"client pid {struct.unpack('3i', raw)[0]}"
    except (AttributeError, OSError):
        return f"connection {conn.id}"
