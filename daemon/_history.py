"""``agent.history``: the raw rows of an agent's lineage, a page at a time;
with ``blocks``, each row's message as blocks and what the lineage tells of
it (daemon/_blocks.py). See docs/protocol.md, "History blocks"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from . import protocol as p
from ._blocks import lineage_facts, row_extras
from ._shapes import stamp

if TYPE_CHECKING:
    from providers.catalog import Catalog

    from . import params as P
    from . import results as R
    from ._shapes import ApiHost


async def read_history(host: ApiHost, catalog: Catalog, params: P.History) -> R.History:
    record = await host._record(params.agent)
    if params.limit is not None and params.limit < 1:
        raise p.RpcError(p.INVALID_PARAMS, "limit: must be 1 or more")
    limit = params.limit
    rows = await host.db.history(
        record.uuid, limit=None if limit is None else limit + 1, before=params.before
    )
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
