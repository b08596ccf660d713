"""Any JSON value in any field of a streamed event or a whole answer: the
OpenAI decoders never raise; the stream still ends with a DoneEvent or an
ErrorEvent, and a whole answer gives a Response or a ProviderFailure."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.openai.chat import ChatCodec
from providers.openai.responses import ResponsesCodec
from providers.settings import settings_for
from providers.types import DoneEvent, ErrorEvent, Message, ProviderFailure, Request, TextBlock

REQ = Request(model="gpt-5", messages=[Message(role="user", content=[TextBlock(text="hi")])])
RESP = ResponsesCodec(settings_for("openai", env={"OPENAI_API_KEY": "sk-test"}, api="responses"))
CHAT = ChatCodec(settings_for("openai", env={"OPENAI_API_KEY": "sk-test"}, api="chat"))

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_RESPONSE_EVENTS = [
    "response.created",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.reasoning_summary_text.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
]
_item = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["message", "reasoning", "function_call"]) | _json,
        "id": _json,
        "call_id": _json,
        "name": _json,
        "arguments": _json,
        "content": _json,
        "summary": _json,
        "encrypted_content": _json,
    },
)
_response = st.fixed_dictionaries(
    {},
    optional={
        "id": _json,
        "model": _json,
        "status": st.sampled_from(["completed", "incomplete", "failed"]) | _json,
        "usage": _json,
        "incomplete_details": st.fixed_dictionaries({"reason": _json}) | _json,
        "error": _json,
        "output": st.lists(_item | _json, max_size=3) | _json,
    },
)
_event = st.fixed_dictionaries(
    {"type": st.sampled_from(_RESPONSE_EVENTS) | _json},
    optional={
        "output_index": st.integers(0, 2) | _json,
        "item_id": _json,
        "summary_index": _json,
        "delta": st.text(max_size=5) | _json,
        "arguments": _json,
        "item": _item | _json,
        "response": _response,
        "error": _json,
        "code": _json,
        "message": _json,
    },
)
_chunk = st.fixed_dictionaries(
    {},
    optional={
        "id": _json,
        "model": _json,
        "usage": _json,
        "error": st.none() | _json,
        "choices": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "index": st.just(0) | _json,
                    "finish_reason": _json,
                    "text": _json,
                    "delta": st.fixed_dictionaries(
                        {},
                        optional={
                            "content": _json,
                            "reasoning_content": _json,
                            "reasoning": _json,
                            "reasoning_details": _json,
                            "refusal": _json,
                            "tool_calls": st.lists(
                                st.fixed_dictionaries(
                                    {},
                                    optional={
                                        "index": _json,
                                        "id": _json,
                                        "function": st.fixed_dictionaries(
                                            {}, optional={"name": _json, "arguments": _json}
                                        ),
                                    },
                                ),
                                max_size=2,
                            ),
                        },
                    ),
                },
            ),
            max_size=2,
        ),
    },
)


def _stream(codec: ChatCodec | ResponsesCodec, events: list[object]) -> list[object]:
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    decoder = codec.stream_decoder(REQ)
    out = decoder.feed(body) + decoder.close()
    assert out, "a stream always ends with an event"
    assert isinstance(out[-1], DoneEvent | ErrorEvent)
    assert sum(isinstance(e, DoneEvent | ErrorEvent) for e in out) == 1
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, max_size=6))
def test_responses_stream_of_any_field_values(events):
    _stream(RESP, events)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_response)
def test_responses_whole_answer_of_any_field_values(answer):
    try:
        response = RESP.decode_response(json.dumps(answer).encode(), REQ)
    except ProviderFailure as failure:  # an error answer
        assert failure.error.provider == "openai" and failure.error.message
    else:
        assert response.finish_reason in ("stop", "tool_use", "length", "content_filter", "unknown")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_chunk, max_size=6))
def test_chat_stream_of_any_field_values(chunks):
    _stream(CHAT, chunks)


def test_an_item_type_that_is_no_string_is_skipped_not_fatal():
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": [1]}},
        {"type": "response.output_text.delta", "output_index": {"a": 1}, "delta": "hi"},
        {"type": "response.output_item.done", "output_index": [0], "item": {"type": {}}},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    out = _stream(RESP, events)
    assert [type(e).__name__ for e in out] == ["StartEvent", "TextDelta", "DoneEvent"]
    answer = {
        "status": "incomplete",
        "incomplete_details": {"reason": ["x"]},
        "output": [{"type": {}}],
    }
    response = RESP.decode_response(json.dumps(answer).encode(), REQ)
    assert (response.finish_reason, response.blocks) == ("unknown", [])
