"""The history methods: ``agent.history``, ``agent.usage``, ``agent.clear``,
``agent.mark``, ``agent.rewind`` and ``agent.compact``.

``agent.history``: the raw rows of an agent's lineage, a page at a time;
with ``blocks``, each row's message as blocks and what the lineage tells of
it (daemon/methods/blocks.py). See docs/protocol.md, "History blocks"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import protocol as p
from daemon.methods._context import compacted
from daemon.methods.blocks import lineage_facts, row_extras
from daemon.methods.budgets import budget_info
from daemon.methods.refusals import refusals
from daemon.methods.shapes import Family, plain, stamp

if TYPE_CHECKING:
    from daemon.methods.shapes import ApiHost
    from daemon.server import Connection, Handler
    from protocol import params as P
    from protocol import results as R
    from providers.catalog import Catalog


async def read_history(host: ApiHost, catalog: Catalog, params: P.History) -> R.History:
    record = await host._record(params.agent)
    if params.limit is not None and params.limit < 1:
        raise p.RpcError(p.INVALID_PARAMS, "limit: must be 1 or more")
    limit = params.limit
    # the attached files' bytes stay unread: each row's data.files describes them
    page = None if limit is None else limit + 1
    history = host.db.store.history
    rows = await host.db.call(history, record.uuid, limit=page, before=params.before, files=False)
    more = limit is not None and len(rows) > limit
    if more:
        rows = rows[1:]
    messages: list[R.HistoryRow] = [
        {
            "id": r.id,
            "agent": r.agent_uuid,
            "kind": r.kind,
            "content": r.content,
            "data": r.data,
            "created_at": stamp(r.created_at),
        }
        for r in rows
    ]
    if not params.blocks:
        return {"messages": messages, "more": more}
    # a row's turn and its status may lie outside the page: the pass reads the
    # whole lineage's outline (ids, kinds, the data of a few kinds)
    outline: list[Any]
    if limit is None and params.before is None:
        outline = [(r.id, r.agent_uuid, r.kind, r.data) for r in rows]
    else:
        outline = await host.db.call(host.db.store.history_outline, record.uuid)
    actor = host.sup.actor_of(record.uuid)
    now = (actor.provider, actor.model) if actor else (record.provider, record.model)
    facts = lineage_facts(
        outline,
        running=actor.current_turn if actor else None,
        models_now={record.uuid: now},
    )
    for out, r in zip(messages, rows, strict=True):
        extras = row_extras(
            kind=r.kind,
            agent=r.agent_uuid,
            data=r.data,
            message=r.message,
            facts=facts.get(r.id),
            asked_agent=record.uuid,
            signatures=params.signatures,
            catalog=catalog,
        )
        out.update(cast("R.HistoryRow", extras))
    return {"messages": messages, "more": more}


class HistoryApi(Family):
    """Read an agent's history and usage; clear, mark, rewind and compact its context."""

    def handlers(self) -> dict[str, Handler]:
        return {
            p.AGENT_HISTORY: self.history,
            p.AGENT_USAGE: self.usage,
            p.AGENT_CLEAR: self.clear,
            p.AGENT_MARK: self.mark,
            p.AGENT_REWIND: self.rewind,
            p.AGENT_COMPACT: self.compact,
        }

    async def history(self, conn: Connection, params: P.History) -> R.History:
        return await read_history(self.host, self.host.catalog, params)

    async def usage(self, conn: Connection, params: P.Usage) -> R.UsageReport | R.AllUsage:
        if params.agent is None:
            records = await self.db.list_agents(include_dead=True)
            roots = [r.uuid for r in records if r.parent_uuid is None]
            reports = await self.db.usage_of_trees(roots)
            return {"agents": len(records), "roots": [plain(r) for r in reports]}
        record = await self.host._record(params.agent)
        report: R.UsageReport = plain(
            await self.db.usage(record.uuid, descendants=params.descendants)
        )
        report["budget"] = await budget_info(self.db, record.uuid)
        return report

    async def _history_op(self, ref: str, kind: P.HistoryOp, label: str | None) -> R.MessageId:
        actor = await self.host._actor(ref)
        with refusals():
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
        actor = await self.host._actor(params.agent)
        with refusals():
            outcome = await self.sup.compact(actor.uuid, keep_turns=params.keep)
        return compacted(outcome)
