"""The context part of config.json: the ``context`` section (when and how an
agent's context is compacted) and each model's limits
(``providers.NAME.models.MODEL``: context_window, max_output_tokens), checked
beyond their types. The catalog takes the limits in
providers.configured.configured_catalog (daemon.config.providers.build_catalog);
file.py checks the file, this is its context section, kept apart so each
stays small."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Protocol

import msgspec
from msgspec import Meta

from providers.catalog import Catalog
from providers.limits import output_cap
from providers.modelspec import ModelSpecError, parse_model_spec

__all__ = ["ContextConfig", "ModelLimitsConfig", "context_fault"]

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


def context_fault(
    context: ContextConfig,
    providers: Mapping[str, _HasModels],
    catalog: Catalog,
    *,
    max_output_tokens: int,
) -> str | None:
    """What is wrong with the context section and the model limits, naming
    the field; None when nothing is. ``catalog`` has the limits applied;
    ``max_output_tokens`` is the top-level cap of every request."""
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
            fault = _output_fault(at, limits, catalog, spec.provider, spec.model, max_output_tokens)
            if fault is not None:
                return fault
    return None


def _output_fault(
    at: str, limits: ModelLimitsConfig, catalog: Catalog, provider: str, model: str, top: int
) -> str | None:
    """The cap a request of this model asks for, judged as agents/turn.py
    sends it: the smaller of the top-level max_output_tokens and the model's
    own (an API's minimum, 16 at most, is below any window allowed here).
    The output room is taken from the window: a cap that fills it leaves
    nothing to read."""
    effective = catalog.limits(provider, model)
    own = effective.max_output_tokens
    cap = output_cap(catalog.wire_api(provider, model), min(top, own))
    if cap < effective.context_window:
        return None
    hint = f"; set {at}.max_output_tokens below it"
    if limits.max_output_tokens is not None and own <= top:
        source, hint = f"{at}.max_output_tokens", ""
    elif top <= own:
        source = "the top-level max_output_tokens"
    else:
        source = "the model's own output limit"
    return (
        f"{at}: max_output_tokens ({cap:,}, from {source}) must be below "
        f"context_window ({effective.context_window:,}): the answer's room is taken "
        f"from the window{hint}"
    )
