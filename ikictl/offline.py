"""``ikictl models --offline``: the model catalog read locally (needs msgspec,
so it is imported only by this rare path)."""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from pathlib import Path

    from protocol.results import ModelRow
    from providers.catalog import Catalog


def catalog_models(provider: str | None = None) -> list[ModelRow]:
    """The daemon's ``models.list`` rows, built by the same ``model_row``, from
    the shipped catalog with the config's providers (custom ones, overrides,
    api pins, default models and model limits) as the daemon builds it."""
    from protocol.rows import model_row

    catalog = configured_catalog()
    if provider and provider not in catalog.providers:
        from ikictl._errors import UsageError

        raise UsageError(
            f"unknown provider {provider!r} (providers: {', '.join(catalog.providers)})"
        )
    return [model_row(m, catalog) for m in catalog.models_of(provider)]


def configured_catalog(config_file: Path | None = None) -> Catalog:
    """The shipped catalog as config.json's ``providers`` section changes it,
    built by the daemon's own builder (providers.configured.configured_catalog):
    the file is read with the standard library, not checked (daemon.config
    needs the agents package), and an entry the daemon would refuse is left
    out; the daemon names the fault itself."""
    import json
    import os

    from protocol.paths import resolve_paths
    from providers.configured import configured_catalog as build

    try:
        path = config_file or resolve_paths(os.environ).config_file
        data = json.loads(path.read_bytes() or b"{}")
    except (OSError, ValueError, RecursionError):
        data = None
    providers = data.get("providers") if isinstance(data, dict) else None
    return build(providers if isinstance(providers, dict) else {})
