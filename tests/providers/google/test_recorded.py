"""The decoder over real recorded Gemini payloads (tests/fixtures/recorded/google).

The folder also holds Interactions API and Live API recordings (another wire
format, out of scope): they are skipped by name.
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.accumulate import collect
from providers.google._decode import GeminiStreamDecoder
from providers.google.codec import GeminiCodec
from providers.settings import settings_for
from providers.types import (
    DoneEvent,
    ErrorEvent,
    Request,
    Response,
    StartEvent,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
)

from .conftest import RECORDED, counter_ids

# Interactions API (event_type / steps) and Live API (serverContent) recordings
OTHER_APIS = {
    "basic.chunks.txt",
    "basic.json",
    "google-search.chunks.txt",
    "google-search.json",
    "multi-turn-stateful-turn1.chunks.txt",
    "multi-turn-stateful-turn1.json",
    "multi-turn-stateful-turn2.chunks.txt",
    "multi-turn-stateful-turn2.json",
    "multi-turn-stateless-turn1.chunks.txt",
    "multi-turn-stateless-turn1.json",
    "multi-turn-stateless-turn2.chunks.txt",
    "multi-turn-stateless-turn2.json",
    "structured-output.json",
    "tool-call-step1.chunks.txt",
    "tool-call-step1.json",
    "tool-call-step2.chunks.txt",
    "tool-call-step2.json",
    "google-live-speech-translation.chunks.txt",
    "google-429-retry-info.json",  # an error body: see test_errors.py
}
STREAMS = sorted(p.name for p in RECORDED.glob("*.chunks.txt") if p.name not in OTHER_APIS)
BODIES = sorted(p.name for p in RECORDED.glob("*.json") if p.name not in OTHER_APIS)


def lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (RECORDED / name).read_text().splitlines() if line.strip()]


def sig(name: str, line: int, part: int = 0) -> str:
    return lines(name)[line]["candidates"][0]["content"]["parts"][part]["thoughtSignature"]


def framed(name: str, newline: bytes = b"\r\n") -> bytes:
    payloads = (RECORDED / name).read_text(encoding="utf-8").splitlines()
    return b"".join(b"data: " + p.encode() + newline + newline for p in payloads if p.strip())


def decode(body: bytes, pieces: list[bytes] | None = None) -> list:
    dec = GeminiStreamDecoder(new_id=counter_ids())
    out: list = []
    for piece in pieces if pieces is not None else [body]:
        out += dec.feed(piece)
    return out + dec.close()


def stream_response(name: str) -> Response:
    return collect(decode(framed(name)), provider="google")


def test_the_recorded_set_is_what_these_tests_expect():
    assert STREAMS == [
        "google-reasoning-gemini3.chunks.txt",
        "google-reasoning.chunks.txt",
        "google-stream-no-args-tool-call.chunks.txt",
        "google-stream-tool-call-arguments.chunks.txt",
        "google-stream-tool-call-array-arguments-missing-terminal-function-call.chunks.txt",
        "google-text.chunks.txt",
        "google-tool-call-gemini3.chunks.txt",
        "google-tool-call.chunks.txt",
        "google-vertex-stream-tool-call-arguments-nested.1.chunks.txt",
    ]
    assert BODIES == [
        "google-reasoning-gemini3.json",
        "google-reasoning.json",
        "google-text.json",
        "google-tool-call-gemini3.json",
        "google-tool-call.json",
    ]


STRAWBERRY = 'There are **3** "r"s in strawberry.\n\n'


@pytest.mark.parametrize(
    ("name", "text", "usage"),
    [
        ("google-text.chunks.txt", STRAWBERRY + "st**r**awbe**rr**y", Usage(input_tokens=9, output_tokens=208, thinking_tokens=185)),
        ("google-reasoning.chunks.txt", STRAWBERRY + "Here is the breakdown: st**r**awbe**rr**y.",
         Usage(input_tokens=9, output_tokens=285, thinking_tokens=256)),
        ("google-reasoning-gemini3.chunks.txt", STRAWBERRY + "St**r**awbe**rr**y",
         Usage(input_tokens=9, output_tokens=325, thinking_tokens=302)),
    ],
)  # fmt: skip
def test_text_streams(name: str, text: str, usage: Usage):
    events = decode(framed(name))
    response_id = lines(name)[0]["responseId"]
    assert events[0] == StartEvent(
        model="gemini-3-pro-preview", provider_data={"response_id": response_id}
    )
    assert events[-1] == DoneEvent(
        finish_reason="stop",
        usage=usage,
        model="gemini-3-pro-preview",
        provider_data={"finish_reason": "STOP", "response_id": response_id},
    )
    resp = collect(events, provider="google")
    # the signature came on an empty text part after the text: it closes the block
    assert resp.blocks == [TextBlock(text=text, signature=sig(name, 2), provider="google")]
    assert {e.index for e in events[1:-1]} == {0}


@pytest.mark.parametrize(
    ("name", "usage"),
    [
        (
            "google-tool-call.chunks.txt",
            Usage(input_tokens=29, output_tokens=60, thinking_tokens=45),
        ),
        (
            "google-tool-call-gemini3.chunks.txt",
            Usage(input_tokens=29, output_tokens=819, thinking_tokens=804),
        ),
    ],
)
def test_tool_call_streams(name: str, usage: Usage):
    resp = stream_response(name)
    assert resp.blocks == [
        ToolCallBlock(
            id="call_0",
            name="weather",
            arguments={"location": "San Francisco"},
            signature=sig(name, 0),
            provider="google",
            provider_data={"synthetic_id": True},
        )
    ]
    assert (resp.finish_reason, resp.usage, resp.model) == (
        "tool_use",
        usage,
        "gemini-3-pro-preview",
    )


def test_streamed_arguments_without_args_and_a_thought():
    name = "google-stream-no-args-tool-call.chunks.txt"
    resp = stream_response(name)
    thought = lines(name)[0]["candidates"][0]["content"]["parts"][0]["text"]
    synthetic = {"synthetic_id": True}
    assert resp.blocks == [
        ThinkingBlock(text=thought, provider="google"),
        ToolCallBlock(id="call_0", name="read_theme", arguments={}, signature=sig(name, 1),
                      provider="google", provider_data=synthetic),
        ToolCallBlock(id="call_1", name="read_screen", arguments={"id": "A"}, provider="google", provider_data=synthetic),
        ToolCallBlock(id="call_2", name="read_screen", arguments={"id": "B"}, provider="google", provider_data=synthetic),
        ToolCallBlock(id="call_3", name="read_screen", arguments={"id": "C"}, provider="google", provider_data=synthetic),
    ]  # fmt: skip
    assert thought.startswith("**Processing User Requests**")
    assert resp.usage == Usage(input_tokens=249, output_tokens=241, thinking_tokens=183)
    assert (resp.finish_reason, resp.model) == ("tool_use", "gemini-3-flash-preview")


def test_streamed_string_arguments():
    name = "google-stream-tool-call-arguments.chunks.txt"
    resp = stream_response(name)
    assert [(b.id, b.name, b.arguments, b.signature) for b in resp.blocks] == [
        ("call_0", "getWeather", {"location": "Boston"}, sig(name, 0)),
        ("call_1", "getWeather", {"location": "San Francisco"}, None),
    ]
    assert resp.usage == Usage(input_tokens=26, output_tokens=155, thinking_tokens=132)


def test_streamed_array_arguments_without_terminal_part():
    name = "google-stream-tool-call-array-arguments-missing-terminal-function-call.chunks.txt"
    resp = stream_response(name)
    [call] = resp.blocks
    assert call.name == "writeItems" and call.signature == sig(name, 0)
    assert call.arguments == {
        "operations": [
            {
                "action": "add",
                "description": "Fresh red apple",
                "itemid": "apple_001",
                "price": 0.5,
            },
            {
                "action": "add",
                "description": "Ripe yellow banana",
                "itemid": "banana_001",
                "price": 0.3,
            },
        ]
    }
    assert resp.usage == Usage(input_tokens=54, output_tokens=195, thinking_tokens=121)


def test_streamed_nested_arguments():
    name = "google-vertex-stream-tool-call-arguments-nested.1.chunks.txt"
    resp = stream_response(name)
    [call] = resp.blocks
    assert (call.name, call.signature) == ("cookRecipe", sig(name, 0))
    ingredients = [
        ("16 oz", "Lasagna noodles"), ("1 lb", "Ground beef"), ("15 oz", "Ricotta cheese"),
        ("3 cups", "Mozzarella cheese"), ("1/2 cup", "Parmesan cheese"), ("24 oz", "Tomato sauce"),
        ("1", "Egg"), ("2 cloves", "Garlic"), ("1 tsp", "Salt"), ("1/2 tsp", "Pepper"),
    ]  # fmt: skip
    assert call.arguments == {
        "recipe": {
            "ingredients": [{"amount": a, "name": n} for a, n in ingredients],
            "name": "Lasagna",
            "steps": [
                "Preheat oven to 375°F (190°C).",
                "Cook lasagna noodles according to package directions, drain and set aside.",
                "Brown ground beef with minced garlic in a skillet. Drain fat and stir in tomato sauce. Simmer for 10 minutes.",
                "In a bowl, mix ricotta cheese, egg, salt, pepper, and Parmesan cheese.",
                "In a 9x13 baking dish, spread a thin layer of meat sauce.",
                "Layer noodles, ricotta mixture, mozzarella, and meat sauce. Repeat.",
                "Top with remaining mozzarella cheese.",
                "Cover with foil and bake for 25 minutes.",
                "Remove foil and bake for another 25 minutes until golden.",
                "Let stand for 15 minutes before serving.",
            ],
        }
    }
    assert resp.usage == Usage(input_tokens=31, output_tokens=1710, thinking_tokens=1026)


# ------------------------------------------------------------------ whole bodies


def codec() -> GeminiCodec:
    c = GeminiCodec(settings_for("google", env={"GEMINI_API_KEY": "k"}))
    c.new_id = counter_ids()
    return c


REQ = Request(model="gemini-3-pro-preview", messages=[])


@pytest.mark.parametrize(
    ("name", "text", "usage"),
    [
        ("google-text.json", "There are **3** r's in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.",
         Usage(input_tokens=9, output_tokens=28 + 244, thinking_tokens=244)),
        ("google-reasoning.json", STRAWBERRY + "Here is the breakdown: st**r**awbe**rr**y.",
         Usage(input_tokens=9, output_tokens=29 + 282, thinking_tokens=282)),
        ("google-reasoning-gemini3.json", STRAWBERRY + "Here is the breakdown: st**r**awbe**rr**y.",
         Usage(input_tokens=9, output_tokens=29 + 258, thinking_tokens=258)),
    ],
)  # fmt: skip
def test_text_bodies(name: str, text: str, usage: Usage):
    raw = json.loads((RECORDED / name).read_text())
    resp = codec().decode_response((RECORDED / name).read_bytes(), REQ)
    signature = raw["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert resp.blocks == [TextBlock(text=text, signature=signature, provider="google")]
    assert raw["usageMetadata"]["thoughtsTokenCount"] == usage.thinking_tokens
    assert (resp.finish_reason, resp.usage, resp.model) == ("stop", usage, "gemini-3-pro-preview")
    assert resp.provider_data == {"response_id": raw["responseId"], "finish_reason": "STOP"}


@pytest.mark.parametrize("name", ["google-tool-call.json", "google-tool-call-gemini3.json"])
def test_tool_call_bodies(name: str):
    raw = json.loads((RECORDED / name).read_text())
    resp = codec().decode_response((RECORDED / name).read_bytes(), REQ)
    signature = raw["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert resp.blocks == [
        ToolCallBlock(id="call_0", name="weather", arguments={"location": "San Francisco"},
                      signature=signature, provider="google", provider_data={"synthetic_id": True})
    ]  # fmt: skip
    u = raw["usageMetadata"]
    assert resp.usage == Usage(
        input_tokens=29,
        output_tokens=15 + u["thoughtsTokenCount"],
        thinking_tokens=u["thoughtsTokenCount"],
    )
    assert resp.finish_reason == "tool_use"
    assert resp.provider_data["finish_message"] == "Model generated function call(s)."


def test_other_apis_do_not_crash_the_decoder():
    for name in sorted(OTHER_APIS):
        if name.endswith(".chunks.txt"):
            events = decode(framed(name))
            assert isinstance(events[-1], ErrorEvent)  # no finishReason: not our wire
            assert sum(isinstance(e, ErrorEvent) for e in events) == 1


# ------------------------------------------------------------------ chunking

MULTIBYTE = (
    b'data: {"candidates":[{"content":{"parts":[{"text":"\xe6\x80\x9d\xe8\x80\x83 \xf0\x9f\xa4\x94 ","thought":true}],"role":"model"}}],"modelVersion":"gemini-3-flash-preview"}\r\n\r\n'
    b'data: {"candidates":[{"content":{"parts":[{"text":"caf\xc3\xa9 \xf0\x9f\x8d\xb0 \xe2\x82\xac5"}],"role":"model"}}]}\r\n\r\n'
    b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"pay","args":{"amount":"\xe2\x82\xac5"}},"thoughtSignature":"c2ln"}],"role":"model"},"finishReason":"STOP"}],'
    b'"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"thoughtsTokenCount":5}}\r\n\r\n'
)
BODIES_TO_SPLIT = {name: framed(name) for name in STREAMS} | {
    "lf-framed": framed("google-text.chunks.txt", b"\n"),
    "multibyte": MULTIBYTE,
}


def test_multibyte_stream_decodes():
    resp = collect(decode(MULTIBYTE), provider="google")
    assert resp.blocks == [
        ThinkingBlock(text="思考 🤔 ", provider="google"),
        TextBlock(text="café 🍰 €5"),
        ToolCallBlock(id="call_0", name="pay", arguments={"amount": "€5"}, signature="c2ln",
                      provider="google", provider_data={"synthetic_id": True}),
    ]  # fmt: skip


@pytest.mark.parametrize("name", sorted(BODIES_TO_SPLIT))
def test_one_byte_chunks(name: str):
    body = BODIES_TO_SPLIT[name]
    assert decode(body, [body[i : i + 1] for i in range(len(body))]) == decode(body)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(sorted(BODIES_TO_SPLIT)))
def test_any_chunking_gives_the_same_events(data: st.DataObject, name: str):
    body = BODIES_TO_SPLIT[name]
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(body)), max_size=40))))
    # always cut inside every CRLF and the first multi-byte character, when drawn
    if data.draw(st.booleans()):
        crlf = body.find(b"\r\n")
        if crlf >= 0:
            cuts = sorted({*cuts, crlf + 1})
        high = next((i for i, b in enumerate(body) if b >= 0x80), None)
        if high is not None:
            cuts = sorted({*cuts, high + 1})
    edges = [0, *cuts, len(body)]
    pieces = [body[a:b] for a, b in itertools.pairwise(edges)]
    assert decode(body, pieces) == decode(body)
