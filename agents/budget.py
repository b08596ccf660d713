"""Budgets checked before each model call.

Before a call is made (a turn's, a compaction summary's), its worst case —
the request's input as the meter estimates it plus its output cap, at the
model's prices (``price``: the one pricing rule) — is checked against every
budget that applies: the agent's own and each ancestor's (store/_budgets.py:
each with the spend of its whole subtree, summed from the stored usage), the
provider's day (``providers.NAME.daily_budget_usd``) and the daemon's day
(``budget.daily_usd``; days are UTC). A call that could cross one is not
made: ``over_budget`` says which budget, what was spent and how to raise it.

Spend is read from the store each time, never kept here: after a restart or
a ``kill -9`` it is what was committed, each call counted once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog

from providers.types import Request, Usage
from store import BudgetState, Spent

from .pricing import price

if TYPE_CHECKING:
    from .deps import ActorDeps

__all__ = ["money", "over_budget", "refuse_call", "worst_case"]

log = structlog.get_logger("ikigai.agents")


def worst_case(
    deps: ActorDeps, provider: str, model: str, input_tokens: int, output: int
) -> float | None:
    """US dollars the call could cost at most; None: the model has no price."""
    usage = Usage(input_tokens=input_tokens, output_tokens=output)
    return price(deps.pool.catalog, provider, model, model, usage)


def money(x: float) -> str:
    return f"${x:.2f}" if abs(x) >= 0.01 or x == 0 else f"${x:.4f}"


def _whose(state: BudgetState) -> str:
    return f"the {'tree ' if state.root else ''}budget of agent {state.name} ({state.agent_uuid})"


def _check(
    state: BudgetState,
    *,
    cost: float | None,
    tokens: int,
    counted: bool,
    model: str,
) -> str | None:
    b, spent = state.budget, state.spent
    raise_it = f"ikictl budget {state.name}"
    if b.max_cost_usd is not None:
        if spent.unpriced and not b.allow_unpriced:
            return (
                f"{_whose(state)} is {money(b.max_cost_usd)}, and its spend is unknown: "
                f"{', '.join(spent.unpriced)} has no price (set one in config.json, or allow "
                f"it: `{raise_it} {b.max_cost_usd:.2f} --allow-unpriced`)"
            )
        if cost is None and not b.allow_unpriced:
            return (
                f"{_whose(state)} is {money(b.max_cost_usd)}, and {model} has no price: the "
                f"call's cost cannot be checked against it (allow it: "
                f"`{raise_it} {b.max_cost_usd:.2f} --allow-unpriced`)"
            )
        if cost is not None and spent.cost_usd + cost > b.max_cost_usd:
            more = max(b.max_cost_usd * 2, spent.cost_usd + cost)
            return (
                f"{_whose(state)} is {money(b.max_cost_usd)}; {money(spent.cost_usd)} is spent "
                f"and this call could cost up to {money(cost)}. Raise it: "
                f"`{raise_it} {more:.2f}`"
            )
    if b.max_tokens is not None and spent.tokens + tokens > b.max_tokens:
        return (
            f"{_whose(state)} is {b.max_tokens:,} tokens; {spent.tokens:,} are spent and this "
            f"call could take up to {tokens:,}. Raise it: "
            f"`{raise_it} --max-tokens {max(b.max_tokens * 2, spent.tokens + tokens)}`"
        )
    turns = spent.turns + (0 if counted else 1)
    if b.max_turns is not None and turns > b.max_turns:
        return (
            f"{_whose(state)} is {b.max_turns} turns; {spent.turns} were taken. Raise it: "
            f"`{raise_it} --max-turns {b.max_turns * 2}`"
        )
    return None


def _day(label: str, limit: float, spent: Spent, cost: float | None, key: str) -> str | None:
    if cost is None:
        # a model without a price is not charged to a day's budget (it cannot be),
        # but a day whose spend is already over it stops every call
        cost = 0.0
    if spent.cost_usd + cost > limit:
        return (
            f"{label} is {money(limit)} a day (UTC); {money(spent.cost_usd)} is spent today "
            f"and this call could cost up to {money(cost)}. Raise {key} in config.json "
            "(then `ikictl daemon reload`), or wait for tomorrow"
        )
    return None


async def over_budget(
    deps: ActorDeps,
    agent_uuid: str,
    *,
    provider: str,
    model: str,
    input_tokens: int,
    max_output_tokens: int,
    counted: bool,
) -> str | None:
    """Why this call may not be made (which budget, what was spent, how to
    raise it); None: it fits every budget. ``counted``: the turn already
    stored a call, so it is among the turns spent."""
    cost = worst_case(deps, provider, model, input_tokens, max_output_tokens)
    tokens = input_tokens + max_output_tokens
    db = deps.db
    known = db.store.budgets_known()
    if known is None:
        known = await db.call(db.store.any_budget)
    if known:
        for state in await db.call(db.store.budgets_of, agent_uuid):
            why = _check(
                state, cost=cost, tokens=tokens, counted=counted, model=f"{provider}/{model}"
            )
            if why is not None:
                return why
    daily = deps.config.daily
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    mine = daily.provider_usd.get(provider)
    if mine is not None:
        spent = await db.call(db.store.spend_since, today, provider=provider)
        why = _day(
            f"the daily budget of provider {provider}",
            mine,
            spent,
            cost,
            f"providers.{provider}.daily_budget_usd",
        )
        if why is not None:
            return why
    if daily.daemon_usd is not None:
        spent = await db.call(db.store.spend_since, today)
        return _day("the daemon's daily budget", daily.daemon_usd, spent, cost, "budget.daily_usd")
    return None


async def refuse_call(turn: Any, provider: str, model: str, request: Request) -> bool:
    """Whether the turn's next call (``request``, as _fitted sized it) must not
    be made; if so ``turn.over_budget`` says why (the turn ends
    ``budget_exceeded``). A call that already stored usage counts the turn."""
    host = turn.host
    why = await over_budget(
        turn.deps,
        host.uuid,
        provider=provider,
        model=model,
        input_tokens=host.meter.scale(provider, turn._raw),
        max_output_tokens=request.max_output_tokens,
        counted=turn.usage.total_tokens > 0,
    )
    if why is None:
        return False
    turn.over_budget = f"budget exceeded: {why}"
    log.info("model call refused by a budget", agent=host.uuid, turn=turn.id, reason=why)
    return True
