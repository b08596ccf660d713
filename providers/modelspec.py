"""Parse and resolve the user's model syntax: ``[PROVIDER/]MODEL[/THINKING]``.

Examples: ``claude-sonnet-4-5/med``, ``o3-mini/high``, ``gpt-4o/none``,
``anthropic/claude-opus-4-1``, ``openrouter/anthropic/claude-sonnet-4.5/high``.
"""

from __future__ import annotations

import msgspec

from .catalog import Catalog, ModelEntry, WireApi, default_catalog
from .thinking import ThinkingMapping, map_thinking
from .types import THINKING_LEVELS, ThinkingLevel

_LEVEL_ALIASES = {"medium": "med", "off": "none"}
_USAGE = "write MODEL, MODEL/THINKING or PROVIDER/MODEL/THINKING (THINKING: none, low, med, high)"


class ModelSpecError(ValueError):
    """The model text cannot be understood; the message says what and how to fix it."""


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    model: str
    thinking: ThinkingLevel | None = None  # None: keep the current level
    explicit_provider: bool = False


class ResolvedModel(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    provider_label: str
    model: str  # the name sent to the provider
    known: bool  # found in the catalog
    entry: ModelEntry
    api: WireApi
    thinking: ThinkingMapping
    warnings: list[str]

    @property
    def description(self) -> str:
        """One line for people: 'Anthropic claude-sonnet-4-5 / Thinking: enabled (...)'."""
        return f"{self.provider_label} {self.model} / {self.thinking.description}"


def _level(word: str) -> ThinkingLevel | None:
    word = _LEVEL_ALIASES.get(word.lower(), word.lower())
    for level in THINKING_LEVELS:
        if level == word:
            return level
    return None


def parse_model_spec(text: str, catalog: Catalog | None = None) -> ModelSpec:
    catalog = catalog or default_catalog()
    if not isinstance(text, str) or not text.strip():
        raise ModelSpecError(f"the model is empty: {_USAGE}")
    text = text.strip()
    parts = text.split("/")
    if any(not p.strip() for p in parts):
        raise ModelSpecError(f"{text!r} has an empty part between slashes: {_USAGE}")

    provider: str | None = None
    if len(parts) > 1 and parts[0] in catalog.providers:
        provider, parts = parts[0], parts[1:]
    explicit = provider is not None

    thinking: ThinkingLevel | None = None
    if len(parts) > 1:
        thinking = _level(parts[-1])
        if thinking is not None:
            parts = parts[:-1]

    slash_ok = provider is not None and catalog.providers[provider].slash_models
    if len(parts) > 1 and not slash_ok:
        if len(parts) == 2 and thinking is None:
            known = ", ".join(catalog.providers)
            raise ModelSpecError(
                f"{text!r}: {parts[1]!r} is not a thinking level (none, low, med, high)"
                + ("" if explicit else f" and {parts[0]!r} is not a provider ({known})")
            )
        raise ModelSpecError(f"{text!r} has too many parts: {_USAGE}")
    model = "/".join(parts)

    if provider is None:
        provider = catalog.infer_provider(model)
        if provider is None:
            raise ModelSpecError(
                f"cannot tell which provider serves {model!r}: write PROVIDER/{model} "
                f"(providers: {', '.join(catalog.providers)})"
            )
    return ModelSpec(provider=provider, model=model, thinking=thinking, explicit_provider=explicit)


def resolve_model(
    spec: str | ModelSpec,
    *,
    catalog: Catalog | None = None,
    current_thinking: ThinkingLevel = "none",
) -> ResolvedModel:
    """Resolve a model text to its provider, catalog entry and thinking parameters."""
    catalog = catalog or default_catalog()
    if isinstance(spec, str):
        spec = parse_model_spec(spec, catalog)
    if spec.provider not in catalog.providers:
        raise ModelSpecError(
            f"unknown provider {spec.provider!r} (providers: {', '.join(catalog.providers)})"
        )
    entry, known = catalog.entry_or_default(spec.provider, spec.model)
    level = spec.thinking if spec.thinking is not None else current_thinking
    mapping = map_thinking(entry.thinking, level, model=spec.model)
    warnings = []
    if not known:
        warnings.append(
            f"{spec.model!r} is not in the catalog: assuming {entry.context_window:,} tokens of "
            f"context and {entry.max_output_tokens:,} of output"
        )
    if mapping.warning:
        warnings.append(mapping.warning)
    provider = catalog.providers[spec.provider]
    return ResolvedModel(
        provider=spec.provider,
        provider_label=provider.label,
        model=spec.model,
        known=known,
        entry=entry,
        api=entry.api or provider.api,
        thinking=mapping,
        warnings=warnings,
    )
