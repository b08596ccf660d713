"""The ``budget`` section of config.json: the daemon's daily spend limit and
the budget each new root agent gets when none is given (agents/budget.py
checks them before every model call). A provider's own daily limit is
``providers.NAME.daily_budget_usd`` (providers.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Protocol

import msgspec
from msgspec import Meta

from agents.deps import DailyLimits
from store import Budget

__all__ = ["BudgetConfig", "RootBudgetConfig", "daily_limits"]

# a budget of $0 or a limit of 0 would stop every call: leave it out instead
Dollars = Annotated[float, Meta(gt=0, le=1_000_000)]
Count = Annotated[int, Meta(ge=1, le=2**53)]


class RootBudgetConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``budget.root``: given to each root agent created without a budget."""

    max_cost_usd: Dollars | None = None
    max_tokens: Count | None = None
    max_turns: Count | None = None
    allow_unpriced: bool = False

    def budget(self) -> Budget | None:
        b = Budget(
            max_cost_usd=self.max_cost_usd,
            max_tokens=self.max_tokens,
            max_turns=self.max_turns,
            allow_unpriced=self.allow_unpriced,
        )
        return None if b.empty else b


class BudgetConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``budget``: spend limits of the whole daemon."""

    # US dollars every agent together may spend per UTC day; null: no limit
    daily_usd: Dollars | None = None
    root: RootBudgetConfig = msgspec.field(default_factory=RootBudgetConfig)


class HasBudget(Protocol):
    """What of a Config daily_limits reads (file.py imports this module)."""

    @property
    def budget(self) -> BudgetConfig: ...

    @property
    def providers(self) -> Mapping[str, Any]: ...


def daily_limits(config: HasBudget) -> DailyLimits:
    """What the agents check (agents/deps.py DailyLimits) from ``budget`` and
    each provider's ``daily_budget_usd``."""
    per_provider = {
        name: p.daily_budget_usd
        for name, p in config.providers.items()
        if isinstance(p.daily_budget_usd, float | int)
    }
    return DailyLimits(
        daemon_usd=config.budget.daily_usd,
        provider_usd=per_provider,
        root=config.budget.root.budget(),
    )
