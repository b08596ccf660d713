"""``ikictl models --offline``: the model catalog read locally (needs msgspec,
so it is imported only by this rare path)."""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from daemon.results import ModelRow


def catalog_models(provider: str | None = None) -> list[ModelRow]:
    """The daemon's ``models.list`` rows, built by the same ``model_row``."""
    from daemon.rows import model_row
    from providers.catalog import default_catalog

    catalog = default_catalog()
    if provider and provider not in catalog.providers:
        from ikictl._errors import UsageError

        raise UsageError(
            f"unknown provider {provider!r} (providers: {', '.join(catalog.providers)})"
        )
    return [model_row(m, catalog) for m in catalog.models_of(provider)]
