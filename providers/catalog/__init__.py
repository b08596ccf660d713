"""The model catalog: data files shipped in this package, loaded once.

Each ``*.json`` file beside this module decodes as a ``CatalogFile``. The
catalog answers: which provider serves a model, through which wire API, with
what limits, thinking profile and prices. Unknown models pass through with the
provider's conservative ``default_model``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, NamedTuple

import msgspec

from ._schema import (
    Capabilities,
    CatalogFile,
    ModelEntry,
    Prices,
    ProviderEntry,
    ThinkingProfile,
    WireApi,
)

__all__ = [
    "Capabilities",
    "Catalog",
    "CatalogError",
    "LimitSource",
    "ModelEntry",
    "ModelLimits",
    "Prices",
    "ProviderEntry",
    "ThinkingProfile",
    "WireApi",
    "default_catalog",
    "load_catalog",
]

_DATA = Path(__file__).parent
# dated snapshot suffixes: -20250929, -2024-08-06
_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")
_FALLBACK_MODEL = ModelEntry(id="", context_window=128_000, max_output_tokens=4096)


class CatalogError(ValueError):
    """A catalog file that cannot be read, with the file and the reason."""


LimitSource = Literal["catalog", "config", "default"]


class ModelLimits(NamedTuple):
    """How much a model reads and writes, and who says so: the catalog's
    data, the user's config, or the conservative default for a model the
    catalog does not know."""

    context_window: int
    max_output_tokens: int
    source: LimitSource


class Catalog:
    def __init__(self, files: Iterable[tuple[str, CatalogFile]]) -> None:
        self.providers: dict[str, ProviderEntry] = {}
        self.models: dict[str, ModelEntry] = {}
        self._names: dict[str, ModelEntry] = {}  # "provider/name" -> entry
        self._bare: dict[str, ModelEntry] = {}  # name -> entry of the first provider that has it
        self.sources: dict[str, str] = {}
        self._added: list[ModelEntry] = []  # models the config names (add_model)
        self._configured: set[str] = set()  # "provider/id" of entries set_limits changed
        for origin, f in files:
            for p in f.providers:
                if p.name in self.providers:
                    raise CatalogError(f"{origin}: provider {p.name!r} is defined twice")
                self.providers[p.name] = p
            for key, text in f.sources.items():
                self.sources[f"{Path(origin).stem}:{key}"] = text
            for m in f.models:
                if not m.provider:
                    if f.provider is None:
                        raise CatalogError(f"{origin}: model {m.id!r} names no provider")
                    m = msgspec.structs.replace(m, provider=f.provider)
                if m.source is not None and m.source not in f.sources:
                    raise CatalogError(
                        f"{origin}: model {m.id!r} cites unknown source {m.source!r}"
                    )
                self.models[m.id] = m
                for name in (m.id, *m.aliases):
                    key = f"{m.provider}/{name}"
                    if key in self._names and self._names[key] is not m:
                        raise CatalogError(f"{origin}: model name {name!r} is used twice")
                    self._names[key] = m
                    self._bare.setdefault(name, m)
        for m in self.models.values():
            if m.provider not in self.providers:
                raise CatalogError(f"model {m.id!r} names unknown provider {m.provider!r}")

    def add_provider(self, entry: ProviderEntry) -> None:
        """Add or replace a provider (custom OpenAI-compatible ones come from config)."""
        self.providers[entry.name] = entry

    def add_model(self, provider: str, model: str) -> None:
        """A model the config names for a provider the catalog has no entry for
        (a custom provider's default_model): listed by models_of, found by
        lookup, with the provider's conservative default limits and no price."""
        if self.lookup(provider, model) is not None:
            return
        entry, _ = self.entry_or_default(provider, model)
        self._names[f"{provider}/{model}"] = entry
        self._added.append(entry)

    def set_limits(
        self,
        provider: str,
        model: str,
        *,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        """The config's limits for a model: a catalog model's are replaced (its
        aliases and dated snapshots share them), an unknown model is added
        with them, as add_model does, over its provider's default."""
        old = self.lookup(provider, model)
        base = old if old is not None else self.entry_or_default(provider, model)[0]
        changes: dict[str, int] = {}
        if context_window is not None:
            changes["context_window"] = context_window
        if max_output_tokens is not None:
            changes["max_output_tokens"] = max_output_tokens
        new = msgspec.structs.replace(base, **changes)
        self._configured.add(f"{provider}/{new.id}")
        if old is None:
            self._names[f"{provider}/{model}"] = new
            self._added.append(new)
            return
        self._swap({id(old): new})

    def _swap(self, new: dict[int, ModelEntry]) -> None:
        """Put new entries in place of old ones (keyed by the old one's id())
        everywhere the catalog holds them."""
        for names in (self.models, self._names, self._bare):
            for key, m in names.items():
                if id(m) in new:
                    names[key] = new[id(m)]
        self._added = [new.get(id(m), m) for m in self._added]

    def limits(self, provider: str, model: str) -> ModelLimits:
        """The window and output limit of a model, with their source."""
        entry, known = self.entry_or_default(provider, model)
        source: LimitSource = "catalog" if known else "default"
        if known and f"{provider}/{entry.id}" in self._configured:
            source = "config"
        return ModelLimits(entry.context_window, entry.max_output_tokens, source)

    def pin_api(self, provider: str, api: WireApi) -> None:
        """Every model of ``provider`` goes through ``api`` (a config pin): it
        wins over each model's own choice, so the models lose theirs."""
        p = self.providers[provider]
        dm = p.default_model
        if dm is not None and dm.api is not None:
            dm = msgspec.structs.replace(dm, api=None)
        self.providers[provider] = msgspec.structs.replace(p, api=api, default_model=dm)
        new: dict[int, ModelEntry] = {}
        for key, m in self.models.items():
            if m.provider == provider and m.api is not None:
                new[id(m)] = self.models[key] = msgspec.structs.replace(m, api=None)
        # the name maps hold the same entry objects: swap them there too
        for names in (self._names, self._bare):
            for key, m in names.items():
                if id(m) in new:
                    names[key] = new[id(m)]

    def infer_provider(self, model: str) -> str | None:
        """The provider a bare model name belongs to, or None if nothing claims it.

        A name in the catalog belongs to its provider (llama-3.3-70b-versatile
        is Groq's); otherwise the longest matching name prefix wins
        (claude- -> anthropic, llama- -> meta).
        """
        bare = _DATE_SUFFIX.sub("", model)
        for name in (model, bare):
            entry = self._bare.get(name)
            if entry is not None:
                return entry.provider
        best: tuple[int, str] | None = None
        for p in self.providers.values():
            for prefix in p.model_prefixes:
                if model.startswith(prefix) and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), p.name)
        return best[1] if best else None

    def lookup(self, provider: str, model: str) -> ModelEntry | None:
        """The catalog entry for a model of a provider (dated snapshots match their family)."""
        entry = self._names.get(f"{provider}/{model}")
        if entry is None:
            bare = _DATE_SUFFIX.sub("", model)
            if bare != model:
                entry = self._names.get(f"{provider}/{bare}")
        return entry

    def entry_or_default(self, provider: str, model: str) -> tuple[ModelEntry, bool]:
        """(entry, known): an unknown model gets its provider's conservative default."""
        entry = self.lookup(provider, model)
        if entry is not None:
            return entry, True
        p = self.providers.get(provider)
        base = p.default_model if p is not None and p.default_model is not None else _FALLBACK_MODEL
        return msgspec.structs.replace(base, id=model, provider=provider, aliases=[]), False

    def wire_api(self, provider: str, model: str) -> WireApi:
        entry, _ = self.entry_or_default(provider, model)
        if entry.api is not None:
            return entry.api
        return self.providers[provider].api

    def models_of(self, provider: str | None = None) -> list[ModelEntry]:
        every = [*self.models.values(), *self._added]
        return [m for m in every if provider is None or m.provider == provider]


def _decode(path: Path) -> CatalogFile:
    try:
        return msgspec.json.decode(path.read_bytes(), type=CatalogFile)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise CatalogError(f"catalog file {path} is not valid: {e}") from None
    except OSError as e:
        raise CatalogError(f"catalog file {path} cannot be read: {e.strerror}") from None


def load_catalog(paths: Iterable[Path] | None = None) -> Catalog:
    """Load catalog files; by default every ``*.json`` shipped in this package."""
    files = sorted(_DATA.glob("*.json")) if paths is None else list(paths)
    return Catalog((str(p), _decode(p)) for p in files)


@functools.cache
def default_catalog() -> Catalog:
    return load_catalog()
