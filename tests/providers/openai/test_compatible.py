"""OpenAI-compatible services through the Chat Completions adapter, and custom ones from config."""

from __future__ import annotations

import json

import pytest
import trio

from providers.accumulate import collect
from providers.catalog import load_catalog
from providers.openai import compatible_provider, wire_api_for
from providers.registry import make_provider
from providers.settings import settings_for
from providers.types import (
    ErrorEvent,
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ThinkingConfig,
    Tool,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)
from tests.fakes.script import Raw, Reply, ToolCall
from tests.fakes.script import Usage as FakeUsage

# provider -> (key variable, a model, base path the service's base_url ends in)
SERVICES = {
    "deepseek": ("DEEPSEEK_API_KEY", "deepseek-chat", ""),
    "xai": ("XAI_API_KEY", "grok-3", "/v1"),
    "openrouter": ("OPENROUTER_API_KEY", "anthropic/claude-sonnet-4.5", "/api/v1"),
    "groq": ("GROQ_API_KEY", "llama-3.3-70b-versatile", "/openai/v1"),
    "mistral": ("MISTRAL_API_KEY", "mistral-medium-latest", "/v1"),
    "meta": ("LLAMA_API_KEY", "Llama-3.3-70B-Instruct", "/compat/v1"),
    "ollama": (None, "llama3.2", "/v1"),
    "llamacpp": (None, "local-model", "/v1"),
    "vllm": ("VLLM_API_KEY", "meta-llama/Llama-3.1-8B-Instruct", "/v1"),
}


def ask(model: str, text: str = "hi", **kw) -> Request:
    return Request(
        model=model, messages=[Message(role="user", content=[TextBlock(text=text)])], **kw
    )


async def run(prov, request: Request) -> list:
    with trio.fail_after(10):
        async with prov.stream(request) as stream:
            events = [e async for e in stream]
    await prov.aclose()
    return events


@pytest.mark.parametrize("name", sorted(SERVICES))
async def test_each_service_round_trip(fake_provider, name):
    key_env, model, prefix = SERVICES[name]
    env = {key_env: f"key-for-{name}"} if key_env else {}
    settings = settings_for(name, env=env, base_url=fake_provider.base_url + prefix)
    assert settings.api == "chat"
    fake_provider.push(Reply(text=f"hello from {name}", usage=FakeUsage(input=9, output=3)))
    events = await run(make_provider(settings), ask(model))
    r = collect(events, provider=name)
    assert r.blocks == [TextBlock(text=f"hello from {name}")]
    assert (r.finish_reason, r.usage, r.model) == (
        "stop",
        Usage(input_tokens=9, output_tokens=3),
        model,
    )
    [req] = fake_provider.requests
    assert req.path == f"{prefix}/chat/completions"
    assert req.json["model"] == model
    if key_env:
        assert req.headers["authorization"] == f"Bearer key-for-{name}"
    else:
        assert "authorization" not in req.headers
    cap = "max_tokens" if "max_tokens_field" in settings.dialect else "max_completion_tokens"
    assert req.json[cap] == 4096


async def test_deepseek_reasoning_and_tool_loop(fake_provider):
    settings = settings_for(
        "deepseek", env={"DEEPSEEK_API_KEY": "k"}, base_url=fake_provider.base_url
    )
    fake_provider.push(
        Reply(
            thinking="I should look it up.",
            tool_calls=[ToolCall("weather", {"city": "Oslo"}, id="call_0")],
            usage=FakeUsage(input=50, output=30, thinking=20, cached=32),
        ),
        Reply(thinking="Cold.", text="It is cold in Oslo."),
    )
    tool = Tool(
        name="weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}
    )
    first = ask(
        "deepseek-v4-flash", "weather in Oslo?", tools=[tool], thinking=ThinkingConfig(level="high")
    )
    r = collect(await run(make_provider(settings), first), provider="deepseek")
    assert r.blocks == [
        ThinkingBlock(text="I should look it up.", provider="deepseek"),
        ToolCallBlock(id="call_0", name="weather", arguments={"city": "Oslo"}),
    ]
    assert r.usage == Usage(input_tokens=50, output_tokens=30, thinking_tokens=20, cached_tokens=32)
    sent = fake_provider.requests[0].json
    assert (sent["thinking"], sent["reasoning_effort"], sent["max_tokens"]) == (
        {"type": "enabled"},
        "high",
        4096,
    )
    second = Request(
        model="deepseek-v4-flash",
        tools=[tool],
        thinking=ThinkingConfig(level="high"),
        messages=[
            *first.messages,
            r.to_message(),
            Message(role="tool", content=[ToolResultBlock(tool_call_id="call_0", content="-5C")]),
        ],
    )
    final = collect(await run(make_provider(settings), second), provider="deepseek")
    assert [b.text for b in final.blocks] == ["Cold.", "It is cold in Oslo."]
    assert fake_provider.requests[1].json["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "I should look it up.",
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "-5C"},
    ]


def sse(*chunks: dict) -> bytes:
    return (
        b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    )


async def test_openrouter_reasoning_deltas_and_details(fake_provider):
    settings = settings_for(
        "openrouter", env={"OPENROUTER_API_KEY": "k"}, base_url=fake_provider.base_url + "/api/v1"
    )
    head = {"id": "gen-1", "model": "anthropic/claude-sonnet-4.5"}

    def delta(d: dict, finish: str | None = None) -> dict:
        return {**head, "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

    body = sse(
        delta(
            {
                "role": "assistant",
                "content": "",
                "reasoning": "Think",
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "text": "Think",
                        "format": "anthropic-claude-v1",
                        "index": 0,
                    }
                ],
            }
        ),
        delta(
            {
                "content": "",
                "reasoning": "ing.",
                "reasoning_details": [{"type": "reasoning.text", "text": "ing.", "index": 0}],
            }
        ),
        delta(
            {
                "content": "",
                "reasoning_details": [
                    {"type": "reasoning.text", "signature": "sig-xyz", "index": 0}
                ],
            }
        ),
        delta({"content": "Done."}),
        delta({}, "stop"),
        {
            **head,
            "choices": [],
            "usage": {
                "prompt_tokens": 10,
                "completion_tokens": 8,
                "total_tokens": 18,
                "completion_tokens_details": {"reasoning_tokens": 4},
            },
        },
    )
    fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
    r = collect(
        await run(make_provider(settings), ask("anthropic/claude-sonnet-4.5")),
        provider="openrouter",
    )
    assert r.blocks == [
        ThinkingBlock(
            text="Thinking.",
            provider="openrouter",
            provider_data={
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "text": "Thinking.",
                        "format": "anthropic-claude-v1",
                        "index": 0,
                        "signature": "sig-xyz",
                    }
                ]
            },
        ),
        TextBlock(text="Done."),
    ]
    assert r.usage == Usage(input_tokens=10, output_tokens=8, thinking_tokens=4)


async def test_mistral_thinking_content_chunks(fake_provider):
    settings = settings_for(
        "mistral", env={"MISTRAL_API_KEY": "k"}, base_url=fake_provider.base_url + "/v1"
    )
    head = {"id": "m1", "model": "mistral-medium-latest"}

    def delta(content, finish=None) -> dict:
        return {
            **head,
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
        }

    body = sse(
        delta([{"type": "thinking", "thinking": [{"type": "text", "text": "Let me "}]}]),
        delta([{"type": "thinking", "thinking": [{"type": "text", "text": "see."}]}]),
        delta([{"type": "text", "text": "Four"}]),
        delta("."),
        delta("", "stop"),
    )
    fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
    r = collect(
        await run(
            make_provider(settings),
            ask("mistral-medium-latest", thinking=ThinkingConfig(level="high")),
        )
    )
    assert [(type(b).__name__, b.text) for b in r.blocks] == [
        ("ThinkingBlock", "Let me see."),
        ("TextBlock", "Four."),
    ]
    assert fake_provider.requests[0].json["reasoning_effort"] == "high"


async def test_tool_call_without_index_or_id_from_a_small_server(fake_provider):
    settings = settings_for("ollama", env={}, base_url=fake_provider.base_url + "/v1")
    head = {"id": "chatcmpl-9", "model": "llama3.2"}
    body = sse(
        {
            **head,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [{"function": {"name": "ls", "arguments": {"path": "/tmp"}}}],
                    },
                    "finish_reason": None,
                }
            ],
        },
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
    r = collect(await run(make_provider(settings), ask("llama3.2")))
    [call] = r.blocks
    assert (call.name, call.arguments, call.id.startswith("call_")) == (
        "ls",
        {"path": "/tmp"},
        True,
    )
    assert r.finish_reason == "tool_use"  # "stop" after tool calls


# ------------------------------------------------------------ custom providers from config


async def test_custom_keyless_local_server(fake_provider):
    catalog = load_catalog()
    entry = compatible_provider(
        "lab", fake_provider.base_url + "/v1", dialect=["reasoning_content", "max_tokens_field"]
    )
    catalog.add_provider(entry)
    settings = settings_for("lab", catalog=catalog, env={})
    assert (settings.api, settings.key_env, settings.api_key) == ("chat", (), None)
    fake_provider.push(Reply(thinking="hm", text="local hello"))
    r = collect(await run(make_provider(settings), ask("qwen3:8b")), provider="lab")
    assert [b.text for b in r.blocks] == ["hm", "local hello"]
    [req] = fake_provider.requests
    assert "authorization" not in req.headers
    assert (req.path, req.json["max_tokens"]) == ("/v1/chat/completions", 4096)


async def test_custom_provider_with_key_variable_and_headers(fake_provider):
    catalog = load_catalog()
    catalog.add_provider(
        compatible_provider("corp", fake_provider.base_url + "/llm/v1", key_env="CORP_LLM_KEY")
    )
    settings = settings_for(
        "corp",
        catalog=catalog,
        env={"CORP_LLM_KEY": "corp-secret"},
        extra_headers={"X-Team": "agents"},
    )
    fake_provider.push(Reply(text="ok"))
    await run(make_provider(settings), ask("corp-model"))
    [req] = fake_provider.requests
    assert req.path == "/llm/v1/chat/completions"
    assert (req.headers["authorization"], req.headers["x-team"]) == ("Bearer corp-secret", "agents")
    assert "corp-secret" not in repr(settings)
    # without the variable: an auth error naming it, and no request
    missing = settings_for("corp", catalog=catalog, env={})
    events = await run(make_provider(missing), ask("corp-model"))
    assert isinstance(events[0], ErrorEvent) and "CORP_LLM_KEY" in events[0].error.message
    assert len(fake_provider.requests) == 1


async def test_custom_provider_on_the_responses_api(fake_provider):
    catalog = load_catalog()
    catalog.add_provider(
        compatible_provider("proxy", fake_provider.base_url, api="responses", key_env="PROXY_KEY")
    )
    settings = settings_for("proxy", catalog=catalog, env={"PROXY_KEY": "p"})
    fake_provider.push(Reply(text="via responses"))
    r = collect(await run(make_provider(settings), ask("gpt-5")))
    assert r.blocks == [TextBlock(text="via responses")]
    assert fake_provider.requests[0].path == "/responses"


def test_compatible_provider_validates():
    with pytest.raises(ValueError, match="api must be"):
        compatible_provider("x", "http://h", api="messages")
    with pytest.raises(ValueError, match="unknown dialect"):
        compatible_provider("x", "http://h", dialect=["reasoning_contents"])
    with pytest.raises(ValueError, match="base_url"):
        compatible_provider("x", "localhost:8080")
    e = compatible_provider("x", "http://h:1/v1/", key_env=["A", "B"], dialect=["no_stream_usage"])
    assert (e.base_url, e.key_env, e.dialect, e.label) == (
        "http://h:1/v1",
        ["A", "B"],
        ["no_stream_usage"],
        "x",
    )


def test_catalog_dialects_are_all_understood():
    from providers.openai import DIALECT_FLAGS

    catalog = load_catalog()
    for p in catalog.providers.values():
        assert set(p.dialect) <= DIALECT_FLAGS, p.name


def test_wire_api_comes_from_the_catalog_and_config_overrides_it():
    assert wire_api_for("openai", "gpt-5") == "responses"
    assert wire_api_for("openai", "o3-mini") == "responses"
    assert wire_api_for("openai", "gpt-4o") == "chat"
    assert wire_api_for("openai", "gpt-5", override="chat") == "chat"
    assert wire_api_for("deepseek", "deepseek-reasoner") == "chat"
