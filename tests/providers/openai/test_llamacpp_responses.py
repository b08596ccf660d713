"""OpenAI Responses as llama-server speaks it (issue 14, item 8).

The streams below are written from llama.cpp's tools/server/server-task.cpp
(``server_task_result_cmpl_partial::to_json_oaicompat_resp`` for the deltas,
``server_task_result_cmpl_final::to_json_oaicompat_resp_stream`` for the end)
and framed as ``format_oai_resp_sse`` frames them. What sets them apart from
OpenAI's: no ``output_index`` anywhere, no top-level ``item_id`` on
output_item.added/.done, function_call items without an ``id`` (only a
``call_id`` that the argument deltas name as their ``item_id``), and every
``output_item.done`` sent together at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from providers.accumulate import collect
from providers.openai.responses import ResponsesCodec
from providers.registry import make_provider
from providers.settings import settings_for
from providers.types import (
    ImageBlock,
    Message,
    Request,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    Tool,
    ToolCallBlock,
    ToolCallStart,
    ToolResultBlock,
)
from tests.fakes.script import Reply, ToolCall

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "recorded" / "llamacpp"
CODEC = ResponsesCodec(settings_for("llamacpp", env={}, api="responses", base_url="http://x/v1"))
REQ = Request(model="gemma", messages=[Message(role="user", content=[TextBlock(text="hi")])])


def sse(*events: dict) -> bytes:
    """format_oai_resp_sse: ``event:`` then the compact JSON ``data:``."""
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n".encode()
        for e in events
    )


CREATED = [
    {"type": "response.created", "response": {"id": "resp_1", "object": "response", "status": "in_progress"}},
    {"type": "response.in_progress", "response": {"id": "resp_1", "object": "response", "status": "in_progress"}},
]  # fmt: skip
USAGE = {"input_tokens": 20, "output_tokens": 9, "total_tokens": 29}


def message_events(
    text_pieces: list[str], mid: str = "msg_A"
) -> tuple[list[dict], list[dict], dict]:
    """(the partial events, the final text events, the completed item) of one message."""
    text = "".join(text_pieces)
    added = {
        "content": [],
        "id": mid,
        "role": "assistant",
        "status": "in_progress",
        "type": "message",
    }
    partial = [
        {"type": "response.output_item.added", "item": added},
        {
            "type": "response.content_part.added",
            "item_id": mid,
            "part": {"type": "output_text", "text": ""},
        },
        *({"type": "response.output_text.delta", "item_id": mid, "delta": p} for p in text_pieces),
    ]
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    item = {
        "type": "message",
        "status": "completed",
        "id": mid,
        "content": [part],
        "role": "assistant",
    }
    final = [
        {"type": "response.output_text.done", "item_id": mid, "text": text},
        {"type": "response.content_part.done", "item_id": mid, "part": part},
        {"type": "response.output_item.done", "item": item},
    ]
    return partial, final, item


def call_events(
    call_id: str, name: str, arg_pieces: list[str]
) -> tuple[list[dict], list[dict], dict]:
    fc = "fc_" + call_id
    added = {
        "arguments": "",
        "call_id": fc,
        "name": name,
        "type": "function_call",
        "status": "in_progress",
    }
    partial = [
        {"type": "response.output_item.added", "item": added},
        *(
            {"type": "response.function_call_arguments.delta", "delta": p, "item_id": fc}
            for p in arg_pieces
        ),
    ]
    item = {
        "type": "function_call",
        "status": "completed",
        "arguments": "".join(arg_pieces),
        "call_id": fc,
        "name": name,
    }
    return partial, [{"type": "response.output_item.done", "item": item}], item


def completed(output: list[dict]) -> dict:
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "gemma",
        "output": output,
        "usage": USAGE,
    }
    return {"type": "response.completed", "response": response}


def text_only() -> bytes:
    partial, final, item = message_events(["Hel", "lo", " there"])
    return sse(*CREATED, *partial, *final, completed([item]))


def text_and_two_calls() -> bytes:
    m_partial, m_final, m_item = message_events(["Checking", " both."])
    a_partial, a_final, a_item = call_events("AAAA1111", "get_weather", ['{"city":', '"Paris"}'])
    b_partial, b_final, b_item = call_events(
        "BBBB2222", "get_weather", ['{"city":"Rome",', '"unit":"c"}']
    )
    return sse(
        *CREATED, *m_partial, *a_partial, *b_partial, *m_final, *a_final, *b_final,
        completed([m_item, a_item, b_item]),
    )  # fmt: skip


def reasoning_and_text() -> bytes:
    rid = "rs_R"
    added = {
        "id": rid,
        "summary": [],
        "type": "reasoning",
        "content": [],
        "encrypted_content": "",
        "status": "in_progress",
    }
    thinking = ["The user", " greets me."]
    r_item = {
        "id": rid, "summary": [], "type": "reasoning",
        "content": [{"text": "".join(thinking), "type": "reasoning_text"}], "encrypted_content": "",
    }  # fmt: skip
    m_partial, m_final, m_item = message_events(["Hi!"])
    return sse(
        *CREATED,
        {"type": "response.output_item.added", "item": added},
        *({"type": "response.reasoning_text.delta", "delta": t, "item_id": rid} for t in thinking),
        *m_partial,
        {"type": "response.output_item.done", "item": r_item},
        *m_final,
        completed([r_item, m_item]),
    )


def decode(body: bytes, chunk: int) -> list:
    decoder = CODEC.stream_decoder(REQ)
    events = []
    for i in range(0, len(body), chunk):
        events += decoder.feed(body[i : i + chunk])
    return events + decoder.close()


@pytest.mark.parametrize("chunk", [1, 7, 10_000])
def test_text_is_decoded_once(chunk):
    events = decode(text_only(), chunk)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there"
    r = collect(events, provider="llamacpp")
    assert (r.blocks, r.finish_reason) == ([TextBlock(text="Hello there")], "stop")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (20, 9)


@pytest.mark.parametrize("chunk", [1, 7, 10_000])
def test_text_and_two_parallel_calls_keep_both_calls(chunk):
    events = decode(text_and_two_calls(), chunk)
    assert [(e.id, e.name) for e in events if isinstance(e, ToolCallStart)] == [
        ("fc_AAAA1111", "get_weather"),
        ("fc_BBBB2222", "get_weather"),
    ]
    r = collect(events, provider="llamacpp")
    assert r.blocks == [
        TextBlock(text="Checking both."),
        ToolCallBlock(id="fc_AAAA1111", name="get_weather", arguments={"city": "Paris"}),
        ToolCallBlock(
            id="fc_BBBB2222", name="get_weather", arguments={"city": "Rome", "unit": "c"}
        ),
    ]
    assert r.finish_reason == "tool_use"


@pytest.mark.parametrize("chunk", [1, 7, 10_000])
def test_reasoning_and_text_are_decoded_once(chunk):
    r = collect(decode(reasoning_and_text(), chunk), provider="llamacpp")
    assert r.blocks == [
        ThinkingBlock(
            text="The user greets me.", provider="llamacpp", provider_data={"id": "rs_R"}
        ),
        TextBlock(text="Hi!"),
    ]


def test_the_whole_answer_decodes_the_same():
    # to_json_oaicompat_resp: the non-streamed body of the same reply
    output = json.loads(text_and_two_calls().split(b"data: ")[-1])["response"]["output"]
    body = json.dumps(
        {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "model": "gemma",
            "output": output,
            "usage": USAGE,
        }
    )
    r = CODEC.decode_response(body.encode(), REQ)
    assert [b.id for b in r.blocks if isinstance(b, ToolCallBlock)] == [
        "fc_AAAA1111",
        "fc_BBBB2222",
    ]
    assert r.blocks[0] == TextBlock(text="Checking both.")


def test_every_input_item_names_its_type():
    call = ToolCallBlock(id="c1", name="get_weather", arguments={"city": "Paris"})
    cut = ToolCallBlock(id="c2", name="get_weather", raw_arguments='{"city": "Ro')
    req = Request(
        model="gemma",
        messages=[
            Message(role="user", content=[TextBlock(text="Weather?")]),
            Message(
                role="assistant",
                provider="llamacpp",
                content=[
                    ThinkingBlock(
                        text="two",
                        signature="enc",
                        provider="llamacpp",
                        provider_data={"id": "rs_1"},
                    ),
                    TextBlock(text="Checking."),
                    call,
                    cut,
                ],
            ),
            Message(
                role="tool",
                content=[
                    ToolResultBlock(tool_call_id="c1", content="sunny"),
                    ToolResultBlock(tool_call_id="c2", content="cut off", is_error=True),
                ],
            ),
            Message(
                role="user",
                content=[
                    TextBlock(text="and this?"),
                    ImageBlock(media_type="image/png", data="iVBO"),
                ],
            ),
            Message(role="assistant", content=[TextBlock(text="A cat.")]),
        ],
    )
    items = json.loads(CODEC.encode(req, stream=True).body)["input"]
    assert [i.get("type") for i in items] == [
        "message", "reasoning", "message", "function_call", "function_call",
        "function_call_output", "function_call_output", "message", "message",
    ]  # fmt: skip
    # an assistant message as llama-server reads one: output_text parts
    assert items[2] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Checking."}],
    }
    assert items[-1]["content"] == [{"type": "output_text", "text": "A cat."}]


WEATHER = Tool(
    name="get_weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


async def stream(provider, request: Request):
    events = []
    with trio.fail_after(10):
        async with provider.stream(request) as s:
            async for e in s:
                events.append(e)
    return collect(events, provider="llamacpp")


async def test_two_turns_with_parallel_calls_against_the_llama_dialect(fake_provider):
    """The real HttpProvider against the fake in llama-server's dialect: it
    refuses an untyped input item as llama-server does, so the second and
    third requests only pass when every item names its type."""
    settings = settings_for(
        "llamacpp", env={}, api="responses", base_url=fake_provider.base_url + "/llamacpp/v1"
    )
    provider = make_provider(settings)
    fake_provider.push(
        Reply(
            text="Checking both.",
            tool_calls=[
                ToolCall("get_weather", {"city": "Paris"}),
                ToolCall("get_weather", {"city": "Rome"}),
            ],
        ),
        Reply(text="Paris is sunny, Rome is rainy."),
        Reply(text="You are welcome."),
    )
    try:
        first = Request(
            model="gemma",
            messages=[Message(role="user", content=[TextBlock(text="Weather?")])],
            tools=[WEATHER],
        )
        r1 = await stream(provider, first)
        calls = [b for b in r1.blocks if isinstance(b, ToolCallBlock)]
        assert [(c.id, c.arguments) for c in calls] == [
            ("fc_llama000x00", {"city": "Paris"}),
            ("fc_llama000x01", {"city": "Rome"}),
        ]
        assert [b for b in r1.blocks if isinstance(b, TextBlock)] == [
            TextBlock(text="Checking both.")
        ]
        results = Message(
            role="tool",
            content=[
                ToolResultBlock(tool_call_id=c.id, content=f"{c.arguments['city']}: ok")
                for c in calls
            ],
        )
        second = Request(
            model="gemma", messages=[*first.messages, r1.to_message(), results], tools=[WEATHER]
        )
        r2 = await stream(provider, second)
        assert r2.blocks == [TextBlock(text="Paris is sunny, Rome is rainy.")]
        third = Request(
            model="gemma",
            messages=[
                *second.messages,
                r2.to_message(),
                Message(role="user", content=[TextBlock(text="thanks")]),
            ],
        )
        r3 = await stream(provider, third)
        assert r3.blocks == [TextBlock(text="You are welcome.")]
    finally:
        await provider.aclose()
    assert len(fake_provider.requests) == 3
    sent = fake_provider.requests[2].json["input"]
    assert all("type" in item for item in sent)


def recorded_pairs() -> list[str]:
    return (
        sorted(p.name.removesuffix(".sse") for p in RECORDED.glob("*.sse"))
        if RECORDED.is_dir()
        else []
    )


@pytest.mark.parametrize("name", recorded_pairs())
def test_recorded_llama_server_streams(name):
    """Real llama-server bytes (tests/fixtures/recorded/llamacpp, recorded by
    tests/interop/test_llama_server.py run as a script): the text once, every
    call with its JSON arguments, the blocks the stream's own closing
    ``response.completed`` lists."""
    body = (RECORDED / f"{name}.sse").read_bytes()
    for chunk in (1, 64, len(body)):
        r = collect(decode(body, chunk), provider="llamacpp")
        final = json.loads(body.rstrip().rsplit(b"data: ", 1)[-1])["response"]
        want = []
        for item in final["output"]:
            if item["type"] == "message":
                want.append(("text", "".join(p["text"] for p in item["content"])))
            elif item["type"] == "function_call":
                want.append(("call", item["call_id"], json.loads(item["arguments"])))
        got = [
            ("text", b.text) if isinstance(b, TextBlock) else ("call", b.id, b.arguments)
            for b in r.blocks
            if isinstance(b, TextBlock | ToolCallBlock)
        ]
        assert got == want and want
        calls = [b for b in r.blocks if isinstance(b, ToolCallBlock)]
        # llama-server says "completed" even when the output limit cut the reply
        assert r.finish_reason == ("tool_use" if calls else "stop")
        assert (r.usage.input_tokens, r.usage.output_tokens) == (
            final["usage"]["input_tokens"],
            final["usage"]["output_tokens"],
        )
