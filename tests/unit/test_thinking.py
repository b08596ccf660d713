from __future__ import annotations

import pytest

from providers.catalog import ThinkingProfile, default_catalog
from providers.thinking import budget_for, map_thinking

CATALOG = default_catalog()


def _profile(provider: str, model: str) -> ThinkingProfile:
    return CATALOG.lookup(provider, model).thinking


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("google", "gemini-2.5-pro", (11_008, 21_888, 32_768)),
        ("google", "gemini-2.5-flash", (8_192, 16_384, 24_576)),
        ("anthropic", "claude-sonnet-4-5", (22_016, 43_008, 64_000)),
    ],
)
def test_budget_rule_min_plus_thirds(provider, model, expected):
    got = tuple(map_thinking(_profile(provider, model), lv).budget for lv in ("low", "med", "high"))
    assert got == expected


def test_budget_rule_is_not_the_one_that_ignores_the_minimum():
    # 10,922 circulates for gemini-2.5-pro low; it ignores the 128 minimum.
    assert budget_for(128, 32_768, "low") == 11_008


def test_none_on_a_model_that_cannot_stop_thinking():
    m = map_thinking(_profile("google", "gemini-2.5-pro"), "none", model="gemini-2.5-pro")
    assert (m.enabled, m.budget) == (True, 128)
    assert m.warning == "gemini-2.5-pro cannot turn thinking off; using its minimum budget of 128 tokens"
    assert "cannot be turned off" in m.description


def test_none_disables_where_allowed():
    flash = map_thinking(_profile("google", "gemini-2.5-flash"), "none")
    assert (flash.enabled, flash.budget, flash.warning) == (False, 0, None)
    claude = map_thinking(_profile("anthropic", "claude-sonnet-4-5"), "none")
    assert (claude.enabled, claude.description) == (False, "Thinking: disabled")


def test_description_of_a_budget():
    m = map_thinking(_profile("anthropic", "claude-sonnet-4-5"), "med")
    assert m.description == "Thinking: enabled (43,008 token budget - medium)"


def test_effort_scale():
    o3 = _profile("openai", "o3")
    assert [map_thinking(o3, lv).effort for lv in ("low", "med", "high")] == ["low", "medium", "high"]
    none = map_thinking(o3, "none", model="o3")
    assert none.effort == "low" and "cannot turn thinking off" in none.warning
    gpt5 = map_thinking(_profile("openai", "gpt-5"), "none")
    assert gpt5.effort == "minimal"
    gpt51 = map_thinking(_profile("openai", "gpt-5.1"), "none")
    assert (gpt51.effort, gpt51.enabled, gpt51.warning) == ("none", False, None)


def test_level_scale_takes_nearest_names():
    pro = _profile("google", "gemini-3-pro-preview")
    assert [map_thinking(pro, lv).level_name for lv in ("low", "med", "high")] == ["low", "high", "high"]
    flash = _profile("google", "gemini-3-flash-preview")
    assert [map_thinking(flash, lv).level_name for lv in ("none", "low", "med", "high")] == [
        "minimal", "low", "medium", "high",
    ]


def test_nearest_names_never_run_backwards():
    # a scale whose own words start at "high": low/med must not land above high
    p = ThinkingProfile(kind="effort", levels=["high", "max"])
    assert [map_thinking(p, lv).effort for lv in ("low", "med", "high")] == ["high", "high", "high"]


def test_adaptive_effort():
    p = _profile("anthropic", "claude-opus-4-6")
    m = map_thinking(p, "high")
    assert (m.kind, m.effort, m.enabled) == ("adaptive", "high", True)
    assert m.description == "Thinking: enabled (adaptive, effort high)"
    assert map_thinking(p, "none").enabled is False


def test_model_that_cannot_think():
    p = _profile("openai", "gpt-4o")
    m = map_thinking(p, "high")
    assert (m.supported, m.enabled) == (False, False)
    assert m.warning == "Thinking not supported by this model (ignored)"
    assert map_thinking(p, "none").supported is True


def test_always_thinking_model():
    m = map_thinking(_profile("deepseek", "deepseek-reasoner"), "low", model="deepseek-reasoner")
    assert m.enabled and "always thinks" in m.warning
