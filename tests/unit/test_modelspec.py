from __future__ import annotations

import pytest

from providers.modelspec import ModelSpecError, parse_model_spec, resolve_model


@pytest.mark.parametrize(
    ("text", "provider", "model", "thinking"),
    [
        ("claude-sonnet-4-5/med", "anthropic", "claude-sonnet-4-5", "med"),
        ("o3-mini/high", "openai", "o3-mini", "high"),
        ("gemini-2.5-flash/low", "google", "gemini-2.5-flash", "low"),
        ("gpt-4o/none", "openai", "gpt-4o", "none"),
        ("gpt-4o", "openai", "gpt-4o", None),
        ("gpt-4o/medium", "openai", "gpt-4o", "med"),
        ("anthropic/claude-opus-4-1", "anthropic", "claude-opus-4-1", None),
        ("openrouter/anthropic/claude-sonnet-4.5/high", "openrouter", "anthropic/claude-sonnet-4.5", "high"),
        ("openrouter/anthropic/claude-sonnet-4.5", "openrouter", "anthropic/claude-sonnet-4.5", None),
        ("ollama/qwen3:8b/low", "ollama", "qwen3:8b", "low"),
        ("  grok-3-mini/HIGH ", "xai", "grok-3-mini", "high"),
    ],
)
def test_parse(text, provider, model, thinking):
    spec = parse_model_spec(text)
    assert (spec.provider, spec.model, spec.thinking) == (provider, model, thinking)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the model is empty"),
        ("   ", "the model is empty"),
        ("gpt-4o/ultra", "'ultra' is not a thinking level (none, low, med, high) and 'gpt-4o' is not a provider"),
        ("anthropic/claude-sonnet-4-5/ultra", "'ultra' is not a thinking level"),
        ("a/b/c/d", "has too many parts"),
        ("gpt-4o//high", "empty part between slashes"),
        ("/gpt-4o", "empty part between slashes"),
        ("mystery-model", "cannot tell which provider serves 'mystery-model': write PROVIDER/mystery-model"),
    ],
)
def test_parse_errors_say_what_is_wrong(text, message):
    with pytest.raises(ModelSpecError) as info:
        parse_model_spec(text)
    assert message in str(info.value)


def test_resolve_gives_concrete_parameters_and_description():
    r = resolve_model("claude-sonnet-4-5/med")
    assert (r.provider, r.model, r.api, r.known) == ("anthropic", "claude-sonnet-4-5", "messages", True)
    assert r.thinking.budget == 43_008
    assert r.description == "Anthropic claude-sonnet-4-5 / Thinking: enabled (43,008 token budget - medium)"
    assert r.warnings == []


def test_resolve_keeps_current_level_when_none_given():
    r = resolve_model("gemini-2.5-flash", current_thinking="high")
    assert (r.thinking.level, r.thinking.budget) == ("high", 24_576)


def test_resolve_unknown_model_passes_through_with_warning():
    r = resolve_model("openai/gpt-99-experimental/low")
    assert not r.known and r.model == "gpt-99-experimental"
    assert "not in the catalog" in r.warnings[0]


def test_resolve_thinking_not_supported():
    r = resolve_model("gpt-4o/high")
    assert r.thinking.supported is False
    assert r.warnings == ["Thinking not supported by this model (ignored)"]
    assert r.description == "OpenAI gpt-4o / Thinking: not supported by this model"
