"""``ikictl models --offline``: the model catalog read locally (needs msgspec,
so it is imported only by this rare path)."""

from __future__ import annotations

from typing import Any


def catalog_models(provider: str | None = None) -> list[dict[str, Any]]:
    """Rows shaped like the daemon's ``models.list`` answer."""
    from providers.catalog import default_catalog
    from providers.thinking import map_thinking

    catalog = default_catalog()
    if provider and provider not in catalog.providers:
        from ikictl._errors import UsageError

        raise UsageError(f"unknown provider {provider!r} (providers: {', '.join(catalog.providers)})")
    return [
        {
            "provider": m.provider,
            "model": m.id,
            "aliases": m.aliases,
            "api": m.api or catalog.providers[m.provider].api,
            "context_window": m.context_window,
            "max_output_tokens": m.max_output_tokens,
            "thinking": {
                lv: map_thinking(m.thinking, lv, model=m.id).description
                for lv in ("none", "low", "med", "high")
            },
            "prices": None
            if m.prices is None
            else {"input": m.prices.input, "output": m.prices.output, "cached_input": m.prices.cached_input},
        }
        for m in catalog.models_of(provider)
    ]
