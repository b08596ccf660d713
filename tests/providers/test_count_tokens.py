"""The providers' own token counts: Anthropic count_tokens and Gemini countTokens.

Shapes from the API references: Anthropic ``POST /v1/messages/count_tokens``
takes model, messages, system, tools, tool_choice, thinking (and
output_config) and answers ``{"input_tokens": N}``; Gemini
``POST models/M:countTokens`` takes ``{"generateContentRequest": {...}}`` and
answers ``{"totalTokens": N, ...}``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from providers.anthropic.codec import AnthropicCodec
from providers.base import TokenCounter
from providers.google.codec import GeminiCodec
from providers.settings import settings_for
from providers.types import (
    Message,
    ProviderFailure,
    Request,
    TextBlock,
    ThinkingConfig,
    Tool,
    ToolChoice,
)

ANTHROPIC_KEY = "sk-ant-count-0123456789abcdef"
GEMINI_KEY = "AIzaCOUNT-gemini-0123456789"
# what the count_tokens endpoint takes (its API reference); anything else is refused
COUNT_FIELDS = {"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config"}
TOOLS = [
    Tool(name="read", description="Read a file", parameters={"type": "object", "properties": {"p": {"type": "string"}}}),
    Tool(name="ls"),
]


def anthropic() -> AnthropicCodec:
    return AnthropicCodec(settings_for("anthropic", env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY}))


def gemini() -> GeminiCodec:
    return GeminiCodec(settings_for("google", env={"GEMINI_API_KEY": GEMINI_KEY}))


def request(**kw: object) -> Request:
    base: dict[str, object] = {
        "model": "claude-sonnet-4-5",
        "system": [TextBlock(text="be brief")],
        "messages": [
            Message(role="user", content=[TextBlock(text="count me")]),
            Message(role="assistant", content=[TextBlock(text="one")]),
            Message(role="user", content=[TextBlock(text="and me")]),
        ],
        "tools": TOOLS,
    }
    base.update(kw)
    return Request(**base)  # type: ignore[arg-type]


def _strip_cache(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(v) for v in value]
    return value


def test_both_codecs_are_token_counters():
    assert isinstance(anthropic(), TokenCounter)
    assert isinstance(gemini(), TokenCounter)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"thinking": ThinkingConfig(level="high")},
        {"tool_choice": ToolChoice(mode="tool", name="read")},
        {"provider_data": {"temperature": 0.3, "top_k": 4, "stop_sequences": ["x"], "metadata": {"user_id": "u"}}},
        {"response_schema": {"type": "object", "properties": {"a": {"type": "string"}}}},
    ],
    ids=["plain", "thinking", "forced-tool", "sampling", "schema"],
)
def test_anthropic_count_is_the_message_body_less_what_only_generation_takes(kw):
    codec = anthropic()
    req = request(**kw)
    http = codec.encode_count_tokens(req)
    assert http.method == "POST"
    assert http.url == "https://api.anthropic.com/v1/messages/count_tokens"
    assert http.headers["x-api-key"] == ANTHROPIC_KEY
    assert http.headers["anthropic-version"]
    assert http.headers["content-type"] == "application/json"
    body = json.loads(http.body)
    assert set(body) <= COUNT_FIELDS
    # the same prompt the message request sends, without max_tokens, stream,
    # sampling, stop sequences, metadata and cache markers
    sent = json.loads(codec.encode(req, stream=True).body)
    expected = {k: v for k, v in _strip_cache(sent).items() if k in COUNT_FIELDS}
    assert body == expected
    assert body["messages"] and body["model"] == "claude-sonnet-4-5"


def test_gemini_count_wraps_the_generate_request():
    codec = gemini()
    req = request(model="gemini-2.5-flash")
    http = codec.encode_count_tokens(req)
    assert http.method == "POST"
    assert http.url.endswith("/models/gemini-2.5-flash:countTokens")
    assert http.headers["x-goog-api-key"] == GEMINI_KEY
    body = json.loads(http.body)
    assert set(body) == {"generateContentRequest"}
    inner = body["generateContentRequest"]
    assert inner["model"] == "models/gemini-2.5-flash"
    full = json.loads(codec.encode(req, stream=False).body)
    for key in ("contents", "systemInstruction", "tools"):
        assert inner[key] == full[key]
    assert "generationConfig" not in inner  # the count takes no output settings


def test_decode_the_documented_answers():
    assert anthropic().decode_count_tokens(b'{"input_tokens": 2095}') == 2095
    assert gemini().decode_count_tokens(
        b'{"totalTokens": 31, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 31}]}'
    ) == 31


@pytest.mark.parametrize(
    "body",
    [b"", b"<html>bad gateway</html>", b"[]", b'{"input_tokens": "12"}', b'{"input_tokens": -3}',
     b'{"input_tokens": 1.5}', b'{"input_tokens": true}', b'{"tokens": 12}', b'{"input_tokens": 99999999999999999999999}',
     b'{"input_tokens": 1', b"\xff\xfe\x00"],
)
def test_anthropic_malformed_count_is_a_clear_failure(body):
    with pytest.raises(ProviderFailure) as info:
        anthropic().decode_count_tokens(body)
    error = info.value.error
    assert error.category == "server"
    assert "count_tokens" in error.message
    assert error.provider == "anthropic"


@pytest.mark.parametrize("body", [b"{}", b'{"totalTokens": -5}', b'{"totalTokens": 1e30}', b'{"totalTokens": 99999999999999999999}'])
def test_gemini_count_without_a_sane_total_is_a_failure_not_zero(body):
    with pytest.raises(ProviderFailure) as info:
        gemini().decode_count_tokens(body)
    assert info.value.error.provider == "google"


def test_a_key_echoed_in_a_bad_count_answer_is_scrubbed():
    with pytest.raises(ProviderFailure) as info:
        anthropic().decode_count_tokens(b"<html>key " + ANTHROPIC_KEY.encode() + b"</html>")
    assert ANTHROPIC_KEY not in info.value.error.message


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_BODIES = st.one_of(
    st.binary(max_size=200),
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.sampled_from(["input_tokens", "totalTokens", "x"]), _JSON, max_size=3).map(
        lambda v: json.dumps(v).encode()
    ),
)


@settings(max_examples=400, deadline=None)
@given(body=_BODIES)
def test_hostile_count_answers_give_a_count_or_a_provider_failure(body):
    """Never another exception: a bad answer is a ProviderFailure naming it."""
    for codec, what in ((anthropic(), "count_tokens"), (gemini(), "countTokens")):
        try:
            n = codec.decode_count_tokens(body)
        except ProviderFailure as failure:
            assert failure.error.category == "server"
            assert what in failure.error.message
        else:
            assert isinstance(n, int) and not isinstance(n, bool)
    try:
        n = anthropic().decode_count_tokens(body)
    except ProviderFailure:
        return
    assert n >= 0  # a count below zero is not a count
