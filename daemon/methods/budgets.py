"""``agent.set_budget``, and the ``budget`` object ``agent.show`` and
``agent.usage`` carry: the budgets in force on an agent (its own, then each
ancestor's) with the spend of each one's subtree (store/_budgets.py). The
checks before each model call are agents/budget.py's. See docs/protocol.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

import protocol as p
from daemon.methods.refusals import refusals
from daemon.methods.shapes import stamp
from protocol import params as P
from protocol import results as R
from store import Budget, BudgetState, check_budget

if TYPE_CHECKING:
    from agents.store import AsyncStore
    from daemon.methods.shapes import ApiHost
    from daemon.server import Connection, Handler


def to_budget(limits: P.BudgetLimits | None) -> Budget | None:
    """The store's Budget for a method's ``budget`` param (msgspec checked its
    bounds); -32602 naming the field for anything the store would refuse."""
    if limits is None:
        return None
    budget = Budget(
        max_cost_usd=limits.max_cost_usd,
        max_tokens=limits.max_tokens,
        max_turns=limits.max_turns,
        allow_unpriced=limits.allow_unpriced,
    )
    try:
        check_budget(budget)
    except ValueError as e:
        raise p.RpcError(p.INVALID_PARAMS, f"invalid params: budget.{e}") from None
    return budget


def budget_line(s: BudgetState) -> R.BudgetLine:
    b = s.budget
    return {
        "agent": s.agent_uuid,
        "name": s.name,
        "tree": s.root,
        "max_cost_usd": b.max_cost_usd,
        "max_tokens": b.max_tokens,
        "max_turns": b.max_turns,
        "allow_unpriced": b.allow_unpriced,
        "spent_usd": s.spent.cost_usd,
        "unpriced": list(s.spent.unpriced),
        "spent_tokens": s.spent.tokens,
        "spent_turns": s.spent.turns,
        "set_at": stamp(s.set_at),
    }


async def budget_info(db: AsyncStore, uuid: str) -> R.BudgetInfo:
    states = await db.call(db.store.budgets_of, uuid)
    return {"budgets": [budget_line(s) for s in states]}


class BudgetsApi:
    """Set, change or clear an agent's budget while it runs."""

    def __init__(self, host: ApiHost) -> None:
        self.host = host
        self.db = host.db

    def handlers(self) -> dict[str, Handler]:
        return {p.AGENT_SET_BUDGET: self.set_budget}

    async def set_budget(self, conn: Connection, params: P.SetBudget) -> R.BudgetInfo:
        record = await self.host._record(params.agent)
        if params.clear and params.budget is not None:
            raise p.RpcError(p.INVALID_PARAMS, "invalid params: give budget or clear, not both")
        budget = None if params.clear else to_budget(params.budget)
        with refusals():
            states = await self.db.call(self.db.store.set_budget, record.uuid, budget)
        # nothing else to tell: the next model call of the tree reads it from the store
        return {"budgets": [budget_line(s) for s in states]}
