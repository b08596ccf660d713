"""The exact requests both codecs send."""

from __future__ import annotations

import json

import msgspec
import pytest

from providers.openai.chat import ChatCodec
from providers.openai.responses import ResponsesCodec
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

from ._helpers import KEY, openai_settings

TOOLS = [
    Tool(
        name="get_weather",
        description="Weather for a city",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
        strict=True,
    ),
    # an open object cannot be strict: it goes as it is, strict off
    Tool(
        name="search",
        parameters={
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "additionalProperties": True,
        },
        strict=True,
    ),
]
STRICT_WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": ["string", "null"], "enum": ["c", "f", None]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
OPEN_SEARCH = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "additionalProperties": True,
}


def conversation(model: str = "gpt-5", provider: str = "openai") -> Request:
    return Request(
        model=model,
        system=[TextBlock(text="You are terse."), TextBlock(text="Use tools.")],
        messages=[
            Message(role="user", content=[TextBlock(text="Weather in Paris and Rome?")]),
            Message(
                role="assistant",
                provider=provider,
                model=model,
                content=[
                    ThinkingBlock(
                        text="Two cities: two calls.",
                        signature="gAAAAenc1",
                        provider=provider,
                        provider_data={"id": "rs_1"},
                    ),
                    ThinkingBlock(
                        text="someone else's", signature="sig-anthropic", provider="anthropic"
                    ),
                    TextBlock(text="Checking both."),
                    ToolCallBlock(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                    ToolCallBlock(
                        id="call_2", name="get_weather", arguments={"city": "Rome", "unit": "c"}
                    ),
                ],
            ),
            Message(
                role="tool",
                content=[
                    ToolResultBlock(tool_call_id="call_1", content="18C sunny"),
                    ToolResultBlock(tool_call_id="call_2", content="timeout", is_error=True),
                ],
            ),
        ],
        tools=TOOLS,
        tool_choice=ToolChoice(mode="tool", name="get_weather"),
        thinking=ThinkingConfig(level="high"),
        max_output_tokens=2000,
    )


def sent(codec, request: Request, *, stream: bool = True) -> dict:
    return json.loads(codec.encode(request, stream=stream).body)


def test_chat_request_exactly():
    codec = ChatCodec(openai_settings())
    http = codec.encode(conversation(), stream=True)
    assert (http.method, http.url) == ("POST", "https://api.openai.com/v1/chat/completions")
    assert http.headers == {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "authorization": f"Bearer {KEY}",
    }
    assert json.loads(http.body) == {
        "model": "gpt-5",
        "messages": [
            {"role": "system", "content": "You are terse.\n\nUse tools."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                # thinking is not sent back on Chat Completions (and never another provider's)
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": '{"city":"Rome","unit":"c"}',
                        },
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: timeout"},
        ],
        "max_completion_tokens": 2000,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parameters": STRICT_WEATHER,
                    "strict": True,
                },
            },
            {"type": "function", "function": {"name": "search", "parameters": OPEN_SEARCH}},
        ],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "parallel_tool_calls": True,
        "reasoning_effort": "high",
    }


def test_responses_request_exactly():
    codec = ResponsesCodec(openai_settings())
    http = codec.encode(conversation(), stream=True)
    assert (http.method, http.url) == ("POST", "https://api.openai.com/v1/responses")
    assert json.loads(http.body) == {
        "model": "gpt-5",
        "instructions": "You are terse.\n\nUse tools.",
        "input": [
            {"type": "message", "role": "user", "content": "Weather in Paris and Rome?"},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Two cities: two calls."}],
                "encrypted_content": "gAAAAenc1",
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking both."}],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            {
                "type": "function_call",
                "call_id": "call_2",
                "name": "get_weather",
                "arguments": '{"city":"Rome","unit":"c"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "18C sunny"},
            {"type": "function_call_output", "call_id": "call_2", "output": "Error: timeout"},
        ],
        "max_output_tokens": 2000,
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high", "summary": "auto"},
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": STRICT_WEATHER,
                "strict": True,
            },
            {"type": "function", "name": "search", "parameters": OPEN_SEARCH, "strict": False},
        ],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "parallel_tool_calls": True,
    }


def test_responses_sends_reasoning_only_to_its_own_provider_and_only_when_encrypted():
    codec = ResponsesCodec(openai_settings())
    req = conversation(provider="azure")  # same shapes, another provider's reasoning
    items = sent(codec, req)["input"]
    assert [i.get("type", "message") for i in items] == [
        "message",
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    unsigned = Message(
        role="assistant",
        content=[
            ThinkingBlock(text="summary only", provider="openai", provider_data={"id": "rs_9"}),
            TextBlock(text="ok"),
        ],
    )
    req = Request(model="gpt-5", messages=[unsigned])
    assert sent(codec, req)["input"] == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}
    ]


@pytest.mark.parametrize(
    ("tool_choice", "chat", "responses"),
    [
        (ToolChoice(mode="auto"), "auto", "auto"),
        (ToolChoice(mode="none"), "none", "none"),
        (ToolChoice(mode="required"), "required", "required"),
        (
            ToolChoice(mode="tool", name="search"),
            {"type": "function", "function": {"name": "search"}},
            {"type": "function", "name": "search"},
        ),
    ],
)
def test_tool_choice(tool_choice, chat, responses):
    req = Request(
        model="gpt-4o", messages=[], tools=TOOLS, tool_choice=tool_choice, parallel_tool_calls=False
    )
    body = sent(ChatCodec(openai_settings()), req)
    assert (body["tool_choice"], body["parallel_tool_calls"]) == (chat, False)
    body = sent(ResponsesCodec(openai_settings()), req)
    assert (body["tool_choice"], body["parallel_tool_calls"]) == (responses, False)


def test_no_tools_no_tool_fields_and_plain_non_streamed_body():
    req = Request(model="gpt-4o", messages=[Message(role="user", content=[TextBlock(text="hi")])])
    assert sent(ChatCodec(openai_settings()), req, stream=False) == {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "hi"}],
        "max_completion_tokens": 4096,
    }
    # gpt-4o cannot reason: no reasoning, no encrypted reasoning asked for
    assert sent(ResponsesCodec(openai_settings()), req, stream=False) == {
        "model": "gpt-4o",
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "max_output_tokens": 4096,
        "store": False,
    }


def test_images_and_several_text_parts():
    req = Request(
        model="gpt-4o",
        messages=[
            Message(
                role="user",
                content=[
                    TextBlock(text="what is this?"),
                    ImageBlock(media_type="image/png", data="iVBORw0KGgo="),
                    ImageBlock(media_type="image/jpeg", url="https://example.com/a.jpg"),
                ],
            )
        ],
    )
    assert sent(ChatCodec(openai_settings()), req)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
            ],
        }
    ]
    assert sent(ResponsesCodec(openai_settings()), req)["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                {"type": "input_image", "image_url": "https://example.com/a.jpg"},
            ],
        }
    ]


def test_response_schema():
    schema = {
        "title": "Answer",
        "type": "object",
        "properties": {"answer": {"type": "string"}, "score": {"type": "number"}},
        "required": ["answer", "score"],
    }
    strict = {**schema, "additionalProperties": False}
    req = Request(model="gpt-4o", messages=[], response_schema=schema)
    assert sent(ChatCodec(openai_settings()), req)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": strict, "strict": True},
    }
    assert sent(ResponsesCodec(openai_settings()), req)["text"] == {
        "format": {"type": "json_schema", "name": "Answer", "schema": strict, "strict": True}
    }


def test_raw_arguments_go_back_as_an_empty_object():
    # invalid JSON sent back is refused by servers (issue 14 item 9)
    call = ToolCallBlock(id="c1", name="f", arguments={}, raw_arguments='{"broken": ')
    req = Request(model="gpt-4o", messages=[Message(role="assistant", content=[call])])
    msg = sent(ChatCodec(openai_settings()), req)["messages"][0]
    assert msg == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


def test_missing_key_names_the_variable():
    settings = settings_for("openai", env={})
    with pytest.raises(ProviderFailure) as info:
        ChatCodec(settings).encode(conversation(), stream=True)
    assert info.value.error.category == "auth"
    assert "OPENAI_API_KEY" in info.value.error.message


def test_base_url_from_env_and_credentials_file():
    s = settings_for(
        "openai",
        env={"OPENAI_BASE_URL": "https://proxy.example/v1/"},
        credentials={"openai": "from-file"},
    )
    http = ChatCodec(s).encode(conversation(), stream=False)
    assert http.url == "https://proxy.example/v1/chat/completions"
    assert http.headers["authorization"] == "Bearer from-file"
    s = settings_for(
        "openai", env={"OPENAI_API_KEY": "from-env"}, credentials={"openai": "from-file"}
    )
    assert (
        ChatCodec(s).encode(conversation(), stream=False).headers["authorization"]
        == "Bearer from-env"
    )
    assert "from-env" not in repr(s)


# ------------------------------------------------------------ thinking per model profile


def thinking_body(provider: str, model: str, level: str, codec=ChatCodec) -> dict:
    s = settings_for(provider, env={"X": "1"}, credentials={provider: "k"})
    req = Request(model=model, messages=[], thinking=ThinkingConfig(level=level))
    body = sent(codec(s), req)
    keys = (
        "reasoning_effort",
        "reasoning",
        "thinking",
        "max_tokens",
        "max_completion_tokens",
        "include",
    )
    return {k: body[k] for k in keys if k in body}


@pytest.mark.parametrize(
    ("provider", "model", "level", "expected"),
    [
        # OpenAI on Chat Completions: reasoning_effort per the model's scale
        ("openai", "gpt-4o", "high", {"max_completion_tokens": 4096}),
        ("openai", "o3", "none", {"reasoning_effort": "low", "max_completion_tokens": 4096}),
        ("openai", "gpt-5", "low", {"reasoning_effort": "low", "max_completion_tokens": 4096}),
        ("openai", "gpt-5.1", "none", {"reasoning_effort": "none", "max_completion_tokens": 4096}),
        # xAI: grok-4 always reasons and refuses the parameter; grok-4.3 takes none..high
        ("xai", "grok-4", "high", {"max_completion_tokens": 4096}),
        ("xai", "grok-4.3", "med", {"reasoning_effort": "medium", "max_completion_tokens": 4096}),
        ("xai", "grok-3-mini", "med", {"reasoning_effort": "high", "max_completion_tokens": 4096}),
        # DeepSeek V4: the thinking toggle plus reasoning_effort, max_tokens
        (
            "deepseek",
            "deepseek-v4-flash",
            "low",
            {"reasoning_effort": "high", "thinking": {"type": "enabled"}, "max_tokens": 4096},
        ),
        (
            "deepseek",
            "deepseek-v4-pro",
            "none",
            {"thinking": {"type": "disabled"}, "max_tokens": 4096},
        ),
        ("deepseek", "deepseek-reasoner", "none", {"max_tokens": 4096}),
        # OpenRouter: its reasoning object, for any routed model (it ignores
        # reasoning for a model that cannot reason)
        (
            "openrouter",
            "anthropic/claude-sonnet-4.5",
            "high",
            {"reasoning": {"effort": "high"}, "max_tokens": 4096},
        ),
        (
            "openrouter",
            "anthropic/claude-sonnet-4.5",
            "none",
            {"reasoning": {"enabled": False}, "max_tokens": 4096},
        ),
        # Mistral: effort none or high
        (
            "mistral",
            "mistral-medium-latest",
            "low",
            {"reasoning_effort": "high", "max_tokens": 4096},
        ),
        (
            "mistral",
            "mistral-medium-latest",
            "none",
            {"reasoning_effort": "none", "max_tokens": 4096},
        ),
    ],
)
def test_chat_thinking_parameters(provider, model, level, expected):
    assert thinking_body(provider, model, level) == expected


@pytest.mark.parametrize(
    ("model", "level", "expected"),
    [
        ("gpt-5", "med", {"effort": "medium", "summary": "auto"}),
        ("gpt-5", "none", {"effort": "minimal", "summary": "auto"}),  # cannot turn off: its lowest
        ("gpt-5.1", "none", {"effort": "none"}),
        ("o4-mini", "high", {"effort": "high", "summary": "auto"}),
    ],
)
def test_responses_thinking_parameters(model, level, expected):
    body = thinking_body("openai", model, level, codec=ResponsesCodec)
    assert body == {"reasoning": expected, "include": ["reasoning.encrypted_content"]}


def test_openrouter_reasoning_object_and_details_go_back():
    from providers.catalog import ModelEntry, ThinkingProfile, load_catalog

    catalog = load_catalog()
    entry = catalog.providers["openrouter"]
    catalog.models["x"] = m = ModelEntry(
        id="openai/gpt-5",
        provider="openrouter",
        context_window=400_000,
        max_output_tokens=128_000,
        thinking=ThinkingProfile(
            kind="effort", levels=["minimal", "low", "medium", "high"], can_disable=False
        ),
    )
    catalog._names["openrouter/openai/gpt-5"] = m
    s = settings_for("openrouter", catalog=catalog, credentials={"openrouter": "k"})
    assert s.dialect == frozenset(entry.dialect)
    codec = ChatCodec(s, catalog=catalog)
    details = [{"type": "reasoning.encrypted", "data": "opaque", "index": 0}]
    req = Request(
        model="openai/gpt-5",
        thinking=ThinkingConfig(level="high", include_summary=False),
        messages=[
            Message(
                role="assistant",
                content=[
                    ThinkingBlock(
                        text="t",
                        provider="openrouter",
                        provider_data={"reasoning_details": details},
                    ),
                    TextBlock(text="done"),
                ],
            )
        ],
    )
    body = sent(codec, req)
    assert body["reasoning"] == {"effort": "high", "exclude": True}
    assert body["messages"] == [
        {"role": "assistant", "content": "done", "reasoning_details": details}
    ]
    assert body["max_tokens"] == 4096 and "reasoning_effort" not in body


def test_deepseek_sends_reasoning_back_on_every_tool_call_message():
    """DeepSeek thinking mode: "for turns that do perform tool calls, the
    reasoning_content must be fully passed back to the API in all subsequent
    requests" (api-docs.deepseek.com, guides/thinking_mode), else 400."""
    s = settings_for("deepseek", credentials={"deepseek": "k"})
    think = ThinkingBlock(text="need the weather", provider="deepseek")
    call = ToolCallBlock(id="c1", name="weather", arguments={"city": "Oslo"})
    req = Request(
        model="deepseek-v4-flash",
        messages=[
            Message(role="user", content=[TextBlock(text="earlier")]),
            Message(role="assistant", content=[think, call]),
            Message(role="tool", content=[ToolResultBlock(tool_call_id="c1", content="cold")]),
            Message(role="assistant", content=[think, TextBlock(text="It is cold.")]),
            Message(role="user", content=[TextBlock(text="and now?")]),
            Message(role="assistant", content=[think, call]),
            Message(role="tool", content=[ToolResultBlock(tool_call_id="c1", content="colder")]),
        ],
        thinking=ThinkingConfig(level="high"),
    )
    msgs = [m for m in sent(ChatCodec(s), req)["messages"] if m["role"] == "assistant"]
    assert ["reasoning_content" in m for m in msgs] == [True, False, True]
    assert msgs[0]["reasoning_content"] == msgs[2]["reasoning_content"] == "need the weather"
    # a call another provider made has no reasoning of DeepSeek's: "" goes back
    foreign = msgspec.structs.replace(req, messages=[req.messages[0], Message(role="assistant", content=[call], provider="openai"), req.messages[2]])
    (msg,) = [m for m in sent(ChatCodec(s), foreign)["messages"] if m["role"] == "assistant"]
    assert msg["reasoning_content"] == ""
    # thinking off: nothing to pass back
    off = msgspec.structs.replace(req, thinking=ThinkingConfig(level="none"))
    assert not any("reasoning_content" in m for m in sent(ChatCodec(s), off)["messages"])


def test_no_stream_usage_flag():
    from dataclasses import replace

    s = replace(openai_settings(), dialect=frozenset({"no_stream_usage"}))
    body = sent(ChatCodec(s), Request(model="gpt-4o", messages=[]))
    assert body["stream"] is True and "stream_options" not in body
