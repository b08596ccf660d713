"""Both OpenAI APIs end to end: HttpProvider + codec against the fake server over loopback."""

from __future__ import annotations

from dataclasses import replace

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
    StartEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingConfig,
    Tool,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    ToolResultBlock,
    Usage,
)
from tests.fakes.script import Disconnect, HttpError, Raw, Reply, Stall, ToolCall
from tests.fakes.script import Usage as FakeUsage

from ._helpers import KEY, openai_settings

APIS = ["chat", "responses"]
MODEL = {"chat": "gpt-4o", "responses": "gpt-5"}
PATH = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}
WEATHER = Tool(
    name="get_weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def provider(fake, api: str, **kw):
    settings = openai_settings(fake.base_url + "/v1", api=api)
    if kw:
        settings = replace(settings, **kw)
    return make_provider(settings)


def ask(api: str, text: str = "hi", **kw) -> Request:
    return Request(
        model=MODEL[api], messages=[Message(role="user", content=[TextBlock(text=text)])], **kw
    )


async def run(prov, request: Request) -> list:
    events = []
    with trio.fail_after(10):
        async with prov.stream(request) as stream:
            async for event in stream:
                events.append(event)
    await prov.aclose()
    return events


@pytest.mark.parametrize("api", APIS)
async def test_text(fake_provider, api):
    fake_provider.push(
        Reply(text="Hello there, world", pieces=4, usage=FakeUsage(input=21, output=5, cached=7))
    )
    events = await run(provider(fake_provider, api), ask(api))
    assert isinstance(events[0], StartEvent) and events[0].model == MODEL[api]
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "Hello",
        " ther",
        "e, wo",
        "rld",
    ]
    assert {e.index for e in events if isinstance(e, TextDelta)} == {0}
    assert events[-1] == DoneEvent(
        finish_reason="stop",
        usage=Usage(input_tokens=21, output_tokens=5, cached_tokens=7),
        model=MODEL[api],
        provider_data=events[-1].provider_data,
    )
    [req] = fake_provider.requests
    assert req.path == PATH[api]
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.json["stream"] is True
    if api == "chat":
        assert req.json["stream_options"] == {"include_usage": True}
    else:
        assert req.json["store"] is False


async def test_responses_thinking_round_trip(fake_provider):
    fake_provider.push(
        Reply(
            thinking="The user greets me.",
            thinking_signature="gAAAAB-encrypted-1",
            text="Hello!",
            usage=FakeUsage(input=30, output=50, thinking=40),
        ),
        Reply(text="Still here."),
    )
    api = "responses"
    first = ask(api, thinking=ThinkingConfig(level="med"))
    response = collect(await run(provider(fake_provider, api), first), provider="openai")
    assert response.blocks == [
        ThinkingBlock(
            text="The user greets me.",
            signature="gAAAAB-encrypted-1",
            provider="openai",
            provider_data={"id": "rs_fake00000000"},
        ),
        TextBlock(text="Hello!"),
    ]
    assert response.usage == Usage(input_tokens=30, output_tokens=50, thinking_tokens=40)
    assert fake_provider.requests[0].json["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert fake_provider.requests[0].json["include"] == ["reasoning.encrypted_content"]
    # the next turn sends the encrypted reasoning back, stateless
    second = Request(
        model="gpt-5",
        messages=[
            *first.messages,
            response.to_message(),
            Message(role="user", content=[TextBlock(text="again")]),
        ],
        thinking=ThinkingConfig(level="med"),
    )
    await run(provider(fake_provider, api), second)
    assert fake_provider.requests[1].json["input"] == [
        {"type": "message", "role": "user", "content": "hi"},
        {
            "type": "reasoning",
            "id": "rs_fake00000000",
            "summary": [{"type": "summary_text", "text": "The user greets me."}],
            "encrypted_content": "gAAAAB-encrypted-1",
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hello!"}],
        },
        {"type": "message", "role": "user", "content": "again"},
    ]
    assert "previous_response_id" not in fake_provider.requests[1].json


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("parallel", [False, True])
async def test_tool_calls_and_results_next_turn(fake_provider, api, parallel):
    calls = [ToolCall("get_weather", {"city": "Paris"}, id="call_a")]
    if parallel:
        calls.append(ToolCall("get_weather", {"city": "Rome", "detail": [1, 2]}, id="call_b"))
    fake_provider.push(
        Reply(text="Let me check.", tool_calls=calls, pieces=3), Reply(text="Sunny both.")
    )
    first = ask(api, "weather?", tools=[WEATHER])
    events = await run(provider(fake_provider, api), first)
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.index, s.id, s.name) for s in starts] == [
        (i + 1, c.id, "get_weather") for i, c in enumerate(calls)
    ]
    assert len([e for e in events if isinstance(e, ToolCallDelta)]) >= 3 * len(calls)
    assert [e.index for e in events if isinstance(e, ToolCallDone)] == [s.index for s in starts]
    response = collect(events)
    assert response.finish_reason == "tool_use"
    got = [(b.id, b.name, b.arguments) for b in response.blocks if isinstance(b, ToolCallBlock)]
    assert got == [(c.id, c.name, c.arguments) for c in calls]
    # send the results back
    results = Message(
        role="tool",
        content=[
            ToolResultBlock(tool_call_id=c.id, content=f"{c.arguments['city']}: sunny")
            for c in calls
        ],
    )
    second = Request(
        model=MODEL[api],
        messages=[*first.messages, response.to_message(), results],
        tools=[WEATHER],
    )
    final = collect(await run(provider(fake_provider, api), second))
    assert final.blocks == [TextBlock(text="Sunny both.")]
    sent = fake_provider.requests[1].json
    if api == "chat":
        assert sent["messages"][1:] == [
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": fake_args(c)},
                    }
                    for c in calls
                ],
            },
            *[
                {"role": "tool", "tool_call_id": c.id, "content": f"{c.arguments['city']}: sunny"}
                for c in calls
            ],
        ]
    else:
        assert sent["input"][1:] == [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Let me check."}],
            },
            *[
                {
                    "type": "function_call",
                    "call_id": c.id,
                    "name": "get_weather",
                    "arguments": fake_args(c),
                }
                for c in calls
            ],
            *[
                {
                    "type": "function_call_output",
                    "call_id": c.id,
                    "output": f"{c.arguments['city']}: sunny",
                }
                for c in calls
            ],
        ]


def strip_ids(block):
    import msgspec

    if isinstance(block, ThinkingBlock):
        assert block.provider_data["id"].startswith("rs_")
        return msgspec.structs.replace(block, provider_data=None)
    return block


def fake_args(call: ToolCall) -> str:
    import json

    return json.dumps(call.arguments, separators=(",", ":"))


@pytest.mark.parametrize("api", APIS)
async def test_tool_call_with_invalid_json_keeps_the_raw_text(fake_provider, api):
    fake_provider.push(Reply(tool_calls=[ToolCall("get_weather", '{"city": "Par', id="c9")]))
    response = collect(await run(provider(fake_provider, api), ask(api, tools=[WEATHER])))
    [call] = response.blocks
    assert (call.arguments, call.raw_arguments) == ({}, '{"city": "Par')


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("finish", ["stop", "length", "tool_use", "content_filter"])
async def test_finish_reasons(fake_provider, api, finish):
    calls = [ToolCall("get_weather", {"city": "Oslo"}, id="c1")] if finish == "tool_use" else []
    fake_provider.push(Reply(text="partial", tool_calls=calls, finish=finish))
    events = await run(provider(fake_provider, api), ask(api, tools=[WEATHER]))
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].finish_reason == finish
    assert events[-1].usage == Usage(input_tokens=12, output_tokens=34)


async def test_responses_failed_is_an_error_event(fake_provider):
    fake_provider.push(Reply(text="half", finish="error"))
    events = await run(provider(fake_provider, "responses"), ask("responses"))
    assert isinstance(events[-1], ErrorEvent)
    assert (events[-1].error.category, events[-1].error.provider_code) == ("server", "server_error")
    assert events[-1].error.retryable


ERRORS = [
    # status, code, headers, category, retry_after
    (401, "invalid_api_key", {}, "auth", None),
    (429, "insufficient_quota", {}, "billing", None),
    (429, "rate_limit_exceeded", {"retry-after": "7"}, "rate_limit", 7.0),
    (429, "rate_limit_exceeded", {"retry-after-ms": "1500", "retry-after": "2"}, "rate_limit", 1.5),
    (400, "context_length_exceeded", {}, "context_length", None),
    (404, "model_not_found", {}, "not_found", None),
    (400, None, {}, "invalid_request", None),
    (500, "server_error", {}, "server", None),
    (503, None, {"retry-after": "3"}, "overloaded", 3.0),
]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(("status", "code", "headers", "category", "retry_after"), ERRORS)
async def test_errors(fake_provider, api, status, code, headers, category, retry_after):
    fault = HttpError(status, message=f"scripted {code}", code=code, headers=headers)
    fake_provider.push(Reply(fault=fault), Reply(fault=fault))
    events = await run(provider(fake_provider, api), ask(api))
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    err = events[0].error
    assert (err.category, err.http_status, err.retry_after) == (category, status, retry_after)
    assert err.message == f"scripted {code}"
    assert err.provider == "openai"
    assert KEY not in str(err)
    with pytest.raises(ProviderFailure) as info:
        with trio.fail_after(10):
            await provider(fake_provider, api).complete(ask(api))
    assert info.value.error == err


@pytest.mark.parametrize("api", APIS)
async def test_disconnect_mid_stream_is_an_error_event(fake_provider, api):
    # cut after the first few text deltas: the Responses preamble is longer
    cut = {"chat": 900, "responses": 3000}[api]
    fake_provider.push(
        Reply(text="a long answer " * 40, pieces=40, fault=Disconnect(after_bytes=cut))
    )
    events = await run(provider(fake_provider, api), ask(api))
    assert any(isinstance(e, TextDelta) for e in events)
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].error.category == "network" and events[-1].error.retryable


@pytest.mark.parametrize("api", APIS)
async def test_stalled_stream_times_out(fake_provider, api):
    fake_provider.push(Reply(text="slow answer", pieces=5, fault=Stall(after_bytes=400)))
    events = await run(provider(fake_provider, api, read_timeout=0.3), ask(api))
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].error.category == "timeout"


@pytest.mark.parametrize("api", APIS)
async def test_server_that_never_answers_times_out(fake_provider, api):
    from tests.fakes.script import NeverAnswer

    fake_provider.push(Reply(fault=NeverAnswer()))
    events = await run(provider(fake_provider, api, read_timeout=0.3), ask(api))
    assert [e.error.category for e in events if isinstance(e, ErrorEvent)] == ["timeout"]


CHUNK = (
    b'data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},'
    b'"finish_reason":null}]}\n\n'
)
FINISH = b'data: {"id":"c1","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'


async def test_chat_stream_closed_before_the_end_is_a_network_error(fake_provider):
    fake_provider.push(Reply(fault=Raw(CHUNK, content_type="text/event-stream")))
    events = await run(provider(fake_provider, "chat"), ask("chat"))
    assert [type(e).__name__ for e in events] == ["StartEvent", "TextDelta", "ErrorEvent"]
    assert events[-1].error.category == "network"


async def test_chat_finish_without_usage_or_done_still_ends_with_done(fake_provider):
    fake_provider.push(Reply(fault=Raw(CHUNK + FINISH, content_type="text/event-stream")))
    events = await run(provider(fake_provider, "chat"), ask("chat"))
    assert events[-1] == DoneEvent(finish_reason="stop", usage=Usage(), model="gpt-4o")


async def test_chat_error_in_the_middle_of_a_stream(fake_provider):
    error = b'data: {"error":{"message":"The server had an error","type":"server_error","code":null}}\n\n'
    fake_provider.push(Reply(fault=Raw(CHUNK + error + FINISH, content_type="text/event-stream")))
    events = await run(provider(fake_provider, "chat"), ask("chat"))
    assert [type(e).__name__ for e in events] == ["StartEvent", "TextDelta", "ErrorEvent"]
    assert (events[-1].error.category, events[-1].error.message) == (
        "server",
        "The server had an error",
    )


async def test_responses_error_event_in_the_middle_of_a_stream(fake_provider):
    body = (
        b'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","model":"gpt-5"}}\n\n'
        b'event: error\ndata: {"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null}\n\n'
    )
    fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
    events = await run(provider(fake_provider, "responses"), ask("responses"))
    assert isinstance(events[-1], ErrorEvent)
    assert (events[-1].error.category, events[-1].error.provider_code) == (
        "rate_limit",
        "rate_limit_exceeded",
    )


async def test_error_object_in_a_200_json_body(fake_provider):
    body = b'{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}'
    fake_provider.push(Reply(fault=Raw(body)))
    events = await run(provider(fake_provider, "chat"), ask("chat"))
    assert [e.error.category for e in events] == ["auth"]


async def test_unknown_events_and_garbage_are_skipped(fake_provider):
    body = (
        b": keep-alive comment\n\n"
        b'event: response.created\ndata: {"type":"response.created","response":{"id":"r","model":"gpt-5"}}\n\n'
        b'data: {"type":"response.something_new","payload":[1,2,3]}\n\n'
        b"data: {not json\n\n"
        b'data: {"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws"}}\n\n'
        b'data: {"type":"response.output_item.added","output_index":1,"item":{"type":"message","id":"m"}}\n\n'
        b'data: {"type":"response.output_text.delta","output_index":1,"delta":"ok"}\n\n'
        b'data: {"type":"response.completed","response":{"id":"r","status":"completed","usage":null}}\n\n'
    )
    fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
    events = await run(provider(fake_provider, "responses"), ask("responses"))
    assert collect(events).blocks == [TextBlock(text="ok")]
    assert events[-1].finish_reason == "stop"


@pytest.mark.parametrize("api", APIS)
async def test_complete_equals_stream(fake_provider, api):
    reply = dict(
        thinking="hmm" if api == "responses" else "",
        text="Answer.",
        tool_calls=[ToolCall("get_weather", {"city": "Lima"}, id="c7")],
        usage=FakeUsage(input=40, output=20, thinking=8, cached=16),
    )
    fake_provider.push(Reply(**reply), Reply(**reply))
    req = ask(api, tools=[WEATHER], thinking=ThinkingConfig(level="low"))
    streamed = collect(await run(provider(fake_provider, api), req), provider="openai")
    with trio.fail_after(10):
        whole = await provider(fake_provider, api).complete(req)
    # the fake numbers item ids by request: compare the rest
    assert [strip_ids(b) for b in whole.blocks] == [strip_ids(b) for b in streamed.blocks]
    assert (whole.usage, whole.finish_reason, whole.model) == (
        streamed.usage,
        streamed.finish_reason,
        streamed.model,
    )
    assert whole.usage == Usage(
        input_tokens=40, output_tokens=20, thinking_tokens=8, cached_tokens=16
    )
    assert "stream" not in fake_provider.requests[1].json


async def test_missing_key_is_an_error_event_and_no_request(fake_provider):
    settings = replace(openai_settings(fake_provider.base_url + "/v1"), api_key=None)
    events = await run(make_provider(settings), ask("chat"))
    assert [e.error.category for e in events] == ["auth"]
    assert "OPENAI_API_KEY" in events[0].error.message
    assert fake_provider.requests == []


async def test_base_url_without_v1_prefix(fake_provider):
    fake_provider.push(Reply(text="ok"))
    prov = make_provider(openai_settings(fake_provider.base_url))
    assert collect(await run(prov, ask("chat"))).blocks == [TextBlock(text="ok")]
    assert fake_provider.requests[0].path == "/chat/completions"
