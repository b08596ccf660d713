"""The decoders over every recorded Anthropic payload (tests/fixtures/recorded/anthropic)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.accumulate import collect
from providers.types import (
    DoneEvent,
    ErrorEvent,
    Request,
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

from .helpers import (
    FIXTURES,
    codec,
    decode,
    frame,
    messages_of,
    payloads,
    recorded_bodies,
    recorded_streams,
)

REQ = Request(model="claude-sonnet-4-5", messages=[])


def stream_response(name: str) -> Response:
    return collect(decode(frame(payloads(name))), provider="anthropic")


def body_response(name: str) -> Response:
    return codec().decode_response((FIXTURES / name).read_bytes(), REQ)


# ------------------------------------------------------------ every file


@pytest.mark.parametrize("name", recorded_streams())
def test_every_recorded_stream_decodes(name):
    events = decode(frame(payloads(name)))
    assert isinstance(events[0], StartEvent)
    ends = [e for e in events if isinstance(e, DoneEvent | ErrorEvent)]
    assert len(ends) == 1 and ends[0] is events[-1]
    if name != "spliced-message-start.chunks.txt":
        assert isinstance(events[-1], DoneEvent)
    # canonical indices are dense from 0 in order of first appearance
    seen: list[int] = []
    for e in events:
        index = getattr(e, "index", None)
        if index is not None and index not in seen:
            seen.append(index)
    assert seen == list(range(len(seen)))
    collect(events, provider="anthropic")  # consistent: no block changes kind


@pytest.mark.parametrize("name", recorded_streams())
def test_each_message_of_a_multi_step_recording_decodes_alone(name):
    for message in messages_of(name):
        events = decode(frame(message))
        assert isinstance(events[-1], DoneEvent | ErrorEvent)


@pytest.mark.parametrize("name", recorded_bodies())
def test_every_recorded_body_decodes(name):
    response = body_response(name)
    assert response.provider == "anthropic"


def test_multi_step_recordings_give_every_step():
    steps = [collect(decode(frame(m)), provider="anthropic") for m in messages_of("anthropic-tool-search-bm25.1.chunks.txt")]
    assert [s.finish_reason for s in steps] == ["tool_use", "stop"]
    assert steps[0].blocks[-1] == ToolCallBlock(id="toolu_019nRrfqqXcU5NPTUSYfEMAY", name="get_weather", arguments={"location": "San Francisco, CA"})
    assert steps[1].blocks[0].text.startswith("The current weather in San Francisco, CA is:")
    assert steps[1].usage == Usage(input_tokens=1040, output_tokens=41)
    # the whole file as one body: the first response, the rest after message_stop ignored
    whole = stream_response("anthropic-tool-search-bm25.1.chunks.txt")
    assert whole == steps[0]


# ------------------------------------------------------------ exact content


def test_text_stream_exact():
    events = decode(frame(payloads("anthropic-text.chunks.txt")))
    text = "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?"
    assert events[0] == StartEvent(model="claude-sonnet-4-5-20250929", provider_data={"id": "msg_01QC4g3HwBThD4BaNtBckFDJ"})
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    assert {e.index for e in events if isinstance(e, TextDelta)} == {0}
    assert events[-1] == DoneEvent(
        finish_reason="stop",
        usage=Usage(input_tokens=12, output_tokens=30),
        model="claude-sonnet-4-5-20250929",
        provider_data={"stop_reason": "end_turn"},
    )
    assert len(events) == 8  # start, 6 text deltas, done: pings and block bounds make no events


def test_text_body_exact():
    assert body_response("anthropic-text.json") == Response(
        blocks=[TextBlock(text="Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?")],
        finish_reason="stop",
        usage=Usage(input_tokens=12, output_tokens=29),
        model="claude-sonnet-4-5-20250929",
        provider="anthropic",
        provider_data={"id": "msg_01VdEjxAP5ahtHKrrRdNBteQ", "stop_reason": "end_turn"},
    )


CLEAR_SIG = (
    "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv/VeJBNbejNWIWRBn+KPNEgz6HWtKx7p+QRgKsEoaDGjsiqfht7gTRFYHiyIwD1VSmNqHxv3wy8KEMP+LYb/TC4UH3H97tuoaADARFFcA0phdfxnzKQxFnc9lwY+dKlzUsaKSUAFeu1bDL5ikZJ1vL0Fkz6JjoFke0L/wOJRIUDUlDUOFJ1tZ3ea7g6LGE/5hwuvWgLwewdcm64d+43l7F57XrOmqNd6flI2K/oPr/4yzNgvi/EhT6Ca17BgB"
)


def test_thinking_and_signature_stream_exact():
    events = decode(frame(payloads("anthropic-clear-thinking.1.chunks.txt")))
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    assert {e.index for e in thinking} == {0}
    assert [e.signature for e in thinking if e.signature] == [CLEAR_SIG]  # one piece, byte for byte
    assert {e.index for e in events if isinstance(e, TextDelta)} == {1}
    response = collect(events, provider="anthropic")
    assert response.blocks == [
        ThinkingBlock(
            text="The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185",
            signature=CLEAR_SIG,
            provider="anthropic",
        ),
        TextBlock(text="925 ÷ 5 = 185"),
    ]
    assert response.usage == Usage(input_tokens=69, output_tokens=53)
    assert response.provider_data == {"id": "msg_01Y6V41gqPaKWEw7iPouH7iW", "stop_reason": "end_turn"}


def test_thinking_body_exact():
    response = body_response("anthropic-clear-thinking.1.json")
    assert response.blocks == [
        ThinkingBlock(
            text="925 divided by 5 = 185",
            signature="Er4BCkYICxgCKkCoxqLHLrx4mFL9Ox7/aHKht87WDzXfvZ7qbZKSnHV8imA5b3LXxuVqcXQ9z5sXwDx20JIW/+6DJehOSNK72L83Egx0T9s7VzB6QUK9g5kaDO9lGaWN5CPEDJU0lyIw4+Ed3q4N9w+16h3cfQ+9stJXHCl+1nYDxjIOLcyJT8Ug/LTmtlp4bbxWmmfNicayKiasdReHiOnqz1sKEF0pR4kcnF5mQGdLxk8q3A3NY+wGsH8MtUIqxRgB",
            provider="anthropic",
        ),
        TextBlock(text="925 ÷ 5 = 185"),
    ]
    assert response.usage == Usage(input_tokens=69, output_tokens=33)


def test_thinking_with_signature_first_and_thinking_tokens_reported():
    response = stream_response("anthropic-combined-context-editing.1.chunks.txt")
    thinking, text = response.blocks
    assert thinking.text.startswith("I need to calculate 25 * 37 step by step.") and thinking.text.endswith("Yes, 25 * 37 = 925")
    assert thinking.signature.startswith("EtQFCkYICxgCKkC6mX3q5F227lNUFReMQGWY0Vfr33jL") and thinking.signature.endswith("+nBgB")
    assert text.text.endswith("**Answer: 25 \u00d7 37 = 925**")
    body = body_response("anthropic-claude-opus-5-reasoning-high.1.json")
    assert [type(b) for b in body.blocks] == [ThinkingBlock, TextBlock]
    assert body.blocks[0].signature.startswith("CAISqwQKhwEIEBgCKkAciZInI2gcLrwOU5o9XFlIxHw9HaLIY6V9wHoK2E0w9TFrU5619C4CclxQW")
    assert body.usage == Usage(input_tokens=51, output_tokens=1699, thinking_tokens=139)


def test_tool_call_streams_exact():
    events = decode(frame(payloads("anthropic-json-tool.1.chunks.txt")))
    assert [e for e in events if isinstance(e, ToolCallStart | ToolCallDelta | ToolCallDone)] == [
        ToolCallStart(index=0, id="toolu_01KFbKqPYSuAKujiL6mTfzYA", name="json"),
        ToolCallDelta(index=0, arguments='{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]'),
        ToolCallDelta(index=0, arguments="}"),
        ToolCallDone(index=0),
    ]
    response = collect(events, provider="anthropic")
    assert response.blocks == [
        ToolCallBlock(
            id="toolu_01KFbKqPYSuAKujiL6mTfzYA",
            name="json",
            arguments={"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]},
        )
    ]
    assert (response.finish_reason, response.usage) == ("tool_use", Usage(input_tokens=849, output_tokens=47))


def test_tool_call_with_no_arguments():
    events = decode(frame(payloads("anthropic-tool-no-args.chunks.txt")))
    assert not [e for e in events if isinstance(e, ToolCallDelta)]  # its one delta is empty
    response = collect(events, provider="anthropic")
    assert response.blocks == [
        TextBlock(text="I'll update the issue list for you."),
        ToolCallBlock(id="toolu_01QE1WLsSVp5hy5Q3GmGTmjP", name="updateIssueList", arguments={}),
    ]
    body = body_response("anthropic-tool-no-args.json")
    assert body.blocks[1] == ToolCallBlock(id="toolu_01LRmxn9vGM1d2DZSDBowdZ1", name="updateIssueList", arguments={})
    assert body.blocks[0].text.startswith("<thinking>\nThe updateIssueList tool")  # text, not a thinking block
    assert (body.finish_reason, body.usage) == ("tool_use", Usage(input_tokens=602, output_tokens=93))


def test_tool_input_given_whole_in_the_start_block():
    response = stream_response("anthropic-programmatic-tool-calling.1.chunks.txt")
    assert response.blocks[-1] == ToolCallBlock(id="toolu_019jKkXz4jAdwHweHBw92CVY", name="rollDie", arguments={"player": "player1"})
    # later steps of that recording carry the whole tool call inside message_start
    step = collect(decode(frame(messages_of("anthropic-programmatic-tool-calling.1.chunks.txt")[1])), provider="anthropic")
    assert step.blocks == [ToolCallBlock(id="toolu_015dGLMbwBKv1ZRQr6KdJzeH", name="rollDie", arguments={"player": "player2"})]
    assert step.finish_reason == "tool_use"


def test_usage_with_cache_read_and_write():
    response = stream_response("anthropic-code-execution-20260120-prompt-cache.1.chunks.txt")
    # message_delta's cumulative figures win over message_start's
    assert response.usage == Usage(input_tokens=6 + 3337 + 6289, output_tokens=198, cached_tokens=6289, cache_write_tokens=3337)
    assert response.blocks == [TextBlock(text="The sum of the squares of the numbers 1 through 12 is **650**.")]
    assert stream_response("anthropic-message-delta-input-tokens.chunks.txt").usage == Usage(input_tokens=61, output_tokens=2)


def test_server_tools_are_skipped_without_losing_what_is_around_them():
    mcp = stream_response("anthropic-mcp.1.chunks.txt")
    assert mcp.blocks == [
        TextBlock(text="The echo tool responded back with: **hello world**\n\nIt simply echoed back the exact message that was sent to it.")
    ]
    assert mcp.usage == Usage(input_tokens=1250, output_tokens=83)
    search = stream_response("anthropic-tool-search-bm25.1.chunks.txt")
    assert search.blocks == [
        TextBlock(text="I'll search for a weather-related tool to help you get the weather information for San Francisco."),
        TextBlock(text="Great! I found a weather tool. Let me get the current weather for San Francisco."),
        ToolCallBlock(id="toolu_019nRrfqqXcU5NPTUSYfEMAY", name="get_weather", arguments={"location": "San Francisco, CA"}),
    ]
    web = stream_response("anthropic-web-search-tool.1.chunks.txt")
    assert all(isinstance(b, TextBlock) and b.text for b in web.blocks)
    assert "".join(b.text for b in web.blocks).startswith("Based on my search results")
    advisor = stream_response("anthropic-advisor-stop-reasons.chunks.txt")
    assert (advisor.blocks, advisor.finish_reason, advisor.usage) == ([], "stop", Usage(input_tokens=10, output_tokens=20))


def test_refusal_and_fallback():
    refusal = stream_response("anthropic-refusal.chunks.txt")
    assert (refusal.blocks, refusal.finish_reason) == ([], "content_filter")
    assert refusal.provider_data["stop_details"]["category"] == "cyber"
    assert body_response("anthropic-refusal.json").finish_reason == "content_filter"
    assert body_response("anthropic-refusal-no-details.json").provider_data == {
        "id": "msg_01RefusalNoDetailsAbcdefghij",
        "stop_reason": "refusal",
    }
    fallback = stream_response("anthropic-fallback.chunks.txt")
    assert fallback.model == "claude-opus-4-8"  # the model that answered
    assert fallback.blocks == [TextBlock(text="The printing press was invented by Johannes Gutenberg around 1440.")]


def test_duplicate_message_start_is_ignored():
    events = decode(frame(payloads("duplicate-message-start.chunks.txt")))
    assert events == [
        StartEvent(model="claude-3-haiku-20240307", provider_data={"id": "msg_dup"}),
        TextDelta(index=0, text="Hello, World!"),
        DoneEvent(
            finish_reason="stop",
            usage=Usage(input_tokens=17, output_tokens=227),
            model="claude-3-haiku-20240307",
            provider_data={"stop_reason": "end_turn"},
        ),
    ]


def test_spliced_message_start_ends_the_stream_with_a_retryable_error():
    events = decode(frame(payloads("spliced-message-start.chunks.txt")))
    assert events[:-1] == [
        StartEvent(model="claude-3-haiku-20240307", provider_data={"id": "msg_first"}),
        ThinkingDelta(index=0, text="I will call the tool."),
        ThinkingDelta(index=0, signature="sig-first"),
        ToolCallStart(index=1, id="toolu_first", name="test-tool"),
        ToolCallDelta(index=1, arguments='{"value":"Spark'),
    ]
    error = events[-1].error
    assert (error.category, error.retryable) == ("network", True)
    assert "msg_second" in error.message and "msg_first" in error.message
    # nothing of the second generation leaks out
    assert "sig-second" not in repr(events)


# ------------------------------------------------------------ hand-made streams


def test_empty_text_block_before_thinking_is_not_a_block():
    body = frame(
        [
            b'{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":3,"output_tokens":1}}}',
            b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
            b'{"type":"content_block_stop","index":0}',
            b'{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}',
            b'{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hmm"}}',
            b'{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"S"}}',
            b'{"type":"content_block_stop","index":1}',
            b'{"type":"content_block_start","index":2,"content_block":{"type":"redacted_thinking","data":"R=="}}',
            b'{"type":"content_block_stop","index":2}',
            b'{"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}',
            b'{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"hi"}}',
            b'{"type":"content_block_stop","index":3}',
            b'{"type":"message_delta","delta":{"stop_reason":"pause_turn"},"usage":{"output_tokens":9}}',
            b'{"type":"message_stop"}',
        ]
    )
    events = decode(body)
    assert events[1:-1] == [
        ThinkingDelta(index=0, text="hmm"),
        ThinkingDelta(index=0, signature="S"),
        ThinkingDelta(index=1, signature="R==", redacted=True),
        TextDelta(index=2, text="hi"),
    ]
    response = collect(events, provider="anthropic")
    assert response.blocks == [
        ThinkingBlock(text="hmm", signature="S", provider="anthropic"),
        ThinkingBlock(signature="R==", redacted=True, provider="anthropic"),
        TextBlock(text="hi"),
    ]
    assert (response.finish_reason, response.usage) == ("unknown", Usage(input_tokens=3, output_tokens=9))


@pytest.mark.parametrize(
    ("cut", "message"),
    [(0, "before any event"), (3, "before message_stop"), (11, "before message_stop")],
)
def test_a_stream_cut_short_ends_with_a_network_error(cut, message):
    p = payloads("anthropic-text.chunks.txt")[:cut]
    events = decode(frame(p))
    assert isinstance(events[-1], ErrorEvent)
    assert (events[-1].error.category, events[-1].error.retryable) == ("network", True)
    assert message in events[-1].error.message


def test_error_event_and_garbage():
    p = payloads("anthropic-text.chunks.txt")
    err = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    events = decode(frame([*p[:4], err, *p[4:]]))
    assert [type(e).__name__ for e in events] == ["StartEvent", "TextDelta", "ErrorEvent"]
    assert (events[-1].error.category, events[-1].error.message, events[-1].error.retryable) == ("overloaded", "Overloaded", True)
    events = decode(frame(p[:3]) + b"data: {not json\n\n" + frame(p[3:]))
    assert (events[-1].error.category, events[-1].error.retryable) == ("server", True)
    assert "malformed" in events[-1].error.message


# ------------------------------------------------------------ chunking


_BODIES = {
    (name, nl): frame(payloads(name), newline=nl)
    for name in recorded_streams()
    for nl in (b"\n", b"\r\n", b"\r")
}
_WHOLE = {key: decode(body) for key, body in _BODIES.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(sorted(_BODIES)), data=st.data())
def test_any_chunking_gives_the_same_events(key, data):
    body = _BODIES[key]
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=60))
    assert decode(body, sorted(set(cuts))) == _WHOLE[key]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
@pytest.mark.parametrize("name", recorded_streams())
def test_one_byte_chunks_give_the_same_events(name, newline):
    body = frame(payloads(name), newline=newline)
    if len(body) > 20_000:
        body = frame(messages_of(name)[0][:60], newline=newline)
    assert decode(body, list(range(1, len(body)))) == decode(body)


@pytest.mark.parametrize("name", recorded_streams())
def test_line_endings_do_not_matter(name):
    lf = _WHOLE[(name, b"\n")]
    assert _WHOLE[(name, b"\r\n")] == lf and _WHOLE[(name, b"\r")] == lf
    assert decode(frame(payloads(name), named=False)) == lf  # no event: lines, as recorded


def test_switch_to_crlf_midway_and_unusual_frames():
    p = payloads("anthropic-clear-thinking.1.chunks.txt")
    expected = decode(frame(p))
    mixed = frame(p[:7]) + frame(p[7:], newline=b"\r\n")
    for cut in range(0, len(mixed), 97):
        assert decode(mixed, [cut]) == expected
    # comments, ids, retry, a data field with no space, JSON over two data lines, a BOM
    odd = bytearray(b"\xef\xbb\xbf: keep-alive\n\n")
    for i, payload in enumerate(p):
        odd += b"id: %d\nretry: 500\n" % i
        if i == 3:
            head, tail = payload.split(b",", 1)
            odd += b"event: content_block_delta\ndata:" + head + b",\ndata: " + tail + b"\n\n"
        else:
            odd += b"data:" + payload + b"\n\n"
    assert decode(bytes(odd)) == expected
    assert decode(bytes(odd[3:])) == expected  # no BOM: the fast path's general frames
    assert decode(bytes(odd[3:]), list(range(1, len(odd) - 3, 5))) == expected


def test_splits_inside_every_multibyte_character_and_crlf():
    body = frame(payloads("anthropic-clear-thinking.1.chunks.txt"), newline=b"\r\n")
    whole = decode(body)
    cuts = [i for i in range(1, len(body)) if body[i] & 0xC0 == 0x80 or body[i - 1 : i + 1] == b"\r\n"]
    assert len(cuts) > 20
    for cut in cuts:
        assert decode(body, [cut]) == whole


def test_new_block_and_delta_shapes_are_skipped_not_fatal():
    body = frame(
        [
            b'{"type":"message_start","message":{"id":"msg_1","model":"m","content":[{"type":"widget","name":{"x":1}}],"usage":{"input_tokens":3,"output_tokens":1}}}',
            b'{"type":"content_block_start","index":0,"content_block":{"type":"gizmo","text":{"rich":true},"id":7}}',
            b'{"type":"content_block_delta","index":0,"delta":{"type":"gizmo_delta","text":{"rich":true}}}',
            b'{"type":"content_block_stop","index":0}',
            b'{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}',
            b'{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"still here"}}',
            b'{"type":"content_block_stop","index":1}',
            b'{"type":"brand_new_event","index":"x","delta":[1,2]}',
            b'{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_details":{"why":1}},"usage":{"output_tokens":4,"server_tool_use":{"n":1}}}',
            b'{"type":"message_stop"}',
        ]
    )
    events = decode(body)
    assert events[1:] == [
        TextDelta(index=0, text="still here"),
        DoneEvent(
            finish_reason="stop",
            usage=Usage(input_tokens=3, output_tokens=4),
            model="m",
            provider_data={"stop_reason": "end_turn", "stop_details": {"why": 1}},
        ),
    ]


def test_body_with_new_block_shapes():
    body = (
        b'{"id":"msg_1","type":"message","model":"m","content":[{"type":"gizmo","text":{"rich":true},"name":3},'
        b'{"type":"text","text":"kept"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],'
        b'"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":2}}'
    )
    assert codec().decode_response(body, REQ) == Response(
        blocks=[TextBlock(text="kept"), ToolCallBlock(id="toolu_1", name="f", arguments={"a": 1})],
        finish_reason="tool_use",
        usage=Usage(input_tokens=7, output_tokens=6, cached_tokens=2),
        model="m",
        provider="anthropic",
        provider_data={"id": "msg_1", "stop_reason": "tool_use"},
    )


def test_unreadable_or_error_bodies_raise_provider_failure():
    from providers.types import ProviderFailure

    with pytest.raises(ProviderFailure) as info:
        codec().decode_response(b"<html>502 Bad Gateway</html>", REQ)
    assert (info.value.error.category, info.value.error.retryable) == ("server", True)
    with pytest.raises(ProviderFailure) as info:
        codec().decode_response(
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}', REQ
        )
    assert (info.value.error.category, info.value.error.message) == ("overloaded", "Overloaded (request id req_1)")
