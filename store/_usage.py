"""Token totals and their cost from the catalog's prices.

One pricing rule (docs/configuration.md, "Usage and cost"), the same as the
turn's cost line (agents/turn.py ``_spend``):

- usage is attributed to the model the agent requested (its provider/model
  when the call was made, what ``ls`` shows), not to the raw name a server
  reports (``/models/x.gguf``); a call on another provider (a fallback) or
  reported as another catalog model is that model's;
- its price is the catalog entry of the reported model if the catalog knows
  it, else the requested model's, else unknown: ``cost_usd`` None, never 0;
- a turn is one prompt whatever number of model calls it made (``calls``).

The requested model of a row is not stored on it: it is the agent's model
in force then, read from the agent's model_switch rows (so history written
before this rule is attributed the same way).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
import sqlalchemy as sa

from providers.catalog import Catalog, ModelEntry, Prices

from ._agents import subtree
from ._base import StoreBase
from ._schema import agents as agents_table
from ._schema import message_usage, messages
from ._types import UsageReport, UsageTotals

TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "thinking_tokens",
    "cached_tokens",
    "cache_write_tokens",
)


def _numbered(uuids: Sequence[str] | None) -> Any:
    """Each message with its agent's switch count and prompt count up to it:
    the model in force (epoch) and the turn (turn_no) it belongs to."""
    m = messages.c

    def running_count(kind: str) -> Any:
        is_kind = sa.case((m.kind == kind, 1), else_=0)
        return sa.func.sum(is_kind).over(partition_by=m.agent_uuid, order_by=m.id)

    q = sa.select(
        m.id,
        running_count("model_switch").label("epoch"),
        running_count("user").label("turn_no"),
    ).where(m.kind.in_(("user", "model_switch", "assistant", "usage")))
    if uuids is not None:
        q = q.where(m.agent_uuid.in_(uuids))
    return q.subquery()


def usage_query(uuids: Sequence[str] | None, *, per_turn: bool = False) -> sa.Select[Any]:
    """Sums per (agent, epoch, provider, model as reported) for these agents
    (every agent when None), with the turns and the calls they hold; per turn
    too when ``per_turn`` (so a model's turns are counted once, see report)."""
    v = message_usage.c
    n = _numbered(uuids)
    keys = [v.agent_uuid, n.c.epoch, v.provider, v.model]
    if per_turn:
        keys.append(n.c.turn_no)
    return (
        sa.select(
            *keys,
            sa.func.count(sa.distinct(n.c.turn_no)).label("turns"),
            sa.func.sum(sa.case((v.kind == "assistant", 1), else_=0)).label("calls"),
            *(sa.func.sum(v[f]).label(f) for f in TOKEN_FIELDS),
        )
        .join(n, n.c.id == v.message_id)
        .group_by(*keys)
    )


def turns_query(uuids: Sequence[str] | None) -> sa.Select[Any]:
    """Turns per agent: prompts that made at least one model call."""
    v = message_usage.c
    n = _numbered(uuids)
    return (
        sa.select(v.agent_uuid, sa.func.count(sa.distinct(n.c.turn_no)).label("turns"))
        .join(n, n.c.id == v.message_id)
        .group_by(v.agent_uuid)
    )


def models_query(uuids: Sequence[str] | None) -> tuple[sa.Select[Any], sa.Select[Any]]:
    """The agents' model switches (data: from, to), oldest first; each agent's model now."""
    a, m = agents_table.c, messages.c
    now = sa.select(
        a.uuid.label("agent_uuid"),
        sa.literal(0).label("id"),
        a.provider,
        a.model,
        sa.null().label("data"),
    )
    switches = sa.select(
        m.agent_uuid, m.id, sa.null().label("provider"), sa.null().label("model"), m.data
    ).where(m.kind == "model_switch")
    if uuids is not None:
        now = now.where(a.uuid.in_(uuids))
        switches = switches.where(m.agent_uuid.in_(uuids))
    return switches.order_by(m.agent_uuid, m.id), now


def cost(prices: Prices, t: UsageTotals) -> float:
    """US dollars for the totals, by the catalog's rule (Prices.cost)."""
    return prices.cost(
        input_tokens=t.input_tokens,
        output_tokens=t.output_tokens,
        cached_tokens=t.cached_tokens,
        cache_write_tokens=t.cache_write_tokens,
    )


Model = tuple[str, str]  # (provider, model)


def _side(data: Any, side: str) -> Model | None:
    part = data.get(side) if isinstance(data, dict) else None
    if not isinstance(part, dict):
        return None
    provider, model = part.get("provider"), part.get("model")
    if isinstance(provider, str) and isinstance(model, str):
        return provider, model
    return None


def requested_models(now: Iterable[Any], switches: Iterable[Any]) -> dict[str, list[Model | None]]:
    """agent -> the model it requested in each epoch (0: before its first switch)."""
    out: dict[str, list[Model | None]] = {}
    for r in switches:
        epochs = out.setdefault(r.agent_uuid, [])
        if not epochs:
            epochs.append(_side(r.data, "from"))
        epochs.append(_side(r.data, "to"))
    for r in now:
        out.setdefault(r.agent_uuid, [(r.provider, r.model)])
    return out


def attribute(
    requested: Model | None, provider: str, model: str, catalog: Catalog
) -> tuple[Model, ModelEntry | None]:
    """(the model a row's usage is attributed to, the entry that prices it)."""
    reported = catalog.lookup(provider, model)
    if requested is not None and requested[0] == provider:
        asked = catalog.lookup(*requested)
        same = reported is not None and asked is not None and reported.id == asked.id
        if model == requested[1] or reported is None or same:
            return requested, reported or asked
    return (provider, model), reported


def report(
    agent_uuid: str,
    *,
    descendants: bool,
    agents: int,
    rows: Iterable[Any],
    turns: int,
    requested: dict[str, list[Model | None]],
    catalog: Catalog,
) -> UsageReport:
    by_key: dict[Model, UsageTotals] = {}
    # per_turn rows: the turns of a model, counted once when one turn reported
    # several raw names for it
    seen_turns: dict[Model, set[tuple[str, int]]] = {}
    for r in rows:
        provider = r.provider or "unknown"
        model = r.model or "unknown"
        epochs = requested.get(r.agent_uuid, [])
        epoch = int(r.epoch or 0)
        asked = epochs[epoch] if epoch < len(epochs) else None
        key, entry = attribute(asked, provider, model, catalog)
        t = UsageTotals(
            provider=key[0],
            model=key[1],
            turns=int(r.turns or 0),
            calls=int(r.calls or 0),
            **{f: int(getattr(r, f) or 0) for f in TOKEN_FIELDS},
        )
        t = msgspec.structs.replace(
            t, cost_usd=cost(entry.prices, t) if entry and entry.prices else None
        )
        seen = by_key.get(key)
        by_key[key] = t if seen is None else _add(seen, t)
        turn_no = getattr(r, "turn_no", None)
        if turn_no is not None:
            seen_turns.setdefault(key, set()).add((r.agent_uuid, int(turn_no)))
    for key, turns_of in seen_turns.items():
        by_key[key] = msgspec.structs.replace(by_key[key], turns=len(turns_of))
    by_model = list(by_key.values())
    unpriced = [
        f"{t.provider}/{t.model}"
        for t in by_model
        if t.cost_usd is None and (t.input_tokens or t.output_tokens)
    ]
    by_model.sort(key=lambda t: (-(t.cost_usd or 0.0), -t.input_tokens - t.output_tokens))
    total = UsageTotals(
        provider=None,
        model=None,
        turns=turns,
        calls=sum(t.calls for t in by_model),
        **{f: sum(getattr(t, f) for t in by_model) for f in TOKEN_FIELDS},
        # unknown, never a partial sum shown as if it were the whole
        cost_usd=None if unpriced else sum(t.cost_usd or 0.0 for t in by_model),
    )
    return UsageReport(
        agent_uuid=agent_uuid,
        descendants=descendants,
        agents=agents,
        by_model=by_model,
        total=total,
        unpriced=sorted(unpriced),
    )


Fetched = tuple[Sequence[Any], dict[str, int], dict[str, list[Model | None]]]


def fetch_totals(conn: sa.Connection, uuids: Sequence[str] | None) -> Fetched:
    """The rows own_totals needs for these agents (every agent when None).
    Not per turn whatever ``uuids`` is: an agent's totals are then the same
    whether it is asked about alone or with every other (store/_listing.py)."""
    q = usage_query(uuids)
    # in one order: each total sums its costs in the order of its rows
    rows = conn.execute(q.order_by(*q.selected_columns[:4])).all()
    turns = {r.agent_uuid: int(r.turns) for r in conn.execute(turns_query(uuids))}
    switches, now = models_query(uuids)
    return rows, turns, requested_models(conn.execute(now), conn.execute(switches))


def own_totals(fetched: Fetched, catalog: Catalog) -> dict[str, UsageTotals]:
    """Each agent's own totals, of the agents with usage rows in ``fetched``."""
    rows, turns, requested = fetched
    per_agent: dict[str, list[Any]] = {}
    for r in rows:
        per_agent.setdefault(r.agent_uuid, []).append(r)
    return {
        uuid: report(
            uuid,
            descendants=False,
            agents=1,
            rows=group,
            turns=turns.get(uuid, 0),
            requested=requested,
            catalog=catalog,
        ).total
        for uuid, group in per_agent.items()
    }


def _add(a: UsageTotals, b: UsageTotals) -> UsageTotals:
    dollars = None if a.cost_usd is None or b.cost_usd is None else a.cost_usd + b.cost_usd
    return msgspec.structs.replace(
        a,
        turns=a.turns + b.turns,
        calls=a.calls + b.calls,
        **{f: getattr(a, f) + getattr(b, f) for f in TOKEN_FIELDS},
        cost_usd=dollars,
    )


class UsageMixin(StoreBase):
    """Store methods for token totals and cost (see the module doc)."""

    def _usage_rows(
        self, conn: sa.Connection, uuids: Sequence[str] | None
    ) -> tuple[Sequence[Any], dict[str, int], dict[str, list[Model | None]]]:
        # every agent: only totals are wanted (their turns come from turns_query)
        rows = conn.execute(usage_query(uuids, per_turn=uuids is not None)).all()
        turns = {r.agent_uuid: int(r.turns) for r in conn.execute(turns_query(uuids))}
        switches, now = models_query(uuids)
        requested = requested_models(conn.execute(now), conn.execute(switches))
        return rows, turns, requested

    def usage_totals(self) -> dict[str, UsageTotals]:
        """Every agent's own totals (tokens and cost), in a few queries: for
        listings of many agents, where usage() per agent would be a query each."""
        with self._read() as conn:
            fetched = fetch_totals(conn, None)
        return own_totals(fetched, self.catalog)

    def usage(self, agent_uuid: str, *, descendants: bool = False) -> UsageReport:
        """Tokens and cost of the agent's own turns (not inherited ones), or of
        it and every descendant, per requested (provider, model) and in total."""
        with self._read() as conn:
            self._agent_row(conn, agent_uuid)
            if descendants:
                sub = subtree(agent_uuid)
                uuids = list(conn.execute(sa.select(sub.c.uuid)).scalars())
            else:
                uuids = [agent_uuid]
            rows, turns, requested = self._usage_rows(conn, uuids)
        return report(
            agent_uuid,
            descendants=descendants,
            agents=len(uuids),
            rows=rows,
            turns=sum(turns.values()),
            requested=requested,
            catalog=self.catalog,
        )
