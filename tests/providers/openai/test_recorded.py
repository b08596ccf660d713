"""The decoders on real recorded payloads (tests/fixtures/recorded/, from vercel/ai).

Every file decodes without raising; the text, reasoning, tool-call and usage
files give exactly what they hold; any chunking gives the same events.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.accumulate import collect
from providers.openai.chat import ChatCodec
from providers.openai.responses import ResponsesCodec
from providers.types import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
)

from ._helpers import (
    ERROR_FILES,
    all_files,
    chat_sse,
    completed_payloads,
    feed_all,
    is_responses,
    lines,
    openai_settings,
    read,
    request,
    responses_segments,
)

CHAT = ChatCodec(openai_settings())
RESP = ResponsesCodec(openai_settings())
REQ = request()


def stream_bodies(name: str) -> list[bytes]:
    return responses_segments(name) if is_responses(name) else [chat_sse(name)]


def codec_for(name: str):
    return RESP if is_responses(name) else CHAT


def decode_stream(name: str, body: bytes, sizes: list[int] | None = None):
    return feed_all(codec_for(name).stream_decoder(REQ), body, sizes)


# ------------------------------------------------------------ every file


@pytest.mark.parametrize("name", all_files())
def test_every_file_decodes(name: str):
    if name.endswith(".chunks.txt"):
        for body in stream_bodies(name):
            events = decode_stream(name, body)
            assert isinstance(events[0], StartEvent)
            assert isinstance(events[-1], DoneEvent | ErrorEvent)
            assert sum(isinstance(e, DoneEvent | ErrorEvent) for e in events) == 1
            collect(events)  # the events fold without contradiction
    elif name in ERROR_FILES:
        error = codec_for(name).decode_error(400, read(name), {})
        assert error.message and error.http_status == 400
    else:
        codec_for(name).decode_response(read(name), REQ)


def test_the_file_lists_cover_both_apis():
    names = all_files()
    assert len(names) > 90
    assert sum(is_responses(n) for n in names) > 50


# ------------------------------------------------------------ chat: exact content


def chat_reference(name: str) -> tuple[str, str, dict[int, tuple[str, str, str]], dict | None]:
    """(text, reasoning, {index: (id, name, arguments)}, usage) folded with the json module."""
    text, reasoning, calls, usage = "", "", {}, None
    for line in lines(name):
        chunk = json.loads(line)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            for tc in delta.get("tool_calls") or []:
                have = calls.setdefault(tc["index"], ["", "", ""])
                have[0] = have[0] or tc.get("id") or ""
                fn = tc.get("function") or {}
                have[1] = have[1] or fn.get("name") or ""
                have[2] += fn.get("arguments") or ""
        if chunk.get("usage"):
            usage = chunk["usage"]
    return text, reasoning, {k: tuple(v) for k, v in calls.items()}, usage


CHAT_STREAMS = {
    # name: (usage, finish, tool calls (name, arguments))
    "openai/openai-text.chunks.txt": (Usage(input_tokens=16, output_tokens=300), "stop", []),
    "openai/azure-model-router.1.chunks.txt": (
        Usage(input_tokens=15, output_tokens=78, thinking_tokens=64),
        "stop",
        [],
    ),
    "deepseek/deepseek-text.chunks.txt": (Usage(input_tokens=13, output_tokens=400), "length", []),
    "deepseek/deepseek-reasoning.chunks.txt": (
        Usage(input_tokens=18, output_tokens=219, thinking_tokens=205),
        "stop",
        [],
    ),
    "deepseek/deepseek-tool-call.chunks.txt": (
        Usage(input_tokens=339, output_tokens=83, thinking_tokens=39, cached_tokens=320),
        "tool_use",
        [("weather", {"location": "San Francisco"})],
    ),
    # xAI leaves reasoning out of completion_tokens: output = completion + reasoning
    "xai/xai-text.chunks.txt": (
        Usage(input_tokens=12, output_tokens=291, thinking_tokens=290, cached_tokens=11),
        "stop",
        [],
    ),
    "xai/xai-tool-call.chunks.txt": (
        Usage(input_tokens=291, output_tokens=222, thinking_tokens=196, cached_tokens=290),
        "tool_use",
        [("weather", {"location": "San Francisco"})],
    ),
    "openai-compatible/xai-text.chunks.txt": (
        Usage(input_tokens=12, output_tokens=342, thinking_tokens=340, cached_tokens=11),
        "stop",
        [],
    ),
    "openai-compatible/xai-tool-call.chunks.txt": (
        Usage(input_tokens=307, output_tokens=253, thinking_tokens=227, cached_tokens=306),
        "tool_use",
        [("weather", {"location": "San Francisco"})],
    ),
}


@pytest.mark.parametrize("name", sorted(CHAT_STREAMS))
def test_chat_stream_content(name: str):
    usage, finish, calls = CHAT_STREAMS[name]
    text, reasoning, ref_calls, _ = chat_reference(name)
    response = collect(decode_stream(name, chat_sse(name)), provider="openai")
    assert response.usage == usage
    assert response.finish_reason == finish
    got_text = "".join(b.text for b in response.blocks if isinstance(b, TextBlock))
    got_thinking = "".join(b.text for b in response.blocks if isinstance(b, ThinkingBlock))
    assert got_text == text
    assert got_thinking == reasoning
    got_calls = [b for b in response.blocks if isinstance(b, ToolCallBlock)]
    assert [(c.name, c.arguments) for c in got_calls] == calls
    assert [c.id for c in got_calls] == [ref_calls[i][0] for i in sorted(ref_calls)]
    # canonical order: thinking, then text, then tool calls
    kinds = [type(b).__name__ for b in response.blocks]
    assert kinds == sorted(kinds, key=["ThinkingBlock", "TextBlock", "ToolCallBlock"].index)


def test_chat_known_values():
    name = "openai/azure-model-router.1.chunks.txt"
    r = collect(decode_stream(name, chat_sse(name)))
    assert r.blocks == [TextBlock(text="Capital of Denmark.")]
    assert r.model == "gpt-5-nano-2025-08-07"
    name = "xai/xai-text.chunks.txt"
    r = collect(decode_stream(name, chat_sse(name)))
    assert [b.text for b in r.blocks] == ["First, the user said", "Hello"]
    name = "xai/xai-tool-call.chunks.txt"
    r = collect(decode_stream(name, chat_sse(name)))
    assert r.blocks[1] == ToolCallBlock(
        id="call_55117580", name="weather", arguments={"location": "San Francisco"}
    )


CHAT_BODIES = {
    "openai/openai-text.json": (Usage(input_tokens=16, output_tokens=363), "stop", []),
    "deepseek/deepseek-tool-call.json": (
        Usage(input_tokens=339, output_tokens=92, thinking_tokens=48, cached_tokens=320),
        "tool_use",
        [("weather", {"location": "San Francisco"})],
    ),
    "deepseek/deepseek-reasoning.json": (
        Usage(input_tokens=18, output_tokens=345, thinking_tokens=315),
        "stop",
        [],
    ),
    "xai/xai-tool-call.json": (
        Usage(input_tokens=291, output_tokens=215, thinking_tokens=189, cached_tokens=244),
        "tool_use",
        [("weather", {"location": "San Francisco"})],
    ),
    "openai-compatible/xai-text.json": (
        Usage(input_tokens=12, output_tokens=322, thinking_tokens=320, cached_tokens=2),
        "stop",
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(CHAT_BODIES))
def test_chat_body_content(name: str):
    usage, finish, calls = CHAT_BODIES[name]
    data = json.loads(read(name))
    message = data["choices"][0]["message"]
    r = CHAT.decode_response(read(name), REQ)
    assert (r.usage, r.finish_reason, r.model) == (usage, finish, data["model"])
    assert "".join(b.text for b in r.blocks if isinstance(b, TextBlock)) == (
        message["content"] or ""
    )
    thinking = "".join(b.text for b in r.blocks if isinstance(b, ThinkingBlock))
    assert thinking == (message.get("reasoning_content") or "")
    got = [(b.id, b.name, b.arguments) for b in r.blocks if isinstance(b, ToolCallBlock)]
    assert got == [
        (tc["id"], n, a) for tc, (n, a) in zip(message.get("tool_calls") or [], calls, strict=True)
    ]


def test_chat_body_without_finish_has_none_of_its_own():
    r = CHAT.decode_response(read("openai/openai-skill-create.json"), REQ)
    assert (r.blocks, r.finish_reason) == ([], "unknown")


# ------------------------------------------------------------ responses: exact content


def expected_blocks(final: dict) -> list:
    """The blocks a completed response object holds, read with the json module (no signatures)."""
    out = []
    for item in final["output"]:
        if item["type"] == "reasoning":
            text = "\n\n".join(s["text"] for s in item.get("summary") or [])
            if text or item.get("encrypted_content"):
                out.append(("thinking", text, item["id"]))
        elif item["type"] == "message":
            text = "".join(p.get("text", "") for p in item["content"])
            if text:
                out.append(("text", text))
        elif item["type"] == "function_call":
            out.append(("call", item["call_id"], item["name"], json.loads(item["arguments"])))
    return out


def block_view(blocks: list) -> list:
    out = []
    for b in blocks:
        if isinstance(b, ThinkingBlock):
            out.append(("thinking", b.text, (b.provider_data or {}).get("id")))
        elif isinstance(b, TextBlock):
            out.append(("text", b.text))
        elif isinstance(b, ToolCallBlock):
            out.append(("call", b.id, b.name, b.arguments))
    return out


RESPONSES_STREAMS = {
    # name: [usage per turn]
    "openai/openai-reasoning-encrypted-content.1.chunks.txt": [
        Usage(input_tokens=134, output_tokens=28),
        Usage(input_tokens=221, output_tokens=26),
        Usage(input_tokens=260, output_tokens=26),
        Usage(input_tokens=299, output_tokens=12),
    ],
    "openai/github-copilot-id-rotation.1.chunks.txt": [
        Usage(input_tokens=19, output_tokens=105, thinking_tokens=44)
    ],
    "openai/openai-tool-search.1.chunks.txt": [
        Usage(input_tokens=640, output_tokens=46, thinking_tokens=20)
    ],
    "openai/openai-web-search-tool.1.chunks.txt": [
        Usage(input_tokens=31073, output_tokens=4416, thinking_tokens=3712, cached_tokens=3712)
    ],
    "openai/openai-client-tool-search.2.chunks.txt": [Usage(input_tokens=467, output_tokens=26)],
    "openai/openai-shell-tool.1.chunks.txt": [
        Usage(input_tokens=145, output_tokens=41),
        Usage(input_tokens=331, output_tokens=166),
    ],
    "openai/programmatic-tool-calling.1.chunks.txt": [
        Usage(input_tokens=631, output_tokens=87, thinking_tokens=37)
    ],
    "xai/xai-text-with-reasoning-streaming.1.chunks.txt": [
        Usage(input_tokens=216, output_tokens=923, thinking_tokens=323, cached_tokens=192)
    ],
    "xai/xai-x-search-tool.chunks.txt": [
        Usage(input_tokens=27236, output_tokens=3077, thinking_tokens=1091, cached_tokens=4585)
    ],
}


@pytest.mark.parametrize("name", sorted(RESPONSES_STREAMS))
def test_responses_stream_content(name: str):
    usages = RESPONSES_STREAMS[name]
    segments = responses_segments(name)
    finals = completed_payloads(name)
    assert len(segments) == len(finals) == len(usages)
    for body, final, usage in zip(segments, finals, usages, strict=True):
        r = collect(decode_stream(name, body), provider="openai")
        assert r.usage == usage
        if "id-rotation" in name:
            # this server gives each event of an item a new id: the item.done one is kept
            expected = [
                ("thinking", t[1], "capture-id-8") if t[0] == "thinking" else t
                for t in expected_blocks(final)
            ]
        else:
            expected = expected_blocks(final)
        assert block_view(r.blocks) == expected
        calls = [b for b in r.blocks if isinstance(b, ToolCallBlock)]
        assert r.finish_reason == ("tool_use" if calls else "stop")
        assert r.provider_data == {"id": final["id"]}
        # the non-streamed decode of the same response gives the same blocks
        whole = RESP.decode_response(msgspec.json.encode(final), REQ)
        if "id-rotation" in name:
            assert [v[:2] for v in block_view(whole.blocks)] == [
                v[:2] for v in block_view(r.blocks)
            ]
        else:
            assert block_view(whole.blocks) == block_view(r.blocks)
        assert (whole.usage, whole.finish_reason) == (r.usage, r.finish_reason)


def test_responses_reasoning_item_exactly():
    name = "openai/openai-reasoning-encrypted-content.1.chunks.txt"
    done = next(
        json.loads(line)["item"]
        for line in lines(name)
        if b'"response.output_item.done"' in line and b'"reasoning"' in line
    )
    r = collect(decode_stream(name, responses_segments(name)[0]), provider="openai")
    assert r.blocks == [
        ThinkingBlock(
            text="**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then "
            "multiply the result by 3, and finally multiply that by 10, reporting the final product.",
            signature=done["encrypted_content"],
            provider="openai",
            provider_data={"id": "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9"},
        ),
        ToolCallBlock(
            id="call_AB6AaRZ1FYZB2RwS6A5vbdqn",
            name="calculator",
            arguments={"a": 12, "b": 7, "op": "add"},
        ),
    ]
    last = collect(decode_stream(name, responses_segments(name)[3]))
    assert last.blocks == [TextBlock(text="The final result is **570**.")]
    assert last.model == "gpt-5.1-codex-max"


def test_responses_error_event_mid_stream():
    name = "openai/openai-error.1.chunks.txt"
    events = decode_stream(name, responses_segments(name)[0])
    assert isinstance(events[-1], ErrorEvent)
    err = events[-1].error
    assert (err.category, err.provider_code, err.retryable) == (
        "billing",
        "insufficient_quota",
        False,
    )
    assert err.message.startswith("You exceeded your current quota")


def test_responses_broken_recording_keeps_what_it_can():
    # both the created and the completed events of this recording are cut short
    name = "openai/parallel-tool-call-wrapper.1.chunks.txt"
    decoder = RESP.stream_decoder(REQ)
    events = feed_all(decoder, responses_segments(name)[0])
    r = collect(events)
    assert decoder.malformed == 2
    assert [(b.name, b.arguments) for b in r.blocks] == [
        (
            "parallel",
            {
                "tool_uses": [
                    {
                        "recipient_name": "functions.weather",
                        "parameters": {"location": "San Francisco"},
                    },
                    {"recipient_name": "functions.cityAttractions", "parameters": {"city": "Rome"}},
                ]
            },
        )
    ]
    assert isinstance(events[-1], ErrorEvent) and events[-1].error.category == "network"


@pytest.mark.parametrize(
    "name",
    [
        "openai/openai-reasoning-encrypted-content.1.json",
        "openai/parallel-tool-call-wrapper.1.json",
        "openai/openai-client-tool-search.2.json",
        "openai/openai-web-search-tool.1.json",
        "xai/xai-web-search-tool.1.json",
        "xai/xai-code-execution-tool.1.json",
    ],
)
def test_responses_body_content(name: str):
    data = json.loads(read(name))
    r = RESP.decode_response(read(name), REQ)
    assert block_view(r.blocks) == expected_blocks(data)
    u, d = data["usage"], data["usage"]["output_tokens_details"]
    assert r.usage == Usage(
        input_tokens=u["input_tokens"],
        output_tokens=u["output_tokens"],
        thinking_tokens=d["reasoning_tokens"],
        cached_tokens=u["input_tokens_details"]["cached_tokens"],
    )
    for b in r.blocks:
        if isinstance(b, ThinkingBlock):
            assert b.provider == "openai" and b.signature


def test_error_files():
    quota = CHAT.decode_error(429, read("openai/openai-error.1.json"), {"retry-after-ms": "250"})
    assert (quota.category, quota.provider_code, quota.retry_after) == (
        "billing",
        "insufficient_quota",
        0.25,
    )
    param = CHAT.decode_error(400, read("openai/reasoning-model-legacy-parameter-error.json"), {})
    assert (param.category, param.provider_code) == ("invalid_request", "unsupported_parameter")


# ------------------------------------------------------------ chunking


def _streams() -> list[tuple[str, int]]:
    return [
        (name, i)
        for name in all_files()
        if name.endswith(".chunks.txt")
        for i in range(len(stream_bodies(name)))
    ]


STREAMS = _streams()


@pytest.mark.parametrize(("name", "turn"), STREAMS)
def test_small_chunks_and_crlf_give_the_same_events(name: str, turn: int):
    body = stream_bodies(name)[turn]
    whole = decode_stream(name, body)
    small = len(body) < 60_000
    size = 1 if small else 7
    assert decode_stream(name, body, [size] * (len(body) // size)) == whole
    crlf = body.replace(b"\n", b"\r\n")
    size = 2 if small else 13  # odd sizes cut between CR and LF too
    assert decode_stream(name, crlf, [size] * (len(crlf) // size)) == whole
    assert decode_stream(name, body.replace(b"\n", b"\r")) == whole


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_chunking_gives_the_same_events(data: st.DataObject):
    name, turn = data.draw(st.sampled_from(STREAMS))
    body = stream_bodies(name)[turn]
    sizes = data.draw(
        st.lists(st.integers(min_value=1, max_value=max(1, len(body) // 4)), max_size=40)
    )
    assert decode_stream(name, body, sizes) == decode_stream(name, body)
