"""The control methods: each takes a Connection and its decoded params and
returns a JSON-able result or raises RpcError. See docs/protocol.md."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from agents import AgentError, Supervisor
from agents.actor import Actor
from providers.catalog import Catalog
from providers.modelspec import ResolvedModel
from providers.thinking import map_thinking
from providers.types import Usage
from store import AgentNotFound, AgentRecord, AmbiguousAgent, StoreError

from . import params as P
from . import protocol as p
from ._version import __version__
from .control import Connection, Handler


@dataclass
class DaemonInfo:
    socket: str
    database: str
    started_at: float
    default_model: str
    connections: Callable[[], int]
    shutdown: Callable[[], None]
    reload: Callable[[], None]
    settings: Callable[[str], Any]  # provider name -> ProviderSettings


def _model_info(r: ResolvedModel) -> dict[str, Any]:
    return {
        "provider": r.provider,
        "model": r.model,
        "thinking_level": r.thinking.level,
        "description": r.description,
        "warnings": list(r.warnings),
    }


def _usage_dict(u: Usage) -> dict[str, int]:
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "thinking_tokens": u.thinking_tokens,
        "cached_tokens": u.cached_tokens,
    }


class Api:
    def __init__(self, sup: Supervisor, catalog: Catalog, info: DaemonInfo) -> None:
        self.sup = sup
        self.db = sup.db
        self.catalog = catalog
        self.info = info

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
            p.MAIL_SEND: self.mail_send,
            p.MAIL_INBOX: self.inbox,
        }

    # ------------------------------------------------------------ helpers

    async def _record(self, ref: str) -> AgentRecord:
        try:
            return await self.db.resolve(ref)
        except AmbiguousAgent as e:
            found = await self.db.call(self.db.store.find_agents, ref)
            raise p.RpcError(
                p.AMBIGUOUS_AGENT,
                str(e),
                {"candidates": [{"uuid": r.uuid, "name": r.name, "status": r.status} for r in found]},
            ) from None
        except AgentNotFound as e:
            raise p.RpcError(p.AGENT_NOT_FOUND, str(e)) from None

    async def _actor(self, ref: str) -> Actor:
        record = await self._record(ref)
        actor = self.sup.actors.get(record.uuid)
        if actor is None:
            raise p.RpcError(p.REFUSED, f"agent {record.name} ({record.uuid}) is dead; dead agents can be read, not run")
        return actor

    def _info(self, record: AgentRecord) -> dict[str, Any]:
        actor = self.sup.actors.get(record.uuid)
        alive = actor is not None
        return {
            "uuid": record.uuid,
            "name": record.name,
            "parent": record.parent_uuid,
            "provider": actor.provider if alive else record.provider,
            "model": actor.model if alive else record.model,
            "thinking_level": actor.thinking_level if alive else record.thinking_level,
            "system_prompt": actor.system_prompt if alive else record.system_prompt,
            "status": record.status if not alive else "running",
            "state": actor.state if alive else None,
            "current_turn": actor.current_turn if alive else None,
            "queued": actor.queued if alive else 0,
            "created_at": record.created_at,
            "ended_at": record.ended_at,
        }

    async def _guard(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a supervisor call, turning its refusals into protocol errors."""
        try:
            return await fn(*args, **kwargs)
        except AgentError as e:
            raise p.RpcError(p.REFUSED, str(e)) from None
        except (StoreError, ValueError) as e:
            raise p.RpcError(p.REFUSED, str(e)) from None

    # ------------------------------------------------------------ daemon

    async def status(self, conn: Connection, params: P.NoParams) -> dict[str, Any]:
        # from memory: status is what scripts poll, it must not wait on the database
        return {
            "version": __version__,
            "pid": os.getpid(),
            "started_at": datetime.fromtimestamp(self.info.started_at, UTC).isoformat(),
            "uptime": round(time.time() - self.info.started_at, 3),
            "socket": self.info.socket,
            "database": self.info.database,
            "agents": {"running": len(self.sup.actors), "dead": self.sup.dead_count},
            "connections": self.info.connections(),
            "default_model": self.info.default_model,
        }

    async def shutdown(self, conn: Connection, params: P.NoParams) -> dict[str, Any]:
        self.info.shutdown()
        return {"ok": True}

    async def reload(self, conn: Connection, params: P.NoParams) -> dict[str, Any]:
        self.info.reload()
        return {"ok": True}

    async def models(self, conn: Connection, params: P.ModelsList) -> list[dict[str, Any]]:
        if params.provider is not None and params.provider not in self.catalog.providers:
            raise p.RpcError(p.REFUSED, f"unknown provider {params.provider!r} (providers: {', '.join(self.catalog.providers)})")
        out = []
        for m in self.catalog.models_of(params.provider):
            out.append(
                {
                    "provider": m.provider,
                    "model": m.id,
                    "aliases": m.aliases,
                    "api": m.api or self.catalog.providers[m.provider].api,
                    "context_window": m.context_window,
                    "max_output_tokens": m.max_output_tokens,
                    "thinking": {lv: map_thinking(m.thinking, lv, model=m.id).description for lv in ("none", "low", "med", "high")},
                    "prices": None if m.prices is None else {"input": m.prices.input, "output": m.prices.output, "cached_input": m.prices.cached_input},
                }
            )
        return out

    async def providers(self, conn: Connection, params: P.NoParams) -> list[dict[str, Any]]:
        out = []
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

    async def check_provider(self, conn: Connection, params: P.ProvidersCheck) -> dict[str, Any]:
        if params.provider not in self.catalog.providers:
            raise p.RpcError(p.REFUSED, f"unknown provider {params.provider!r}")
        settings = self.info.settings(params.provider)
        if settings.key_env and not settings.api_key:
            return {"provider": params.provider, "ok": False, "error": f"no API key: set {' or '.join(settings.key_env)}"}
        try:
            async with httpx.AsyncClient(timeout=5) as client:
                r = await client.get(settings.base_url)
            return {"provider": params.provider, "ok": True, "status": r.status_code}
        except httpx.HTTPError as e:
            return {"provider": params.provider, "ok": False, "error": f"{settings.base_url} did not answer: {type(e).__name__}"}

    # ------------------------------------------------------------ agents

    async def create(self, conn: Connection, params: P.Create) -> dict[str, Any]:
        record, resolved, turn = await self._guard(
            self.sup.create,
            model=params.model or self.info.default_model,
            name=params.name,
            system=params.system,
            prompt=params.prompt,
        )
        result = {"agent": self._info(record), "model": _model_info(resolved), "turn": turn}
        return result

    async def list(self, conn: Connection, params: P.ListAgents) -> list[dict[str, Any]]:
        records = await self.db.list_agents(include_dead=params.include_dead)
        totals = await self.db.call(self.db.store.usage_totals)
        out = []
        for r in records:
            info = self._info(r)
            t = totals.get(r.uuid)
            info["usage"] = (
                {"input_tokens": t.input_tokens, "output_tokens": t.output_tokens, "cost_usd": t.cost_usd}
                if t is not None
                else {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
            )
            out.append(info)
        return out

    async def show(self, conn: Connection, params: P.AgentRef) -> dict[str, Any]:
        record = await self._record(params.agent)
        info = self._info(record)
        report = await self.db.call(self.db.store.usage, record.uuid)
        info["usage"] = report.total
        actor = self.sup.actors.get(record.uuid)
        last = actor.last_result if actor else None
        info["last_turn"] = (
            None if last is None else {"turn": last.turn, "status": last.status, "reply": last.reply, "error": last.error}
        )
        return info

    async def prompt(self, conn: Connection, params: P.Prompt) -> dict[str, Any]:
        actor = await self._actor(params.agent)
        turn, position = await self._guard(self._submit, actor, params.text)
        if not params.wait:
            return {"turn": turn, "position": position}
        # waits on the actor itself, not on a subscription: a burst that makes
        # subscribers lag cannot fail a waiting request
        ended = await actor.wait_turn(turn)
        if ended is None:
            raise p.RpcError(p.REFUSED, f"agent {actor.name} ended before the turn finished")
        result = {
            "turn": turn,
            "status": ended.status,
            "reply": ended.reply,
            "error": ended.error,
            "usage": _usage_dict(ended.usage),
            "cost_usd": ended.cost_usd,
        }
        if ended.status == "error":
            raise p.RpcError(p.TURN_FAILED, f"the turn ended in error: {ended.error}", result)
        return result

    async def _submit(self, actor: Actor, text: str) -> tuple[str, int]:
        return await self.sup.prompt(actor, text)

    async def subscribe(self, conn: Connection, params: P.Subscribe) -> dict[str, Any]:
        actor = await self._actor(params.agent)
        if params.from_seq is not None and params.from_seq < 1:
            raise p.RpcError(p.INVALID_PARAMS, "from_seq: must be 1 or more")
        sub = actor.log.subscribe(from_seq=params.from_seq)
        sid = conn.subscribe(actor.uuid, sub)
        return {"subscription": sid, "next_seq": actor.log.next_seq}

    async def unsubscribe(self, conn: Connection, params: P.Unsubscribe) -> dict[str, Any]:
        return {"ok": conn.unsubscribe(params.subscription)}

    async def cancel(self, conn: Connection, params: P.Cancel) -> dict[str, Any]:
        actor = await self._actor(params.agent)
        return {"cancelled": actor.cancel(at_boundary=params.at_boundary)}

    async def kill(self, conn: Connection, params: P.AgentRef) -> dict[str, Any]:
        record = await self._record(params.agent)
        if record.uuid not in self.sup.actors:
            raise p.RpcError(p.REFUSED, f"agent {record.name} ({record.uuid}) is already dead")
        killed = await self._guard(self.sup.kill, record.uuid)
        return {"killed": killed}

    async def fork(self, conn: Connection, params: P.Fork) -> dict[str, Any]:
        record = await self._record(params.agent)
        child, resolved, turn = await self._guard(
            self.sup.fork, record.uuid, model=params.model, at_message=params.at, name=params.name, prompt=params.prompt
        )
        return {"agent": self._info(child), "model": _model_info(resolved), "turn": turn}

    async def set_model(self, conn: Connection, params: P.SetModel) -> dict[str, Any]:
        actor = await self._actor(params.agent)
        resolved = await self._guard(self.sup.switch_model, actor.uuid, params.model, queue=params.queue)
        return _model_info(resolved)

    async def set_system(self, conn: Connection, params: P.SetSystem) -> dict[str, Any]:
        actor = await self._actor(params.agent)
        await self._guard(self.sup.set_system, actor.uuid, params.text)
        return {"ok": True}

    async def history(self, conn: Connection, params: P.History) -> dict[str, Any]:
        record = await self._record(params.agent)
        if params.limit is not None and params.limit < 1:
            raise p.RpcError(p.INVALID_PARAMS, "limit: must be 1 or more")
        limit = params.limit
        rows = await self.db.call(
            self.db.store.history, record.uuid, limit=None if limit is None else limit + 1, before=params.before
        )
        more = limit is not None and len(rows) > limit
        if more:
            rows = rows[1:]
        return {
            "messages": [
                {"id": r.id, "agent": r.agent_uuid, "kind": r.kind, "content": r.content, "data": r.data, "created_at": r.created_at}
                for r in rows
            ],
            "more": more,
        }

    async def usage(self, conn: Connection, params: P.Usage) -> Any:
        if params.agent is None:
            records = await self.db.list_agents(include_dead=True)
            roots = [r for r in records if r.parent_uuid is None]
            reports = await self.db.call(lambda: [self.db.store.usage(r.uuid, descendants=True) for r in roots])
            return {"agents": len(records), "roots": reports}
        record = await self._record(params.agent)
        return await self.db.call(self.db.store.usage, record.uuid, descendants=params.descendants)

    async def _history_op(self, ref: str, kind: str, label: str | None) -> dict[str, Any]:
        actor = await self._actor(ref)
        row = await self._guard(self.sup.history_op, actor.uuid, kind, label)
        return {"message_id": row}

    async def clear(self, conn: Connection, params: P.AgentRef) -> dict[str, Any]:
        return await self._history_op(params.agent, "clear", None)

    async def mark(self, conn: Connection, params: P.Label) -> dict[str, Any]:
        return await self._history_op(params.agent, "mark", params.label)

    async def rewind(self, conn: Connection, params: P.Label) -> dict[str, Any]:
        return await self._history_op(params.agent, "rewind", params.label)

    async def mail_send(self, conn: Connection, params: P.MailSend) -> dict[str, Any]:
        sender = None
        if params.from_ is not None:
            sender = (await self._record(params.from_)).uuid
        target = await self._actor(params.to)
        mail_id = await self._guard(self.sup.send_mail, sender, target.uuid, params.text)
        return {"id": mail_id}

    async def inbox(self, conn: Connection, params: P.Inbox) -> list[dict[str, Any]]:
        record = await self._record(params.agent)
        mail = await self.db.inbox(record.uuid, unread=params.unread)
        return [
            {"id": m.id, "from": m.from_uuid, "to": m.to_uuid, "body": m.body, "created_at": m.created_at, "read_at": m.read_at}
            for m in mail
        ]


