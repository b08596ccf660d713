"""Round trips over real loopback HTTP against the fake Messages API."""

from __future__ import annotations

import dataclasses
import json

import msgspec
import pytest
import trio

from providers.accumulate import collect
from providers.registry import make_provider
from providers.types import (
    DoneEvent,
    ErrorEvent,
    Message,
    ProviderFailure,
    Request,
    Response,
    StartEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingConfig,
    ThinkingDelta,
    Tool,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    ToolResultBlock,
    Usage,
)
from tests.fakes.recorded import RecordedRequest
from tests.fakes.script import Disconnect, HttpError, Malformed, Reply, Stall, ToolCall
from tests.fakes.script import Usage as FakeUsage
from tests.fakes.server import FakeProvider
from tests.fakes.wire import anthropic as wire

from .helpers import KEY, settings

TOOLS = [
    Tool(name="read_file", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}}),
    Tool(name="list_files"),
]


def provider(fake: FakeProvider, **kw):
    s = settings(fake.base_url)
    if kw:
        s = dataclasses.replace(s, **kw)
    return make_provider(s)


async def stream(fake: FakeProvider, request: Request, **kw) -> list:
    p = provider(fake, **kw)
    try:
        with trio.fail_after(10):
            async with p.stream(request) as events:
                return [e async for e in events]
    finally:
        await p.aclose()


def cut_after(reply: Reply, n: int) -> int:
    """A byte offset 10 bytes into the event after the first ``n`` of the rendered stream."""
    req = RecordedRequest(method="POST", target="/v1/messages", headers={}, body=b'{"model": "claude-sonnet-4-5"}')
    return sum(map(len, wire.render_stream(reply, req)[:n])) + 10


def ask(text: str, **kw) -> Request:
    return Request(model=kw.pop("model", "claude-sonnet-4-5"), messages=[Message(role="user", content=[TextBlock(text=text)])], **kw)


async def test_text(fake_provider):
    fake_provider.push(Reply(text="Hello there, friend", pieces=3, usage=FakeUsage(input=21, output=5)))
    events = await stream(fake_provider, ask("hi"))
    [req] = fake_provider.requests
    assert (req.method, req.path) == ("POST", "/v1/messages")
    assert req.headers["x-api-key"] == KEY
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert req.json == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}],
        "stream": True,
    }
    msg_id = events[0].provider_data["id"]
    assert msg_id.startswith("msg_01")
    assert events == [
        StartEvent(model="claude-sonnet-4-5", provider_data={"id": msg_id}),
        TextDelta(index=0, text="Hello t"),
        TextDelta(index=0, text="here, f"),
        TextDelta(index=0, text="riend"),
        DoneEvent(
            finish_reason="stop",
            usage=Usage(input_tokens=21, output_tokens=5),
            model="claude-sonnet-4-5",
            provider_data={"stop_reason": "end_turn"},
        ),
    ]


async def test_thinking_and_text(fake_provider):
    fake_provider.push(
        Reply(thinking="Let me think it over.", thinking_signature="EqoBCkgIARABGAIiQL+sig==", text="42", usage=FakeUsage(input=30, output=50, thinking=40))
    )
    events = await stream(fake_provider, ask("meaning?", thinking=ThinkingConfig(level="low")))
    assert fake_provider.requests[0].json["thinking"] == {"type": "enabled", "budget_tokens": 22016}
    assert fake_provider.requests[0].json["max_tokens"] == 22016 + 4096
    response = collect(events, provider="anthropic")
    assert response.blocks == [
        ThinkingBlock(text="Let me think it over.", signature="EqoBCkgIARABGAIiQL+sig==", provider="anthropic"),
        TextBlock(text="42"),
    ]
    assert [e.index for e in events if isinstance(e, ThinkingDelta)] == [0, 0, 0, 0]
    assert response.usage == Usage(input_tokens=30, output_tokens=50, thinking_tokens=40)


async def test_thinking_two_tool_calls_and_results_sent_back_byte_for_byte(fake_provider):
    sig = "EuYBCkQIBBgCIkB0ZXN0LXNpZ25hdHVyZS8rPQ==\u00e9"  # odd bytes must survive too
    fake_provider.push(
        Reply(
            thinking="I should read both files.",
            thinking_signature=sig,
            tool_calls=[ToolCall("read_file", {"path": "a.txt"}), ToolCall("read_file", {"path": "ü/b.txt"})],
            usage=FakeUsage(input=100, output=60, cached=40, cache_write=10),
        ),
        Reply(text="Both files are short."),
    )
    first = ask("read a.txt and b.txt", model="claude-opus-4-6", tools=TOOLS, thinking=ThinkingConfig(level="high"))
    events = await stream(fake_provider, first)
    req1 = fake_provider.requests[0].json
    assert (req1["thinking"], req1["output_config"]) == ({"type": "adaptive", "display": "summarized"}, {"effort": "high"})
    response = collect(events, provider="anthropic")
    thinking, call_a, call_b = response.blocks
    assert thinking == ThinkingBlock(text="I should read both files.", signature=sig, provider="anthropic")
    assert (call_a.name, call_a.arguments, call_b.arguments) == ("read_file", {"path": "a.txt"}, {"path": "ü/b.txt"})
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [1, 2]
    assert [e.index for e in events if isinstance(e, ToolCallDone)] == [1, 2]
    assert response.finish_reason == "tool_use"
    assert response.usage == Usage(input_tokens=100, output_tokens=60, cached_tokens=40, cache_write_tokens=10)

    second = msgspec.structs.replace(
        first,
        messages=[
            *first.messages,
            response.to_message(thinking_level="high"),
            Message(role="tool", content=[ToolResultBlock(tool_call_id=call_a.id, content="alpha")]),
            Message(role="tool", content=[ToolResultBlock(tool_call_id=call_b.id, content="beta", is_error=True)]),
        ],
    )
    events = await stream(fake_provider, second)
    assert collect(events).blocks == [TextBlock(text="Both files are short.")]
    raw = fake_provider.requests[1].body
    assert json.dumps(sig)[1:-1].encode() in raw or sig.encode() in raw
    messages = fake_provider.requests[1].json["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should read both files.", "signature": sig},
            {"type": "tool_use", "id": call_a.id, "name": "read_file", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": call_b.id, "name": "read_file", "input": {"path": "ü/b.txt"}},
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call_a.id, "content": "alpha"},
            {"type": "tool_result", "tool_use_id": call_b.id, "content": "beta", "is_error": True, "cache_control": {"type": "ephemeral"}},
        ],
    }


async def test_redacted_thinking_is_passed_back(fake_provider):
    data = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
    fake_provider.push(Reply(redacted_thinking=data, text="Done."), Reply(text="ok"))
    first = ask("x", thinking=ThinkingConfig(level="med"))
    response = collect(await stream(fake_provider, first), provider="anthropic")
    assert response.blocks == [ThinkingBlock(signature=data, redacted=True, provider="anthropic"), TextBlock(text="Done.")]
    second = msgspec.structs.replace(first, messages=[*first.messages, response.to_message(), *ask("next").messages], provider_data={"cache": False})
    await stream(fake_provider, second)
    assert fake_provider.requests[1].json["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": data},
        {"type": "text", "text": "Done."},
    ]


async def test_tool_call_with_empty_input(fake_provider):
    fake_provider.push(Reply(tool_calls=[ToolCall("list_files", {}, id="toolu_01EmptyInput")]))
    events = await stream(fake_provider, ask("ls", tools=TOOLS))
    assert [e for e in events if isinstance(e, ToolCallStart | ToolCallDelta | ToolCallDone)] == [
        ToolCallStart(index=0, id="toolu_01EmptyInput", name="list_files"),
        ToolCallDone(index=0),
    ]
    assert collect(events).blocks == [ToolCallBlock(id="toolu_01EmptyInput", name="list_files", arguments={})]


@pytest.mark.parametrize(("finish", "stop_reason", "ours"), [("content_filter", "refusal", "content_filter"), ("length", "max_tokens", "length"), ("unknown", "pause_turn", "unknown")])
async def test_refusal_max_tokens_and_pause(fake_provider, finish, stop_reason, ours):
    fake_provider.push(Reply(text="partial" if finish == "length" else "", finish=finish))
    events = await stream(fake_provider, ask("x"))
    assert events[-1].finish_reason == ours
    assert events[-1].provider_data == {"stop_reason": stop_reason}


async def test_429_with_retry_after(fake_provider):
    message = "Number of request tokens has exceeded your per-minute rate limit"
    fake_provider.push(Reply(fault=HttpError(429, message, headers={"retry-after": "17"})))
    [event] = await stream(fake_provider, ask("x"))
    error = event.error
    assert (error.category, error.http_status, error.provider_code, error.retry_after, error.retryable) == (
        "rate_limit",
        429,
        "rate_limit_error",
        17.0,
        True,
    )
    assert error.message.startswith(message + " (request id req_011")


@pytest.mark.parametrize(
    ("status", "message", "category", "retryable"),
    [
        (529, "Overloaded", "overloaded", True),
        (500, "Internal server error", "server", True),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", "context_length", False),
        (400, "Your credit balance is too low to access the Anthropic API.", "billing", False),
        (400, "messages: roles must alternate", "invalid_request", False),
        (401, "invalid x-api-key", "auth", False),
        (403, "Your API key does not have permission to use the specified resource.", "auth", False),
        (404, "model: claude-nope", "not_found", False),
        (413, "Request exceeds the maximum allowed number of bytes.", "invalid_request", False),
    ],
)
async def test_http_errors(fake_provider, status, message, category, retryable):
    fake_provider.push(Reply(fault=HttpError(status, message)), Reply(fault=HttpError(status, message)))
    [event] = await stream(fake_provider, ask("x"))
    assert (event.error.category, event.error.http_status, event.error.retryable) == (category, status, retryable)
    assert event.error.provider_code == wire.ERROR_TYPES[status]
    assert KEY not in str(event.error)
    p = provider(fake_provider)
    with pytest.raises(ProviderFailure) as info:
        await p.complete(ask("x"))
    await p.aclose()
    assert info.value.error.category == category


async def test_error_event_mid_stream(fake_provider):
    fake_provider.push(Reply(text="abcdef", pieces=3, fault=Malformed(garbage=wire.error_event("overloaded_error", "Overloaded"), before_event=4)))
    events = await stream(fake_provider, ask("x"))
    assert [type(e) for e in events] == [StartEvent, TextDelta, ErrorEvent]
    assert (events[-1].error.category, events[-1].error.message, events[-1].error.retryable) == ("overloaded", "Overloaded", True)
    assert events[-1].error.provider_code == "overloaded_error"


async def test_disconnect_mid_stream(fake_provider):
    reply = Reply(text="x" * 60, pieces=6)
    reply.fault = Disconnect(after_bytes=cut_after(reply, 5))  # inside the third text delta
    fake_provider.push(reply)
    events = await stream(fake_provider, ask("x"))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["x" * 10] * 2
    assert isinstance(events[0], StartEvent)
    assert any(isinstance(e, TextDelta) for e in events)
    assert isinstance(events[-1], ErrorEvent) and events[-1].error.category == "network"
    assert events[-1].error.retryable


async def test_stall(fake_provider):
    reply = Reply(text="x" * 60, pieces=6)
    reply.fault = Stall(after_bytes=cut_after(reply, 5))
    fake_provider.push(reply)
    events = await stream(fake_provider, ask("x"), read_timeout=0.3)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["x" * 10] * 2
    assert isinstance(events[-1], ErrorEvent)
    assert (events[-1].error.category, events[-1].error.retryable) == ("timeout", True)


async def test_missing_key_makes_no_request(fake_provider):
    from providers.settings import settings_for

    p = make_provider(settings_for("anthropic", env={}, base_url=fake_provider.base_url))
    async with p.stream(ask("x")) as events:
        [event] = [e async for e in events]
    await p.aclose()
    assert event.error.category == "auth" and "ANTHROPIC_API_KEY" in event.error.message
    assert fake_provider.requests == []


async def test_complete_equals_the_collected_stream(fake_provider):
    reply = Reply(
        thinking="think",
        text="answer",
        tool_calls=[ToolCall("read_file", {"path": "x"}, id="toolu_01Same")],
        usage=FakeUsage(input=500, output=70, thinking=20, cached=300, cache_write=100),
    )
    fake_provider.default = reply
    streamed = collect(await stream(fake_provider, ask("x", tools=TOOLS)), provider="anthropic")
    p = provider(fake_provider)
    with trio.fail_after(10):
        whole = await p.complete(ask("x", tools=TOOLS))
    await p.aclose()
    assert "stream" not in fake_provider.requests[1].json
    # the same answer: only the message id differs between the two requests
    assert whole.provider_data.pop("id").startswith("msg_01")
    streamed.provider_data.pop("id")
    assert whole == streamed
    assert whole == Response(
        blocks=[
            ThinkingBlock(text="think", signature=wire.signature_for("think"), provider="anthropic"),
            TextBlock(text="answer"),
            ToolCallBlock(id="toolu_01Same", name="read_file", arguments={"path": "x"}),
        ],
        finish_reason="tool_use",
        usage=Usage(input_tokens=500, output_tokens=70, thinking_tokens=20, cached_tokens=300, cache_write_tokens=100),
        model="claude-sonnet-4-5",
        provider="anthropic",
        provider_data={"stop_reason": "tool_use"},
    )


async def test_count_tokens(fake_provider):
    fake_provider.push(Reply(usage=FakeUsage(input=1234)))
    p = provider(fake_provider)
    with trio.fail_after(10):
        n = await p.count_tokens(ask("how many?", tools=TOOLS))
    await p.aclose()
    assert n == 1234
    [req] = fake_provider.requests
    assert req.path == "/v1/messages/count_tokens"
    assert set(req.json) == {"model", "messages", "tools"}


async def test_base_url_with_a_prefix_and_anthropic_base_url(fake_provider):
    from providers.settings import settings_for

    fake_provider.push(Reply(text="via proxy"))
    s = settings_for("anthropic", env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_provider.base_url + "/proxy"})
    p = make_provider(s)
    with trio.fail_after(10):
        response = await p.complete(ask("x"))
    await p.aclose()
    assert response.blocks == [TextBlock(text="via proxy")]
    assert fake_provider.requests[0].path == "/proxy/v1/messages"
