"""Map the user's thinking level (none/low/med/high) onto a model's own scale.

Budget ranges take min + 1/3, 2/3, 3/3 of (max - min); effort and level scales
take their nearest names; ``none`` on a model that cannot stop thinking maps to
its minimum and says so.
"""

from __future__ import annotations

import msgspec

from .catalog import ThinkingProfile
from .types import ThinkingLevel

_WORD = {"none": "none", "low": "low", "med": "medium", "high": "high"}
_STEP = {"low": 1, "med": 2, "high": 3}
# Names that mean "off" on an effort scale, never picked for low/med/high.
_OFF_NAMES = ("none",)


class ThinkingMapping(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The concrete thinking parameters for one model at one level.

    ``supported`` is false when the model cannot think at the asked level at
    all; adapters then send no thinking parameter. ``enabled`` says whether
    the request turns thinking on. Exactly one of ``budget``, ``effort`` and
    ``level_name`` is set when the provider takes a parameter.
    """

    level: ThinkingLevel
    kind: str
    supported: bool = True
    enabled: bool = False
    budget: int | None = None
    effort: str | None = None
    level_name: str | None = None
    warning: str | None = None
    description: str = ""


def _fmt(n: int) -> str:
    return f"{n:,}"


def budget_for(minimum: int, maximum: int, level: ThinkingLevel) -> int:
    """min + k/3 of (max - min) for low/med/high (k = 1, 2, 3)."""
    return minimum + round(_STEP[level] * (maximum - minimum) / 3)


def _nearest(levels: list[str], level: ThinkingLevel) -> str:
    """The scale's name for low/med/high: its own word when it has it, else the
    name nearest the level's place on the scale, kept between the words it does
    have so the mapping never runs backwards (low <= med <= high)."""
    scale = [name for name in levels if name not in _OFF_NAMES]
    anchors = {
        lv: scale.index(name)
        for lv, names in (("low", ("low",)), ("med", ("medium", "med")), ("high", ("high",)))
        for name in names
        if name in scale
    }
    if level in anchors:
        return scale[anchors[level]]
    order = ["low", "med", "high"]
    i = order.index(level)
    lo = max((anchors[o] for o in order[:i] if o in anchors), default=0)
    hi = min((anchors[o] for o in order[i + 1 :] if o in anchors), default=len(scale) - 1)
    # ties go to the higher name: asking for more never silently gets less
    target = _STEP[level] / 3 * (len(scale) - 1)
    best = min(range(len(scale) - 1, -1, -1), key=lambda k: abs(k - target))
    return scale[min(max(best, lo), hi)]


def _lowest(levels: list[str]) -> str:
    return next(name for name in levels if name not in _OFF_NAMES)


def map_thinking(
    profile: ThinkingProfile, level: ThinkingLevel, *, model: str = "this model"
) -> ThinkingMapping:
    kind = profile.kind
    if kind == "none":
        if level == "none":
            return ThinkingMapping(level=level, kind=kind, description="Thinking: none")
        return ThinkingMapping(
            level=level,
            kind=kind,
            supported=False,
            warning="Thinking not supported by this model (ignored)",
            description="Thinking: not supported by this model",
        )

    if kind == "always":
        warning = (
            f"{model} always thinks and takes no setting for how much"
            if level != "none"
            else f"{model} cannot turn thinking off"
        )
        return ThinkingMapping(
            level=level,
            kind=kind,
            enabled=True,
            warning=warning,
            description="Thinking: always on (not adjustable)",
        )

    if kind == "budget":
        lo, hi = profile.min or 0, profile.max or 0
        if level == "none":
            if profile.can_disable:
                return ThinkingMapping(
                    level=level, kind=kind, budget=0, description="Thinking: disabled"
                )
            return ThinkingMapping(
                level=level,
                kind=kind,
                enabled=True,
                budget=lo,
                warning=(
                    f"{model} cannot turn thinking off; using its minimum budget of "
                    f"{_fmt(lo)} tokens"
                ),
                description=f"Thinking: minimum ({_fmt(lo)} token budget - cannot be turned off)",
            )
        budget = budget_for(lo, hi, level)
        return ThinkingMapping(
            level=level,
            kind=kind,
            enabled=True,
            budget=budget,
            description=f"Thinking: enabled ({_fmt(budget)} token budget - {_WORD[level]})",
        )

    levels = profile.levels or []
    if not levels:
        raise ValueError(f"thinking profile of kind {kind!r} for {model} lists no levels")
    noun = "level" if kind == "level" else "effort"

    def named(name: str, warning: str | None = None, enabled: bool = True) -> ThinkingMapping:
        what = "adaptive, " if kind == "adaptive" else ""
        state = "enabled" if enabled else "disabled"
        return ThinkingMapping(
            level=level,
            kind=kind,
            enabled=enabled,
            effort=None if kind == "level" else name,
            level_name=name if kind == "level" else None,
            warning=warning,
            description=f"Thinking: {state} ({what}{noun} {name})",
        )

    if level == "none":
        if "none" in levels:
            return named("none", enabled=False)
        if profile.can_disable:
            return ThinkingMapping(level=level, kind=kind, description="Thinking: disabled")
        low = _lowest(levels)
        return named(
            low, warning=f"{model} cannot turn thinking off; using its lowest {noun} {low!r}"
        )
    return named(_nearest(levels, level))
