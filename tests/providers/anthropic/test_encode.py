"""Request encoding: exact JSON for the Messages API."""

from __future__ import annotations

import json

import pytest

from providers.anthropic import AnthropicCodec
from providers.settings import settings_for
from providers.types import (
    ImageBlock,
    Message,
    ProviderFailure,
    Request,
    TextBlock,
    ThinkingBlock,
    ThinkingConfig,
    Tool,
    ToolCallBlock,
    ToolChoice,
    ToolResultBlock,
)

from .helpers import KEY, codec

NO_CACHE = {"cache": False}


def body(request: Request, *, stream: bool = False) -> dict:
    req = codec().encode(request, stream=stream)
    return json.loads(req.body)


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def assistant(*blocks) -> Message:
    return Message(role="assistant", content=list(blocks), provider="anthropic")


def test_minimal_request_headers_url_and_body():
    req = codec().encode(
        Request(model="claude-sonnet-4-5", messages=[user("hi")], system=[TextBlock(text="Be brief.")]),
        stream=True,
    )
    assert (req.method, req.url) == ("POST", "https://api.anthropic.com/v1/messages")
    assert req.headers == {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "anthropic-version": "2023-06-01",
        "x-api-key": KEY,
    }
    assert json.loads(req.body) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
        ],
        "stream": True,
    }


def test_base_url_from_env_and_v1_suffix_and_extra_headers():
    s = settings_for(
        "anthropic",
        env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "https://proxy.example/v1/"},
        extra_headers={"anthropic-beta": "context-1m-2025-08-07"},
    )
    req = AnthropicCodec(s).encode(Request(model="claude-opus-4-6", messages=[user("x")]), stream=False)
    assert req.url == "https://proxy.example/v1/messages"
    assert req.headers["anthropic-beta"] == "context-1m-2025-08-07"
    assert req.headers["accept"] == "application/json"
    assert "stream" not in json.loads(req.body)


def test_key_from_credentials_and_missing_key_names_the_variable():
    s = settings_for("anthropic", env={}, credentials={"anthropic": "sk-ant-cred"})
    req = AnthropicCodec(s).encode(Request(model="claude-haiku-4-5", messages=[user("x")]), stream=False)
    assert req.headers["x-api-key"] == "sk-ant-cred"
    with pytest.raises(ProviderFailure) as info:
        AnthropicCodec(settings_for("anthropic", env={})).encode(
            Request(model="claude-haiku-4-5", messages=[user("x")]), stream=False
        )
    assert info.value.error.category == "auth"
    assert "ANTHROPIC_API_KEY" in info.value.error.message


def test_alternation_merges_same_role_and_batches_tool_results():
    call_a = ToolCallBlock(id="toolu_a", name="read", arguments={"path": "a.txt"})
    call_b = ToolCallBlock(id="toolu_b", name="read", arguments={"path": "b.txt"})
    request = Request(
        model="claude-sonnet-4-5",
        provider_data=NO_CACHE,
        messages=[
            user("first"),
            user("second"),
            assistant(TextBlock(text="Reading both."), call_a),
            assistant(call_b),  # a second assistant message of the same turn
            Message(role="tool", content=[ToolResultBlock(tool_call_id="toolu_a", content="A")]),
            Message(role="tool", content=[ToolResultBlock(tool_call_id="toolu_b", content="no such file", is_error=True)]),
            user("and now?"),
            assistant(TextBlock(text="")),  # empty: dropped, never an empty message
            user("hello?"),
        ],
    )
    assert body(request)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "toolu_b", "name": "read", "input": {"path": "b.txt"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "no such file", "is_error": True},
                {"type": "text", "text": "and now?"},
                {"type": "text", "text": "hello?"},
            ],
        },
    ]


def test_tool_results_go_ahead_of_text_in_a_user_message():
    request = Request(
        model="claude-sonnet-4-5",
        provider_data=NO_CACHE,
        messages=[
            user("go"),
            assistant(ToolCallBlock(id="t1", name="ls")),
            Message(role="user", content=[TextBlock(text="also this"), ToolResultBlock(tool_call_id="t1", content="")]),
        ],
    )
    assert body(request)["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1"},
        {"type": "text", "text": "also this"},
    ]


def test_thinking_blocks_go_back_only_to_anthropic():
    sig = "EqQBCkYIBxgCKkBsig+/="
    request = Request(
        model="claude-sonnet-4-5",
        provider_data=NO_CACHE,
        messages=[
            user("q"),
            Message(
                role="assistant",
                content=[
                    ThinkingBlock(text="mine", signature=sig, provider="anthropic"),
                    ThinkingBlock(signature="opaque-redacted", redacted=True, provider="anthropic"),
                    ThinkingBlock(text="unsigned, cut short", provider="anthropic"),
                    ThinkingBlock(text="theirs", signature="gemini-sig", provider="google"),
                    ThinkingBlock(text="openai summary", provider="openai", provider_data={"id": "rs_1"}),
                    TextBlock(text="answer", signature="gemini-text-sig", provider="google"),
                ],
            ),
            user("more"),
        ],
    )
    assert body(request)["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "mine", "signature": sig},
        {"type": "redacted_thinking", "data": "opaque-redacted"},
        {"type": "text", "text": "answer"},
    ]


def test_message_of_only_foreign_thinking_disappears_and_neighbours_merge():
    request = Request(
        model="claude-sonnet-4-5",
        provider_data=NO_CACHE,
        messages=[user("a"), Message(role="assistant", content=[ThinkingBlock(text="x", provider="openai")]), user("b")],
    )
    assert body(request)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


def test_foreign_tool_ids_are_made_valid_and_invalid_arguments_become_empty_input():
    request = Request(
        model="claude-sonnet-4-5",
        provider_data=NO_CACHE,
        messages=[
            user("a"),
            assistant(ToolCallBlock(id="call:1/x", name="f", raw_arguments="{oops")),
            Message(role="tool", content=[ToolResultBlock(tool_call_id="call:1/x", content="bad arguments", is_error=True)]),
        ],
    )
    messages = body(request)["messages"]
    assert messages[1]["content"] == [{"type": "tool_use", "id": "call_1_x", "name": "f", "input": {}}]
    assert messages[2]["content"][0]["tool_use_id"] == "call_1_x"


def test_images():
    request = Request(
        model="claude-sonnet-4-5",
        provider_data=NO_CACHE,
        messages=[
            Message(
                role="user",
                content=[
                    ImageBlock(media_type="image/png", data="iVBORw0KGgo="),
                    ImageBlock(media_type="image/jpeg", url="https://example.com/cat.jpg"),
                    TextBlock(text="what are these?"),
                ],
            )
        ],
    )
    assert body(request)["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {"type": "text", "text": "what are these?"},
    ]


TOOLS = [
    Tool(name="read", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    Tool(name="ls", strict=True),
]


@pytest.mark.parametrize(
    ("choice", "parallel", "wire"),
    [
        (ToolChoice(), True, None),
        (ToolChoice(), False, {"type": "auto", "disable_parallel_tool_use": True}),
        (ToolChoice(mode="none"), True, {"type": "none"}),
        (ToolChoice(mode="required"), True, {"type": "any"}),
        (ToolChoice(mode="tool", name="read"), False, {"type": "tool", "name": "read", "disable_parallel_tool_use": True}),
    ],
)
def test_tools_and_tool_choice(choice, parallel, wire):
    b = body(
        Request(model="claude-sonnet-4-5", messages=[user("x")], tools=TOOLS, tool_choice=choice, parallel_tool_calls=parallel, provider_data=NO_CACHE)
    )
    assert b["tools"] == [
        {"name": "read", "description": "Read a file", "input_schema": TOOLS[0].parameters},
        {"name": "ls", "input_schema": {"type": "object", "properties": {}}, "strict": True},
    ]
    assert b.get("tool_choice") == wire


def test_cache_breakpoints_on_tools_system_last_message_and_previous_user_turn():
    b = body(
        Request(
            model="claude-sonnet-4-5",
            system=[TextBlock(text="s1"), TextBlock(text="s2")],
            tools=TOOLS,
            messages=[
                user("one"),
                assistant(ThinkingBlock(text="t", signature="sig", provider="anthropic"), ToolCallBlock(id="t1", name="ls")),
                Message(role="tool", content=[ToolResultBlock(tool_call_id="t1", content="x")]),
                assistant(TextBlock(text="done"), ThinkingBlock(text="t2", signature="sig2", provider="anthropic")),
            ],
        )
    )
    eph = {"type": "ephemeral"}
    assert b["system"] == [{"type": "text", "text": "s1"}, {"type": "text", "text": "s2", "cache_control": eph}]
    assert b["tools"][-1]["cache_control"] == eph and "cache_control" not in b["tools"][0]
    marks = [(i, j) for i, m in enumerate(b["messages"]) for j, blk in enumerate(m["content"]) if "cache_control" in blk]
    # last message: its last block that is not thinking; then the user turn before it
    assert marks == [(2, 0), (3, 0)]


# ---------------------------------------------------------------- thinking


def think(model: str, level: str, **kw) -> dict:
    return body(Request(model=model, messages=[user("x")], thinking=ThinkingConfig(level=level), provider_data=NO_CACHE, **kw))


@pytest.mark.parametrize(
    ("model", "level", "max_tokens", "thinking"),
    [
        # budget models: min + k/3 of (max - min), max_tokens raised to budget + 4096
        ("claude-sonnet-4-5", "low", 1024 + 20992 + 4096, {"type": "enabled", "budget_tokens": 1024 + 20992}),
        ("claude-sonnet-4-5-20250929", "med", 43008 + 4096, {"type": "enabled", "budget_tokens": 43008}),
        # high: 64000 + 4096 is over the model's 64000: capped, budget shrunk to leave 4096
        ("claude-sonnet-4-5", "high", 64000, {"type": "enabled", "budget_tokens": 64000 - 4096}),
        ("claude-opus-4-1", "high", 32000, {"type": "enabled", "budget_tokens": 32000 - 4096}),
        ("claude-sonnet-4-5", "none", 4096, None),
    ],
)
def test_budget_thinking(model, level, max_tokens, thinking):
    b = think(model, level)
    assert b["max_tokens"] == max_tokens
    assert b.get("thinking") == thinking
    assert "output_config" not in b


@pytest.mark.parametrize(
    ("level", "effort"),
    [("low", "low"), ("med", "medium"), ("high", "high")],
)
def test_adaptive_thinking_with_effort(level, effort):
    b = think("claude-opus-4-6", level)
    assert b["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert b["output_config"] == {"effort": effort}
    assert b["max_tokens"] == 4096


def test_adaptive_none_sends_no_thinking_and_unknown_models_use_the_provider_default():
    assert "thinking" not in think("claude-opus-4-6", "none")
    b = think("claude-opus-9", "high")  # not in the catalog: the default profile (adaptive)
    assert (b["thinking"], b["output_config"]) == ({"type": "adaptive", "display": "summarized"}, {"effort": "high"})


def test_display_omitted_when_no_summary_is_wanted():
    b = body(Request(model="claude-opus-4-6", messages=[user("x")], thinking=ThinkingConfig(level="low", include_summary=False)))
    assert b["thinking"] == {"type": "adaptive", "display": "omitted"}
    b = body(Request(model="claude-haiku-4-5", messages=[user("x")], thinking=ThinkingConfig(level="low", include_summary=False)))
    assert b["thinking"] == {"type": "enabled", "budget_tokens": 1024 + 20992, "display": "omitted"}


def test_max_tokens_raising_and_budget_shrinking():
    # the answer asked for more than the model can give: capped at the model's limit,
    # the budget shrinks but never below 1024
    b = think("claude-opus-4-1", "low", max_output_tokens=40000)
    assert (b["max_tokens"], b["thinking"]["budget_tokens"]) == (32000, 1024)
    b = think("claude-sonnet-4-5", "low", max_output_tokens=1000)
    assert (b["max_tokens"], b["thinking"]["budget_tokens"]) == (22016 + 1000, 22016)
    assert b["thinking"]["budget_tokens"] < b["max_tokens"]
    # no thinking: max_tokens is what was asked, within the model's limit
    assert think("claude-opus-4-1", "none", max_output_tokens=100000)["max_tokens"] == 32000


def test_forced_tool_turns_thinking_off_and_sampling_is_dropped_with_thinking():
    b = think("claude-sonnet-4-5", "high", tools=TOOLS, tool_choice=ToolChoice(mode="required"))
    assert "thinking" not in b and b["tool_choice"] == {"type": "any"} and b["max_tokens"] == 4096
    sampling = {"temperature": 0.2, "top_k": 5, "top_p": 0.9, "stop_sequences": ["END"], "cache": False}
    b = body(Request(model="claude-sonnet-4-5", messages=[user("x")], thinking=ThinkingConfig(level="low"), provider_data=sampling))
    assert "temperature" not in b and "top_k" not in b and "top_p" not in b
    assert b["stop_sequences"] == ["END"]
    b = body(Request(model="claude-sonnet-4-5", messages=[user("x")], provider_data=sampling))
    assert (b["temperature"], b["top_k"], b["top_p"]) == (0.2, 5, 0.9)


def test_response_schema_goes_to_output_config_format():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    b = body(Request(model="claude-sonnet-4-5", messages=[user("x")], response_schema=schema))
    # fitted to Claude's subset (providers/schema_fit): every object closed
    fitted = {**schema, "additionalProperties": False}
    assert b["output_config"] == {"format": {"type": "json_schema", "schema": fitted}}


def test_count_tokens_request():
    req = codec().encode_count_tokens(
        Request(
            model="claude-sonnet-4-5",
            system=[TextBlock(text="sys")],
            messages=[user("count me")],
            tools=TOOLS[:1],
            thinking=ThinkingConfig(level="low"),
        )
    )
    assert req.url == "https://api.anthropic.com/v1/messages/count_tokens"
    assert json.loads(req.body) == {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "sys"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "count me"}]}],
        "tools": [{"name": "read", "description": "Read a file", "input_schema": TOOLS[0].parameters}],
        "thinking": {"type": "enabled", "budget_tokens": 22016},
    }
    assert codec().decode_count_tokens(b'{"input_tokens": 2095}') == 2095
    with pytest.raises(ProviderFailure):
        codec().decode_count_tokens(b"<html>")


def test_the_key_never_shows_in_a_repr():
    c = codec()
    assert KEY not in repr(c.settings)
