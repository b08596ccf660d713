"""The one pricing rule of a model call, shared by the turn's cost line, the
compaction's and the budgets' worst case (agents/budget.py)."""

from __future__ import annotations

from providers.catalog import Catalog
from providers.types import Usage

__all__ = ["price"]


def price(
    catalog: Catalog, provider: str, reported: str, requested: str | None, usage: Usage
) -> float | None:
    """The one pricing rule (docs/configuration.md "Usage and cost", as
    store/_usage.py): the reported model's price if the catalog knows it,
    else the requested model's, else unknown (None, never 0)."""
    entry = catalog.lookup(provider, reported) if reported else None
    if entry is None and requested:
        entry = catalog.lookup(provider, requested)
    if entry is None or entry.prices is None:
        return None
    return entry.prices.cost(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=usage.cached_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
