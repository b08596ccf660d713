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
    the shipped catalog with the config's providers (custom ones, api pins and
    default models) as the daemon builds it."""
    from protocol.rows import model_row

    catalog = configured_catalog()
    if provider and provider not in catalog.providers:
        from ikictl._errors import UsageError

        raise UsageError(
            f"unknown provider {provider!r} (providers: {', '.join(catalog.providers)})"
        )
    return [model_row(m, catalog) for m in catalog.models_of(provider)]


_APIS = ("chat", "responses", "messages", "generate_content")


def configured_catalog(config_file: Path | None = None) -> Catalog:
    """The shipped catalog and config.json's providers, read tolerantly with
    the standard library (daemon.config needs the agents package): an entry the
    daemon would refuse is left out, the daemon names the fault itself."""
    import json
    import os

    from protocol.paths import resolve_paths
    from providers.catalog import ProviderEntry, load_catalog
    from providers.modelspec import ModelSpecError, parse_model_spec

    catalog = load_catalog()
    try:
        path = config_file or resolve_paths(os.environ).config_file
        data = json.loads(path.read_bytes() or b"{}")
    except (OSError, ValueError, RecursionError):
        return catalog
    providers = data.get("providers") if isinstance(data, dict) else None
    if not isinstance(providers, dict):
        return catalog
    for name, pc in providers.items():
        if not isinstance(pc, dict) or not name or "/" in name:
            continue
        api, url = pc.get("api"), pc.get("base_url")
        if api not in _APIS:
            api = None
        if name not in catalog.providers:
            if api is None or not isinstance(url, str) or not url.startswith("http"):
                continue
            catalog.add_provider(
                ProviderEntry(
                    name=name, label=name, api=api, base_url=url.rstrip("/"), slash_models=True
                )
            )
        elif api is not None:
            catalog.pin_api(name, api)
    for name, pc in providers.items():
        model = pc.get("default_model") if isinstance(pc, dict) else None
        if isinstance(model, str) and name in catalog.providers:
            try:
                spec = parse_model_spec(f"{name}/{model}", catalog)
            except ModelSpecError:
                continue
            catalog.add_model(spec.provider, spec.model)
    return catalog
