"""A 200 answer to a streaming request whose body is the whole JSON response.

Proxies and some servers ignore ``stream: true`` and send the non-streamed
answer. HttpProvider decodes it with the codec's ``decode_response`` and
delivers the events a stream would have sent, so the turn completes with the
same blocks, signatures, tool calls and usage. An error object in a 200 stays
an error; any other body (a captive portal's HTML page) is an error naming
the content type and quoting the body's start.

Everything goes through the real HttpProvider and the fake provider server
over loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from providers.accumulate import collect, events_of
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
    Response,
    StartEvent,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
)
from tests.fakes.script import Raw, Reply, ToolCall
from tests.fakes.script import Usage as FakeUsage
from tests.fakes.server import FakeProvider

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"

WIRES = {
    # wire api: (catalog provider, key variable, path under the fake, model)
    "messages": ("anthropic", "ANTHROPIC_API_KEY", "", "claude-sonnet-4-5"),
    "chat": ("openai", "OPENAI_API_KEY", "/v1", "gpt-4o"),
    "responses": ("openai", "OPENAI_API_KEY", "/v1", "o3-mini"),
    "generate_content": ("google", "GEMINI_API_KEY", "/v1beta", "gemini-2.5-flash"),
}
KEY = "test-key-Lw3Nq5Rz7Tv9Xb2Dc4"


def provider_for(wire: str, fake: FakeProvider) -> HttpProvider:
    name, env, path, _ = WIRES[wire]
    return make_provider(settings_for(name, env={env: KEY}, base_url=fake.base_url + path), api=wire)  # type: ignore[arg-type]


def ask(wire: str) -> Request:
    return Request(model=WIRES[wire][3], messages=[Message(role="user", content=[TextBlock(text="hi")])])


async def stream(provider: HttpProvider, request: Request) -> list:
    async with provider.stream(request) as events:
        return [e async for e in events]


# ------------------------------------------------------------ recorded bodies


def _is_responses(raw: bytes) -> bool:
    return any(m in raw for m in (b'"object": "response"', b'"object":"response"'))


def recorded() -> list[tuple[str, str]]:
    """(wire api, file) for every recorded non-streamed body."""
    out = []
    for folder, wire in (
        ("anthropic", "messages"),
        ("openai", None),
        ("deepseek", "chat"),
        ("xai", "chat"),
        ("openai-compatible", "chat"),
        ("google", "generate_content"),
    ):
        for path in sorted((RECORDED / folder).glob("*.json")):
            api = wire or ("responses" if _is_responses(path.read_bytes()) else "chat")
            out.append((api, f"{folder}/{path.name}"))
    return out


def test_every_wire_has_recorded_bodies():
    wires = [w for w, _ in recorded()]
    assert {w: wires.count(w) >= 3 for w in WIRES} == dict.fromkeys(WIRES, True)


def _error_object(body: bytes) -> bool:
    data = json.loads(body)
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    return isinstance(data, dict) and (data.get("error") is not None or data.get("type") == "error")


@pytest.mark.parametrize(("wire", "name"), recorded())
async def test_a_recorded_json_body_streams_into_what_decode_response_gives(
    fake_provider: FakeProvider, wire: str, name: str
):
    body = (RECORDED / name).read_bytes()
    provider = provider_for(wire, fake_provider)
    if isinstance(provider.codec, GeminiCodec):
        provider.codec.new_id = lambda: "call_made_up"  # Gemini sends calls without ids
    request = ask(wire)
    try:
        fake_provider.push(Reply(fault=Raw(body, content_type="application/json; charset=utf-8")))
        events = await stream(provider, request)
    finally:
        await provider.aclose()
    codec = provider.codec
    if _error_object(body):
        # an error object stays an error, read as the error it says it is
        assert events == [ErrorEvent(error=codec.decode_error(200, body, {}))]
        return
    try:
        expected = codec.decode_response(body, request)
    except ProviderFailure as failure:
        assert events == [ErrorEvent(error=failure.error)]
        return
    assert isinstance(events[0], StartEvent) and isinstance(events[-1], DoneEvent)
    assert sum(isinstance(e, DoneEvent | ErrorEvent) for e in events) == 1
    assert collect(events, provider=provider.name) == expected


def test_recorded_bodies_hold_what_a_turn_needs():
    # the comparison above is worth something only if the bodies have content
    kinds: set[str] = set()
    for wire, name in recorded():
        body = (RECORDED / name).read_bytes()
        if _error_object(body):
            continue
        s = WIRES[wire]
        codec = make_provider(settings_for(s[0], env={s[1]: KEY}), api=wire).codec  # type: ignore[arg-type]
        try:
            r = codec.decode_response(body, ask(wire))
        except ProviderFailure:
            continue
        kinds |= {type(b).__name__ for b in r.blocks}
        kinds |= {"signature" for b in r.blocks if getattr(b, "signature", None)}
        kinds |= {"usage" for _ in [0] if r.usage.output_tokens}
    assert kinds >= {"TextBlock", "ThinkingBlock", "ToolCallBlock", "signature", "usage"}


# ------------------------------------------------------------ the fake's own bodies

REPLY = dict(
    text="The answer is 42.",
    thinking="Let me think about it.",
    thinking_signature="c2lnbmF0dXJl",
    tool_calls=[ToolCall(name="lookup", arguments={"q": "life", "n": [1, 2.5, None]}, id="call_1")],
    usage=FakeUsage(input=120, output=80, thinking=30, cached=64),
)


def without_ids(blocks: list) -> list:
    """The fake numbers item ids by request: two requests, two ids."""
    return [
        msgspec.structs.replace(b, provider_data={k: v for k, v in b.provider_data.items() if k != "id"} or None)
        if getattr(b, "provider_data", None)
        else b
        for b in blocks
    ]


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_json_answer_gives_the_turn_a_stream_would(fake_provider: FakeProvider, wire: str):
    provider = provider_for(wire, fake_provider)
    try:
        fake_provider.push(Reply(**REPLY), Reply(**REPLY, stream=False))
        streamed = collect(await stream(provider, ask(wire)), provider=provider.name)
        events = await stream(provider, ask(wire))
    finally:
        await provider.aclose()
    assert fake_provider.requests[1].headers["content-type"] == "application/json"
    assert not any(isinstance(e, ErrorEvent) for e in events), events
    whole = collect(events, provider=provider.name)
    assert without_ids(whole.blocks) == without_ids(streamed.blocks)
    assert (whole.usage, whole.finish_reason, whole.model) == (streamed.usage, streamed.finish_reason, streamed.model)
    assert whole.finish_reason == "tool_use" and whole.usage.output_tokens == 80
    calls = [b for b in whole.blocks if isinstance(b, ToolCallBlock)]
    assert [(c.name, c.arguments) for c in calls] == [("lookup", {"q": "life", "n": [1, 2.5, None]})]


# ------------------------------------------------------------ anything else in a 200


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_portal_page_is_an_error_naming_it(fake_provider: FakeProvider, wire: str):
    page = b"<!DOCTYPE html>\n<html><head><title>Hotel WiFi</title></head><body>Please log in " + b"." * 5000
    provider = provider_for(wire, fake_provider)
    try:
        fake_provider.push(Reply(fault=Raw(page, content_type="text/html; charset=utf-8")))
        [event] = await stream(provider, ask(wire))
        fake_provider.push(Reply(fault=Raw(b"Service temporarily rerouted", content_type="text/plain")))
        [plain] = await stream(provider, ask(wire))
        fake_provider.push(Reply(fault=Raw(b"", content_type="text/html")))
        [empty] = await stream(provider, ask(wire))
    finally:
        await provider.aclose()
    assert isinstance(event, ErrorEvent)
    error = event.error
    assert (error.category, error.http_status, error.provider) == ("server", 200, provider.name)
    assert "'text/html; charset=utf-8'" in error.message
    assert "<!DOCTYPE html> <html><head><title>Hotel WiFi</title></head><body>Please log in" in error.message
    assert len(error.message) < 400
    assert isinstance(plain, ErrorEvent) and "'text/plain'" in plain.error.message
    assert "Service temporarily rerouted" in plain.error.message
    # an empty 200 says it ended before any event, as it always did
    assert isinstance(empty, ErrorEvent) and empty.error.category == "network"


async def test_an_event_stream_under_another_content_type_is_still_read(fake_provider: FakeProvider):
    # some servers label their SSE text/plain or send no content type: the body says what it is
    provider = provider_for("chat", fake_provider)
    chunk = {"id": "c", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": "hello"}, "finish_reason": "stop"}]}
    body = b"\n\ndata: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n"
    try:
        fake_provider.push(Reply(fault=Raw(body, content_type="text/plain")), Reply(fault=Raw(body, content_type="")))
        first = await stream(provider, ask("chat"))
        second = await stream(provider, ask("chat"))
    finally:
        await provider.aclose()
    for events in (first, second):
        assert collect(events).blocks == [TextBlock(text="hello")], events


async def test_an_error_object_in_a_200_stays_an_error(fake_provider: FakeProvider):
    provider = provider_for("messages", fake_provider)
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    try:
        fake_provider.push(Reply(fault=Raw(json.dumps(overloaded).encode())))
        [event] = await stream(provider, ask("messages"))
    finally:
        await provider.aclose()
    assert isinstance(event, ErrorEvent)
    assert (event.error.category, event.error.http_status, event.error.retryable) == ("overloaded", 200, True)


async def test_gemini_chunks_as_a_json_array(fake_provider: FakeProvider):
    # streamGenerateContent asked without alt=sse (a proxy dropped the query) answers a JSON array
    chunks = [
        {"candidates": [{"content": {"parts": [{"text": "Hel"}], "role": "model"}}], "modelVersion": "gemini-2.5-flash"},
        {"candidates": [{"content": {"parts": [{"text": "lo"}], "role": "model"}, "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}, "modelVersion": "gemini-2.5-flash"},
    ]  # fmt: skip
    provider = provider_for("generate_content", fake_provider)
    try:
        fake_provider.push(Reply(fault=Raw(json.dumps(chunks).encode())))
        events = await stream(provider, ask("generate_content"))
    finally:
        await provider.aclose()
    r = collect(events, provider="google")
    assert (r.blocks, r.finish_reason, r.usage) == ([TextBlock(text="Hello")], "stop", Usage(input_tokens=3, output_tokens=2))


# ------------------------------------------------------------ events_of, the inverse of collect


def test_events_of_folds_back_into_the_same_response():
    response = Response(
        blocks=[
            ThinkingBlock(text="hmm", signature="s1", provider="anthropic", provider_data={"id": "rs_1"}),
            ThinkingBlock(signature="opaque", redacted=True, provider="anthropic"),
            TextBlock(text="", signature="sig-on-empty-text", provider="anthropic"),
            TextBlock(text="answer"),
            ToolCallBlock(id="c1", name="f", arguments={"a": [1, {"b": None}], "c": 1.5}),
            ToolCallBlock(id="c2", name="g", raw_arguments="[1, 2]"),
            ToolCallBlock(id="c3", name="h", signature="ts", provider="anthropic"),
        ],
        finish_reason="tool_use",
        usage=Usage(input_tokens=10, output_tokens=5, thinking_tokens=2, cached_tokens=4, cache_write_tokens=1),
        model="m-1",
        provider="anthropic",
        provider_data={"id": "msg_1", "stop_reason": "tool_use"},
    )
    assert collect(events_of(response), provider="anthropic") == response
