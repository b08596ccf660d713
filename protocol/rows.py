"""Result rows built from the catalog, once for both sides.

The daemon answers ``models.list`` with these rows and ``ikictl models
--offline`` prints the same rows from the local catalog, so the two cannot
drift apart. Imports the catalog and msgspec, never trio, httpx or SQLAlchemy:
the offline path of ikictl loads it.
"""

from __future__ import annotations

from providers.thinking import map_thinking

TYPE_CHECKING = False  # typing is for the checker only, like protocol
if TYPE_CHECKING:
    from protocol.results import ModelRow, Prices
    from providers.catalog import Catalog, ModelEntry
    from providers.types import ThinkingLevel

LEVELS: tuple[ThinkingLevel, ...] = ("none", "low", "med", "high")


def model_row(m: ModelEntry, catalog: Catalog) -> ModelRow:
    """One ``models.list`` row: ``m`` as the catalog describes it."""
    prices: Prices | None = None
    if m.prices is not None:
        p = m.prices
        prices = {"input": p.input, "output": p.output, "cached_input": p.cached_input}
    return {
        "provider": m.provider,
        "model": m.id,
        "aliases": list(m.aliases),  # the row is the caller's, the catalog stays as it is
        "api": m.api or catalog.providers[m.provider].api,
        "context_window": m.context_window,
        "max_output_tokens": m.max_output_tokens,
        "thinking": {lv: map_thinking(m.thinking, lv, model=m.id).description for lv in LEVELS},
        "prices": prices,
    }
