"""The catalog as config.json's ``providers`` section changes it, built once
for both readers: the daemon (its validated config turned back into JSON
shapes, daemon.config.providers.build_catalog) and ``ikictl models
--offline`` (the file as it is, unchecked), so the two list the same models.

Tolerant: a key of the wrong shape is passed over and an entry that cannot
be used (a custom provider without api or base_url) is skipped. The daemon's
validation refuses such a file naming the field, so on every file the
daemon accepts, nothing is passed over.

What a section sets, in the order the daemon applies it:

- ``providers.NAME``: a catalog provider's base_url, key_env (null: no key)
  and dialect replaced, its api pinned for every model; a name the catalog
  does not know is a custom provider on any wire API;
- ``providers.NAME.default_model``: the model is listed under the provider;
- ``providers.NAME.models.MODEL``: its context_window and max_output_tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

import msgspec

from .catalog import Catalog, ProviderEntry, WireApi, load_catalog
from .modelspec import ModelSpecError, parse_model_spec

__all__ = ["configured_catalog"]

_APIS: dict[str, WireApi] = {api: api for api in get_args(WireApi)}
_SCHEMES = ("http://", "https://")


def configured_catalog(providers_section: Mapping[str, Any]) -> Catalog:
    """A fresh catalog (never the cached default one) as config.json's
    ``providers`` section (JSON shapes: a Mapping of provider name to its
    object) changes it: overrides, custom providers, default models and
    per-model limits. Entries it cannot use are skipped."""
    catalog = load_catalog()
    configure(catalog, providers_section)
    return catalog


def configure(catalog: Catalog, section: Mapping[str, Any]) -> None:
    """Apply config.json's ``providers`` section (JSON shapes) to ``catalog``."""
    entries = {
        name: pc
        for name, pc in section.items()
        if isinstance(name, str) and name and "/" not in name and isinstance(pc, Mapping)
    }
    for name, pc in entries.items():
        _provider(catalog, name, pc)
    for name, pc in entries.items():
        named = _model_of(catalog, name, pc.get("default_model"))
        if named is not None:
            catalog.add_model(name, named[0])
    for name, pc in entries.items():
        models = pc.get("models")
        if not isinstance(models, Mapping):
            continue
        for text, limits in models.items():
            if not isinstance(limits, Mapping):
                continue
            window = _count(limits.get("context_window"))
            output = _count(limits.get("max_output_tokens"))
            named = _model_of(catalog, name, text)
            # a model named with a thinking level is refused by the daemon
            if named is None or named[1] or (window is None and output is None):
                continue
            catalog.set_limits(name, named[0], context_window=window, max_output_tokens=output)


def _provider(catalog: Catalog, name: str, pc: Mapping[str, Any]) -> None:
    given = pc.get("api")
    api = _APIS.get(given) if isinstance(given, str) else None
    url = pc.get("base_url")
    url = url.rstrip("/") if isinstance(url, str) and url.startswith(_SCHEMES) else None
    keys, dialect = _keys(pc), _dialect(pc)
    entry = catalog.providers.get(name)
    if entry is None:
        if api is None or url is None:
            return
        # the codec of the API sends its own auth header and appends its own
        # paths to base_url, as for the catalog's providers
        catalog.add_provider(
            ProviderEntry(
                name=name,
                label=name,
                api=api,
                base_url=url,
                key_env=keys or [],
                dialect=dialect or [],
                slash_models=True,
            )
        )
        return
    changes: dict[str, Any] = {}
    if url is not None:
        changes["base_url"] = url
    if keys is not None:
        changes["key_env"] = keys
    if dialect is not None:
        changes["dialect"] = dialect
    if changes:
        catalog.add_provider(msgspec.structs.replace(entry, **changes))
    if api is not None:
        # a pin wins over the catalog's per-model choice (gpt-5 is "responses")
        catalog.pin_api(name, api)


def _keys(pc: Mapping[str, Any]) -> list[str] | None:
    """The key variables; None: not given (the catalog's stand), [] for null:
    the service takes no key."""
    if "key_env" not in pc:
        return None
    value = pc["key_env"]
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _dialect(pc: Mapping[str, Any]) -> list[str] | None:
    value = pc.get("dialect")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(dict.fromkeys(value))
    return None


def _count(value: object) -> int | None:
    # bool is an int to Python, never a count to JSON
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def _model_of(catalog: Catalog, provider: str, text: object) -> tuple[str, bool] | None:
    """(model, named with a thinking level) as parse_model_spec reads
    ``PROVIDER/TEXT``; None where it refuses the text or reads another provider."""
    if not isinstance(text, str) or provider not in catalog.providers:
        return None
    try:
        spec = parse_model_spec(f"{provider}/{text}", catalog)
    except ModelSpecError:
        return None
    if spec.provider != provider:
        return None
    return spec.model, spec.thinking is not None
