"""The context part of config.json: the ``context`` section (when and how an
agent's context is compacted) and each model's limits
(``providers.NAME.models.MODEL``), checked beyond their types and applied to
the catalog. config.py owns the file; this is its context section, kept apart
so each stays small."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Annotated, Protocol

import msgspec
from msgspec import Meta

from providers.catalog import Catalog
from providers.modelspec import ModelSpecError, parse_model_spec

__all__ = ["ContextConfig", "ModelLimitsConfig", "apply_limits", "context_fault"]

# far above any model, and every count stays a 64-bit integer
_MOST = 1 << 30


class ModelLimitsConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``providers.NAME.models.MODEL``: the model's limits, over the catalog's
    (or the conservative default of a model the catalog does not know)."""

    # below a few hundred tokens no system prompt and question fit
    context_window: Annotated[int, Meta(ge=256, le=_MOST)] | None = None
    max_output_tokens: Annotated[int, Meta(ge=1, le=_MOST)] | None = None


class ContextConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``context``: when and how an agent's context is compacted."""

    # share of (window - output reserve) a request may fill before the oldest
    # part of the context is summarized; above 0.95 the estimate's error could
    # overflow the window before compaction starts
    compact_at: Annotated[float, Meta(ge=0.1, le=0.95)] = 0.8
    summary_model: str | None = None  # MODEL[/THINKING] that summarizes; None: the agent's own
    # a tool result larger than this share of the window is cut in the replay
    tool_result_share: Annotated[float, Meta(ge=0.01, le=1.0)] = 0.25


class _HasModels(Protocol):
    @property
    def models(self) -> dict[str, ModelLimitsConfig]: ...


def apply_limits(providers: Mapping[str, _HasModels], catalog: Catalog) -> None:
    """Every model's configured limits into ``catalog`` (Catalog.set_limits)."""
    for name, pc in providers.items():
        for model, limits in pc.models.items():
            if limits.context_window is None and limits.max_output_tokens is None:
                continue  # nothing set: the catalog's figures stand
            with contextlib.suppress(ModelSpecError):  # context_fault names the fault
                spec = parse_model_spec(f"{name}/{model}", catalog)
                catalog.set_limits(
                    spec.provider,
                    spec.model,
                    context_window=limits.context_window,
                    max_output_tokens=limits.max_output_tokens,
                )


def context_fault(
    context: ContextConfig, providers: Mapping[str, _HasModels], catalog: Catalog
) -> str | None:
    """What is wrong with the context section and the model limits, naming
    the field; None when nothing is. ``catalog`` has the limits applied."""
    if context.summary_model is not None:
        try:
            parse_model_spec(context.summary_model, catalog)
        except ModelSpecError as e:
            return f"context.summary_model: {e}"
    for name, pc in providers.items():
        for model, limits in pc.models.items():
            at = f"providers.{name}.models.{model}"
            try:
                spec = parse_model_spec(f"{name}/{model}", catalog)
            except ModelSpecError as e:
                return f"{at}: {e}"
            if spec.thinking is not None:
                return f"{at}: name the model without a thinking level"
            effective = catalog.limits(spec.provider, spec.model)
            if effective.max_output_tokens >= effective.context_window:
                # the output room is taken from the window: none would be left to read
                given = limits.max_output_tokens is not None
                field = "max_output_tokens" if given else "context_window"
                return (
                    f"{at}.{field}: the output limit ({effective.max_output_tokens:,}) must be "
                    f"below the context window ({effective.context_window:,})"
                    + ("" if given else "; set max_output_tokens too")
                )
    return None
