"""The Gemini adapter against the fake server over real loopback HTTP."""

from __future__ import annotations

import json
import re

import msgspec
import pytest
import trio

from providers.accumulate import collect
from providers.google.codec import GeminiCodec
from providers.http import HttpProvider
from providers.registry import make_provider
from providers.settings import settings_for
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
    ToolCallStart,
    ToolResultBlock,
    Usage,
)
from tests.fakes.script import (
    Disconnect,
    HttpError,
    Malformed,
    Raw,
    Reply,
    Stall,
    ToolCall,
)
from tests.fakes.script import Usage as FakeUsage
from tests.fakes.server import FakeProvider

from .conftest import KEY, settings

CALL_ID = re.compile(r"^call_[0-9a-f]{32}$")


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def req(*messages: Message, model: str = "gemini-2.5-flash", **kw) -> Request:
    return Request(model=model, messages=list(messages) or [user("hi")], **kw)


async def run(provider: HttpProvider, request: Request) -> list:
    with trio.fail_after(10):
        async with provider.stream(request) as events:
            return [e async for e in events]


def sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


# ------------------------------------------------------------------ text


async def test_text_stream_events_request_and_key_header(fake_provider: FakeProvider, gemini):
    fake_provider.push(Reply(text="Hello there, world", pieces=3))
    events = await run(gemini, req())
    rid = "fakeResp000000AbCdEfGh"
    assert events == [
        StartEvent(model="gemini-2.5-flash", provider_data={"response_id": rid}),
        TextDelta(index=0, text="Hello "),
        TextDelta(index=0, text="there,"),
        TextDelta(index=0, text=" world"),
        DoneEvent(
            finish_reason="stop",
            usage=Usage(input_tokens=12, output_tokens=34),
            model="gemini-2.5-flash",
            provider_data={"finish_reason": "STOP", "response_id": rid},
        ),
    ]
    [r] = fake_provider.requests
    assert (r.method, r.path, r.query) == (
        "POST",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        {"alt": "sse"},
    )
    assert r.headers["x-goog-api-key"] == KEY
    assert KEY not in r.target
    assert r.headers["content-type"] == "application/json"
    assert r.json == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"maxOutputTokens": 4096, "thinkingConfig": {"thinkingBudget": 0}},
    }


async def test_complete_non_streamed(fake_provider: FakeProvider, gemini):
    fake_provider.push(Reply(text="Bonjour", usage=FakeUsage(input=5, output=9, cached=2)))
    resp = await gemini.complete(req(user("salut"), model="gemini-2.0-flash"))
    assert resp.blocks == [TextBlock(text="Bonjour")]
    assert resp.finish_reason == "stop"
    assert resp.usage == Usage(input_tokens=5, output_tokens=9, cached_tokens=2)
    assert resp.model == "gemini-2.0-flash"
    assert resp.provider == "google"
    [r] = fake_provider.requests
    assert r.path == "/v1beta/models/gemini-2.0-flash:generateContent"
    assert r.query == {}
    # gemini-2.0-flash cannot think: no thinkingConfig at all
    assert r.json["generationConfig"] == {"maxOutputTokens": 4096}


@pytest.mark.parametrize("prefix", ["/v1beta", "/v1", ""])
async def test_every_path_prefix(fake_provider: FakeProvider, prefix: str):
    fake_provider.push(Reply(text="ok", pieces=1))
    provider = make_provider(settings(fake_provider.base_url + prefix))
    try:
        tool = Tool(
            name="f",
            parameters={"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        )
        events = await run(provider, req(tools=[tool]))
    finally:
        await provider.aclose()
    assert collect(events).blocks == [TextBlock(text="ok")]
    [r] = fake_provider.requests
    assert r.path == f"{prefix}/models/gemini-2.5-flash:streamGenerateContent"
    decl = r.json["tools"][0]["functionDeclarations"][0]
    if prefix == "/v1":  # no parametersJsonSchema there: the Schema subset
        assert decl == {
            "name": "f",
            "parameters": {
                "type": "OBJECT",
                "properties": {"a": {"type": "STRING", "nullable": True}},
            },
        }
    else:
        assert decl == {"name": "f", "parametersJsonSchema": tool.parameters}


async def test_count_tokens(fake_provider: FakeProvider, gemini):
    fake_provider.push(Reply(usage=FakeUsage(input=77)))
    request = req(
        user("count me"), system=[TextBlock(text="be brief")], model="gemini-3-pro-preview"
    )
    assert await gemini.count_tokens(request) == 77
    [r] = fake_provider.requests
    assert r.path == "/v1beta/models/gemini-3-pro-preview:countTokens"
    assert r.headers["x-goog-api-key"] == KEY
    assert r.json == {
        "generateContentRequest": {
            "model": "models/gemini-3-pro-preview",
            "contents": [{"role": "user", "parts": [{"text": "count me"}]}],
            "systemInstruction": {"parts": [{"text": "be brief"}]},
        }
    }


# ------------------------------------------------------------------ thinking


async def test_thoughts_and_text(fake_provider: FakeProvider, gemini):
    fake_provider.push(
        Reply(
            thinking="Weighing the options carefully.",
            thinking_signature="c2lnLXRob3VnaHQ=",
            text="Take the train.",
            text_signature="c2lnLXRleHQ=",
            pieces=2,
            usage=FakeUsage(input=20, output=50, thinking=30),
        )
    )
    request = req(model="gemini-3-pro-preview", thinking=ThinkingConfig(level="high"))
    events = await run(gemini, request)
    kinds = [(type(e).__name__, getattr(e, "index", None)) for e in events]
    assert kinds == [
        ("StartEvent", None),
        ("ThinkingDelta", 0),
        ("ThinkingDelta", 0),
        ("TextDelta", 1),
        ("TextDelta", 1),
        ("TextDelta", 1),  # the empty part that carries the text signature
        ("DoneEvent", None),
    ]
    resp = collect(events, provider="google")
    assert resp.blocks == [
        ThinkingBlock(
            text="Weighing the options carefully.", signature="c2lnLXRob3VnaHQ=", provider="google"
        ),
        TextBlock(text="Take the train.", signature="c2lnLXRleHQ=", provider="google"),
    ]
    assert resp.usage == Usage(input_tokens=20, output_tokens=50, thinking_tokens=30)
    assert fake_provider.requests[0].json["generationConfig"] == {
        "maxOutputTokens": 4096,
        "thinkingConfig": {"thinkingLevel": "HIGH", "includeThoughts": True},
    }


# ------------------------------------------------------------------ tools


async def test_parallel_calls_generated_ids_and_results_sent_back(
    fake_provider: FakeProvider, gemini
):
    fake_provider.push(
        Reply(
            tool_calls=[
                ToolCall("get_weather", {"city": "Paris"}, signature="c2lnLWNhbGw="),
                ToolCall("get_time", {"tz": "Europe/Paris"}),
            ]
        ),
        Reply(text="Sunny, 3pm."),
    )
    tools = [
        Tool(
            name="get_weather",
            parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        ),
        Tool(
            name="get_time", parameters={"type": "object", "properties": {"tz": {"type": "string"}}}
        ),
    ]
    first = req(user("weather and time in Paris?"), model="gemini-3-flash-preview", tools=tools)
    events = await run(gemini, first)
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.index, s.name, s.signature) for s in starts] == [
        (0, "get_weather", "c2lnLWNhbGw="),
        (1, "get_time", None),
    ]
    ids = [s.id for s in starts]
    assert all(CALL_ID.match(i) for i in ids) and ids[0] != ids[1]
    # whole calls: start, one delta, done - together
    assert [type(e).__name__ for e in events[1:7]] == [
        "ToolCallStart", "ToolCallDelta", "ToolCallDone",
        "ToolCallStart", "ToolCallDelta", "ToolCallDone",
    ]  # fmt: skip
    assert events[2] == ToolCallDelta(index=0, arguments='{"city":"Paris"}')
    resp = collect(events, provider="google")
    assert resp.finish_reason == "tool_use"
    calls = [b for b in resp.blocks if isinstance(b, ToolCallBlock)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (ids[0], "get_weather", {"city": "Paris"}),
        (ids[1], "get_time", {"tz": "Europe/Paris"}),
    ]

    # results in reverse order, names left out: looked up by id
    history = [
        *first.messages,
        resp.to_message(),
        Message(role="tool", content=[ToolResultBlock(tool_call_id=ids[1], content="15:00")]),
        Message(
            role="tool", content=[ToolResultBlock(tool_call_id=ids[0], content='{"temp_c": 18}')]
        ),
    ]
    second = Request(model=first.model, messages=history, tools=tools)
    events = await run(gemini, second)
    assert collect(events).blocks == [TextBlock(text="Sunny, 3pm.")]
    body = fake_provider.requests[1].json
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "weather and time in Paris?"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "c2lnLWNhbGw=",
                },
                {"functionCall": {"name": "get_time", "args": {"tz": "Europe/Paris"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_time", "response": {"result": "15:00"}}},
                {"functionResponse": {"name": "get_weather", "response": {"temp_c": 18}}},
            ],
        },
    ]


async def test_ids_from_gemini_are_kept_and_echoed(fake_provider: FakeProvider, gemini):
    fake_provider.push(
        Reply(tool_calls=[ToolCall("lookup", {"q": "x"}, id="fc-abc123", signature="c2ln")]),
        Reply(text="done"),
    )
    first = req(user("look it up"), model="gemini-3-pro-preview")
    resp = collect(await run(gemini, first), provider="google")
    [call] = resp.blocks
    assert call == ToolCallBlock(
        id="fc-abc123", name="lookup", arguments={"q": "x"}, signature="c2ln", provider="google"
    )
    history = [
        *first.messages,
        resp.to_message(),
        Message(
            role="tool",
            content=[ToolResultBlock(tool_call_id="fc-abc123", content="no match", is_error=True)],
        ),
    ]
    await run(gemini, Request(model=first.model, messages=history))
    assert fake_provider.requests[1].json["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "lookup", "args": {"q": "x"}, "id": "fc-abc123"},
                    "thoughtSignature": "c2ln",
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "lookup",
                        "response": {"error": "no match"},
                        "id": "fc-abc123",
                    }
                }
            ],
        },
    ]


# ------------------------------------------------------------------ signatures


SIGNED_STREAM = sse(
    {"candidates": [{"content": {"parts": [{"text": "Let me think", "thought": True}], "role": "model"}, "index": 0}],
     "modelVersion": "gemini-3-pro-preview", "responseId": "r1"},
    {"candidates": [{"content": {"parts": [{"text": " more.", "thought": True, "thoughtSignature": "U0lHX1RIT1VHSFQ="}], "role": "model"}, "index": 0}],
     "modelVersion": "gemini-3-pro-preview", "responseId": "r1"},
    {"candidates": [{"content": {"parts": [{"text": "Hello", "thoughtSignature": "U0lHX1RFWFQ="}], "role": "model"}, "index": 0}],
     "modelVersion": "gemini-3-pro-preview", "responseId": "r1"},
    {"candidates": [{"content": {"parts": [{"text": " world"}], "role": "model"}, "index": 0}],
     "modelVersion": "gemini-3-pro-preview", "responseId": "r1"},
    {"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "lookup", "args": {"q": "x"}}, "thoughtSignature": "U0lHX0NBTEw="},
        {"functionCall": {"name": "lookup", "args": {"q": "y"}}},
    ], "role": "model"}, "finishReason": "STOP", "index": 0}],
     "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 8, "thoughtsTokenCount": 40, "totalTokenCount": 58},
     "modelVersion": "gemini-3-pro-preview", "responseId": "r1"},
)  # fmt: skip


async def test_thought_signatures_echoed_exactly_on_their_parts(
    fake_provider: FakeProvider, gemini
):
    fake_provider.push(
        Reply(fault=Raw(SIGNED_STREAM, content_type="text/event-stream")), Reply(text="ok")
    )
    first = req(user("go"), model="gemini-3-pro-preview", thinking=ThinkingConfig(level="low"))
    resp = collect(await run(gemini, first), provider="google")
    ids = [b.id for b in resp.blocks if isinstance(b, ToolCallBlock)]
    assert resp.blocks == [
        ThinkingBlock(text="Let me think more.", signature="U0lHX1RIT1VHSFQ=", provider="google"),
        TextBlock(text="Hello", signature="U0lHX1RFWFQ=", provider="google"),
        TextBlock(text=" world"),  # after a signed part: a block of its own
        ToolCallBlock(id=ids[0], name="lookup", arguments={"q": "x"}, signature="U0lHX0NBTEw=",
                      provider="google", provider_data={"synthetic_id": True}),
        ToolCallBlock(id=ids[1], name="lookup", arguments={"q": "y"},
                      provider="google", provider_data={"synthetic_id": True}),
    ]  # fmt: skip
    assert resp.usage == Usage(input_tokens=10, output_tokens=48, thinking_tokens=40)

    # the history goes through the store as JSON and comes back
    stored = msgspec.json.encode(resp.to_message(thinking_level="low"))
    message = msgspec.json.decode(stored, type=Message)
    history = [
        *first.messages,
        message,
        Message(role="tool", content=[ToolResultBlock(tool_call_id=ids[0], content="1"),
                                      ToolResultBlock(tool_call_id=ids[1], content="2")]),
    ]  # fmt: skip
    await run(gemini, Request(model=first.model, messages=history))
    assert fake_provider.requests[1].json["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "Let me think more.", "thought": True, "thoughtSignature": "U0lHX1RIT1VHSFQ="},
            {"text": "Hello", "thoughtSignature": "U0lHX1RFWFQ="},
            {"text": " world"},
            {
                "functionCall": {"name": "lookup", "args": {"q": "x"}},
                "thoughtSignature": "U0lHX0NBTEw=",
            },
            {"functionCall": {"name": "lookup", "args": {"q": "y"}}},
        ],
    }


async def test_foreign_history_sends_no_foreign_signatures(fake_provider: FakeProvider, gemini):
    foreign = Message(
        role="assistant",
        provider="anthropic",
        content=[
            ThinkingBlock(text="claude thinking", signature="ANTHROPIC-SIG", provider="anthropic"),
            TextBlock(text="Calling."),
            ToolCallBlock(
                id="toolu_01",
                name="lookup",
                arguments={"q": "z"},
                signature="X",
                provider="anthropic",
            ),
        ],
    )
    history = [
        user("q"),
        foreign,
        Message(role="tool", content=[ToolResultBlock(tool_call_id="toolu_01", content="r")]),
    ]
    fake_provider.push(Reply(text="a"), Reply(text="b"))
    await run(gemini, Request(model="gemini-3-pro-preview", messages=history))
    await run(gemini, Request(model="gemini-2.5-pro", messages=history))
    g3, g25 = (r.json["contents"][1:] for r in fake_provider.requests)
    assert g3 == [
        {
            "role": "model",
            "parts": [
                {"text": "Calling."},
                {
                    "functionCall": {"name": "lookup", "args": {"q": "z"}},
                    "thoughtSignature": "skip_thought_signature_validator",
                },
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "lookup", "response": {"result": "r"}}}],
        },
    ]
    assert g25[0]["parts"][1] == {"functionCall": {"name": "lookup", "args": {"q": "z"}}}
    assert "ANTHROPIC-SIG" not in fake_provider.requests[0].body.decode()


# ------------------------------------------------------------------ finish and faults


async def test_safety_block(fake_provider: FakeProvider, gemini):
    fake_provider.push(Reply(finish="content_filter"))
    events = await run(gemini, req())
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].finish_reason == "content_filter"
    assert events[-1].provider_data["finish_reason"] == "SAFETY"
    assert collect(events).blocks == []


async def test_prompt_feedback_block(fake_provider: FakeProvider, gemini):
    body = sse(
        {
            "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
            "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
            "modelVersion": "gemini-2.5-flash",
            "responseId": "rb",
        }
    )
    fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
    events = await run(gemini, req())
    assert events[-1] == DoneEvent(
        finish_reason="content_filter",
        usage=Usage(input_tokens=7),
        model="gemini-2.5-flash",
        provider_data={"block_reason": "PROHIBITED_CONTENT", "response_id": "rb"},
    )


async def test_429_with_retry_info(fake_provider: FakeProvider, gemini):
    msg = "You exceeded your current quota, please check your plan and billing details."
    fake_provider.push(Reply(fault=HttpError(429, msg)), Reply(fault=HttpError(429, msg)))
    [event] = await run(gemini, req())
    assert isinstance(event, ErrorEvent)
    e = event.error
    assert (e.category, e.http_status, e.retry_after, e.retryable, e.provider_code) == (
        "rate_limit", 429, 30.0, True, "RESOURCE_EXHAUSTED",
    )  # fmt: skip
    assert e.message == msg
    with pytest.raises(ProviderFailure) as info:
        await gemini.complete(req())
    assert info.value.error.retry_after == 30.0
    assert KEY not in str(info.value)


async def test_503_overloaded(fake_provider: FakeProvider, gemini):
    fake_provider.push(
        Reply(fault=HttpError(503, "The model is overloaded. Please try again later."))
    )
    [event] = await run(gemini, req())
    assert isinstance(event, ErrorEvent)
    assert (event.error.category, event.error.http_status, event.error.retryable) == (
        "overloaded",
        503,
        True,
    )
    assert event.error.provider_code == "UNAVAILABLE"


async def test_disconnect_mid_stream(fake_provider: FakeProvider, gemini):
    fake_provider.push(
        Reply(text="abcdefghijklmnopqrstuvwxyz" * 4, pieces=8, fault=Disconnect(after_bytes=400))
    )
    events = await run(gemini, req())
    assert isinstance(events[0], StartEvent)
    assert all(isinstance(e, TextDelta) for e in events[1:-1])
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].error.category == "network"
    assert events[-1].error.retryable


async def test_stall_hits_read_timeout(fake_provider: FakeProvider):
    fake_provider.push(Reply(text="slow text here", pieces=3, fault=Stall(after_bytes=300)))
    provider = HttpProvider(
        GeminiCodec(settings(fake_provider.base_url + "/v1beta")),
        settings(fake_provider.base_url + "/v1beta", read_timeout=0.3),
    )
    try:
        events = await run(provider, req())
    finally:
        await provider.aclose()
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].error.category == "timeout"


async def test_stream_ending_without_finish_reason(fake_provider: FakeProvider, gemini):
    body = sse({"candidates": [{"content": {"parts": [{"text": "half"}], "role": "model"}}]})
    fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
    events = await run(gemini, req())
    assert events[1] == TextDelta(index=0, text="half")
    assert isinstance(events[-1], ErrorEvent) and events[-1].error.category == "network"


async def test_error_inside_the_stream(fake_provider: FakeProvider, gemini):
    body = sse(
        {"candidates": [{"content": {"parts": [{"text": "par"}], "role": "model"}}]},
        {
            "error": {
                "code": 500,
                "message": "An internal error has occurred.",
                "status": "INTERNAL",
            }
        },
    )
    fake_provider.push(Reply(fault=Raw(body, content_type="text/event-stream")))
    events = await run(gemini, req())
    assert isinstance(events[-1], ErrorEvent)
    assert (events[-1].error.category, events[-1].error.http_status) == ("server", 500)


async def test_malformed_event(fake_provider: FakeProvider, gemini):
    fake_provider.push(Reply(text="abc", fault=Malformed(before_event=1)))
    events = await run(gemini, req())
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].error.category == "server"
    assert sum(isinstance(e, ErrorEvent) for e in events) == 1


async def test_missing_key_names_the_variables(fake_provider: FakeProvider):
    s = settings_for("google", env={}, base_url=fake_provider.base_url + "/v1beta")
    provider = make_provider(s)
    try:
        [event] = await run(provider, req())
    finally:
        await provider.aclose()
    assert isinstance(event, ErrorEvent) and event.error.category == "auth"
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in event.error.message
    assert fake_provider.requests == []


async def test_bad_key_error_is_auth_and_secret_free(fake_provider: FakeProvider, gemini):
    body = {
        "error": {
            "code": 400,
            "message": f"API key not valid. Please pass a valid API key. ({KEY})",
            "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                         "domain": "googleapis.com"}],
        }
    }  # fmt: skip
    fake_provider.push(Reply(fault=HttpError(400, body=body)))
    [event] = await run(gemini, req())
    assert event.error.category == "auth"
    assert KEY not in event.error.message and KEY not in repr(event)
    assert KEY not in repr(gemini.settings)


@pytest.mark.parametrize(
    ("finish", "wire", "expected"),
    [
        ("length", "MAX_TOKENS", "length"),
        ("error", "MALFORMED_FUNCTION_CALL", "error"),
        ("unknown", "OTHER", "unknown"),
    ],
)
async def test_finish_reasons(
    fake_provider: FakeProvider, gemini, finish: str, wire: str, expected: str
):
    fake_provider.push(Reply(text="partial", finish=finish))
    events = await run(gemini, req())
    assert (events[-1].finish_reason, events[-1].provider_data["finish_reason"]) == (expected, wire)


async def test_non_streamed_thoughts_signatures_and_calls(fake_provider: FakeProvider, gemini):
    fake_provider.push(
        Reply(
            thinking="Plan.",
            thinking_signature="dGg=",
            text="Calling.",
            text_signature="dHg=",
            tool_calls=[ToolCall("a", {"x": 1}, id="fc-1", signature="Y2E=")],
            usage=FakeUsage(input=3, output=10, thinking=4),
        )
    )
    resp = await gemini.complete(
        req(model="gemini-3-flash-preview", thinking=ThinkingConfig(level="med"))
    )
    assert resp.blocks == [
        ThinkingBlock(text="Plan.", signature="dGg=", provider="google"),
        TextBlock(text="Calling.", signature="dHg=", provider="google"),
        ToolCallBlock(id="fc-1", name="a", arguments={"x": 1}, signature="Y2E=", provider="google"),
    ]
    assert resp.finish_reason == "tool_use"
    assert resp.usage == Usage(input_tokens=3, output_tokens=10, thinking_tokens=4)


async def test_tiny_network_chunks_give_the_same_response(fake_provider: FakeProvider, gemini):
    script = {
        "thinking": "Thinking about ünïcödé 🤔 and more",
        "thinking_signature": "c2ln",
        "text": "Ответ: 42 — 答え",
        "tool_calls": [ToolCall("f", {"k": "v€"}), ToolCall("g", {})],
        "pieces": 5,
        "usage": FakeUsage(input=9, output=30, thinking=12),
    }
    fake_provider.push(Reply(**script), Reply(**script, chunk_size=3))
    whole = collect(await run(gemini, req(model="gemini-3-pro-preview")), provider="google")
    tiny = collect(await run(gemini, req(model="gemini-3-pro-preview")), provider="google")

    def no_ids(r):
        return [
            b if not isinstance(b, ToolCallBlock) else (b.name, b.arguments, b.signature)
            for b in r.blocks
        ]

    assert no_ids(tiny) == no_ids(whole)
    assert no_ids(whole) == [
        ThinkingBlock(
            text="Thinking about ünïcödé 🤔 and more", signature="c2ln", provider="google"
        ),
        TextBlock(text="Ответ: 42 — 答え"),
        ("f", {"k": "v€"}, None),
        ("g", {}, None),
    ]
    assert (tiny.usage, tiny.finish_reason) == (whole.usage, "tool_use")
