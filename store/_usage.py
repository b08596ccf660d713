"""Token totals and their cost from the catalog's prices."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
import sqlalchemy as sa

from providers.catalog import Catalog, Prices

from ._agents import subtree
from ._base import StoreBase
from ._schema import message_usage
from ._types import UsageReport, UsageTotals

TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "thinking_tokens",
    "cached_tokens",
    "cache_write_tokens",
)


def usage_query(uuids: sa.ColumnElement[Any] | Sequence[str]) -> sa.Select[Any]:
    """Sums per (provider, model) over the message_usage view for these agents."""
    v = message_usage.c
    turns = sa.func.sum(sa.case((v.kind == "assistant", 1), else_=0))
    return (
        sa.select(
            v.provider,
            v.model,
            turns.label("turns"),
            *(sa.func.sum(v[f]).label(f) for f in TOKEN_FIELDS),
        )
        .where(v.agent_uuid.in_(uuids))
        .group_by(v.provider, v.model)
    )


def usage_by_agent_query() -> sa.Select[Any]:
    """Sums per (agent, provider, model) over the whole message_usage view."""
    v = message_usage.c
    turns = sa.func.sum(sa.case((v.kind == "assistant", 1), else_=0))
    return sa.select(
        v.agent_uuid,
        v.provider,
        v.model,
        turns.label("turns"),
        *(sa.func.sum(v[f]).label(f) for f in TOKEN_FIELDS),
    ).group_by(v.agent_uuid, v.provider, v.model)


def cost(prices: Prices, t: UsageTotals) -> float:
    """US dollars for the totals, by the catalog's rule (Prices.cost)."""
    return prices.cost(
        input_tokens=t.input_tokens,
        output_tokens=t.output_tokens,
        cached_tokens=t.cached_tokens,
        cache_write_tokens=t.cache_write_tokens,
    )


def report(
    agent_uuid: str,
    *,
    descendants: bool,
    agents: int,
    rows: Iterable[Any],
    catalog: Catalog,
) -> UsageReport:
    by_model: list[UsageTotals] = []
    unpriced: list[str] = []
    for r in rows:
        provider = r.provider or "unknown"
        model = r.model or "unknown"
        t = UsageTotals(
            provider=provider,
            model=model,
            turns=int(r.turns or 0),
            **{f: int(getattr(r, f) or 0) for f in TOKEN_FIELDS},
        )
        entry = catalog.lookup(provider, model)
        if entry is not None and entry.prices is not None:
            t = msgspec.structs.replace(t, cost_usd=cost(entry.prices, t))
        elif t.input_tokens or t.output_tokens:
            unpriced.append(f"{provider}/{model}")
        by_model.append(t)
    by_model.sort(key=lambda t: (-(t.cost_usd or 0.0), -t.input_tokens - t.output_tokens))
    total = UsageTotals(
        provider=None,
        model=None,
        turns=sum(t.turns for t in by_model),
        **{f: sum(getattr(t, f) for t in by_model) for f in TOKEN_FIELDS},
        cost_usd=sum(t.cost_usd or 0.0 for t in by_model),
    )
    return UsageReport(
        agent_uuid=agent_uuid,
        descendants=descendants,
        agents=agents,
        by_model=by_model,
        total=total,
        unpriced=sorted(unpriced),
    )


class UsageMixin(StoreBase):
    """Store methods for token totals and cost (see the module doc)."""

    def usage_totals(self) -> dict[str, UsageTotals]:
        """Every agent's own totals (tokens and cost), in one query: for
        listings of many agents, where usage() per agent would be a query each."""
        with self._read() as conn:
            rows = conn.execute(usage_by_agent_query()).all()
        per_agent: dict[str, list[Any]] = {}
        for r in rows:
            per_agent.setdefault(r.agent_uuid, []).append(r)
        return {
            uuid: report(uuid, descendants=False, agents=1, rows=group, catalog=self.catalog).total
            for uuid, group in per_agent.items()
        }

    def usage(self, agent_uuid: str, *, descendants: bool = False) -> UsageReport:
        """Tokens and cost of the agent's own turns (not inherited ones), or of
        it and every descendant, per (provider, model as reported) and in total."""
        with self._read() as conn:
            self._agent_row(conn, agent_uuid)
            if descendants:
                sub = subtree(agent_uuid)
                uuids = list(conn.execute(sa.select(sub.c.uuid)).scalars())
            else:
                uuids = [agent_uuid]
            rows = conn.execute(usage_query(uuids)).all()
        return report(
            agent_uuid, descendants=descendants, agents=len(uuids), rows=rows, catalog=self.catalog
        )
