from __future__ import annotations

import msgspec
import pytest

from providers.accumulate import Accumulator, StreamProtocolError, collect, parse_arguments
from providers.types import (
    DoneEvent,
    ErrorEvent,
    Message,
    ProviderError,
    Response,
    StartEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    Usage,
)


def test_folds_a_full_stream():
    usage = Usage(input_tokens=100, output_tokens=50, thinking_tokens=20, cached_tokens=30)
    events = [
        StartEvent(model="claude-x", provider_data={"id": "msg_1"}),
        ThinkingDelta(index=0, text="Let me "),
        ThinkingDelta(index=0, text="think."),
        ThinkingDelta(index=0, signature="sig-part-1"),
        ThinkingDelta(index=0, signature="sig-part-2"),
        TextDelta(index=1, text="Hello "),
        TextDelta(index=1, text="world"),
        ToolCallStart(index=2, id="call_a", name="bash"),
        ToolCallDelta(index=2, arguments='{"cmd": '),
        ToolCallDelta(index=2, arguments='"ls"}'),
        ToolCallDone(index=2),
        ToolCallStart(index=3, id="call_b", name="noargs"),
        ToolCallDone(index=3),
        DoneEvent(finish_reason="tool_use", usage=usage, provider_data={"request_id": "r1"}),
    ]
    r = collect(events, provider="anthropic")
    assert r == Response(
        blocks=[
            ThinkingBlock(text="Let me think.", signature="sig-part-1sig-part-2", provider="anthropic"),
            TextBlock(text="Hello world"),
            ToolCallBlock(id="call_a", name="bash", arguments={"cmd": "ls"}),
            ToolCallBlock(id="call_b", name="noargs", arguments={}),
        ],
        finish_reason="tool_use",
        usage=usage,
        model="claude-x",
        provider="anthropic",
        provider_data={"id": "msg_1", "request_id": "r1"},
    )
    assert usage.total_tokens == 150


def test_blocks_come_out_in_index_order_whatever_the_arrival_order():
    r = collect([TextDelta(index=1, text="b"), ThinkingDelta(index=0, text="a"), DoneEvent(finish_reason="stop")])
    assert [type(b) for b in r.blocks] == [ThinkingBlock, TextBlock]


def test_empty_text_block_is_dropped_but_signed_one_kept():
    r = collect([TextDelta(index=0, text=""), TextDelta(index=1, text="", signature="s"), DoneEvent(finish_reason="stop")],
                provider="google")
    assert r.blocks == [TextBlock(text="", signature="s", provider="google")]


def test_invalid_tool_arguments_are_kept_raw():
    r = collect([ToolCallStart(index=0, id="c", name="t"), ToolCallDelta(index=0, arguments='{"a": tru'),
                 ToolCallDone(index=0), DoneEvent(finish_reason="tool_use")])
    assert r.blocks == [ToolCallBlock(id="c", name="t", arguments={}, raw_arguments='{"a": tru')]
    assert parse_arguments("[1, 2]") == ({}, "[1, 2]")
    assert parse_arguments("  ") == ({}, None)


def test_unfinished_and_failed_streams():
    acc = Accumulator()
    acc.feed(TextDelta(index=0, text="partial"))
    assert (acc.done, acc.has_output, acc.response().finish_reason) == (False, True, "unknown")
    err = ProviderError(category="network", message="cut", retryable=True)
    acc.feed(ErrorEvent(error=err))
    assert acc.done and acc.error == err
    assert acc.response().finish_reason == "error"
    assert acc.response().blocks == [TextBlock(text="partial")]


def test_contradicting_events_are_an_error():
    acc = Accumulator()
    acc.feed(ToolCallStart(index=0, id="c", name="t"))
    with pytest.raises(StreamProtocolError, match="block 0 is tool_call, not text"):
        acc.feed(TextDelta(index=0, text="x"))


def test_types_round_trip_through_json():
    msg = Message(
        role="assistant",
        content=[
            ThinkingBlock(text="", signature="opaque", redacted=True, provider="anthropic"),
            TextBlock(text="hi", signature="g-sig", provider="google"),
            ToolCallBlock(id="1", name="f", arguments={"x": [1, {"y": None}]}, provider_data={"k": "v"}),
        ],
        provider="anthropic",
        model="claude-x",
        thinking_level="med",
    )
    data = msgspec.json.encode(msg)
    assert msgspec.json.decode(data, type=Message) == msg
    assert b'"type":"thinking"' in data and b'"type":"tool_call"' in data
    assert msg.text == "hi" and [c.id for c in msg.tool_calls] == ["1"]
    r = Response(blocks=msg.content, finish_reason="stop", model="m", provider="p")
    assert r.to_message(thinking_level="low").thinking_level == "low"
