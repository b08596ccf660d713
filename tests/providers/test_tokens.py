"""providers/tokens.py: the rough token estimate made before every model call."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from providers.anthropic.codec import AnthropicCodec
from providers.settings import settings_for
from providers.tokens import (
    CHARS_PER_TOKEN,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_OVERHEAD,
    estimate_message,
    estimate_request,
    estimate_system,
    estimate_text,
    estimate_tools,
)
from providers.types import (
    ImageBlock,
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolCallBlock,
    ToolResultBlock,
)

TOOLS = [
    Tool(
        name="read_file",
        description="Read a file from the working folder and return its text",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    Tool(name="list_files"),
]


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def test_text_is_bytes_over_four_rounded_up():
    assert CHARS_PER_TOKEN == 4
    assert estimate_text("") == 0
    assert estimate_text("a") == 1
    assert estimate_text("abcd" * 10) == 10
    assert estimate_text("abcd" * 10 + "e") == 11
    # UTF-8 bytes, not characters: "é" is two bytes, "日" three
    assert estimate_text("é" * 4) == 2
    assert estimate_text("日" * 4) == 3


def test_a_lone_surrogate_is_counted_not_raised():
    # "\ud800" arrives from a JSON escape; it cannot be UTF-8 encoded
    assert estimate_text("abc\ud800") == 1  # counted as one byte
    assert estimate_text("abcd\ud800") == 2
    # as if the surrogate were one replaced byte
    assert estimate_message(user("x" * 400 + "\ud800")) == estimate_message(user("x" * 400 + "?"))


def test_message_is_its_content_json_plus_overhead():
    small = estimate_message(user("hi"))
    big = estimate_message(user("x" * 4000))
    assert small >= MESSAGE_OVERHEAD
    # 4000 more characters of text: about 1000 more tokens
    assert 990 <= big - small <= 1010


def test_an_image_costs_a_fixed_estimate_not_its_base64_length():
    data = "QUJD" * 250_000  # a megabyte of base64
    photo = Message(
        role="user", content=[TextBlock(text="what is this?"), ImageBlock(media_type="image/png", data=data)]
    )
    two = Message(
        role="user",
        content=[
            TextBlock(text="what is this?"),
            ImageBlock(media_type="image/png", data=data),
            ImageBlock(media_type="image/png", data=data[:1000]),
        ],
    )
    text_only = estimate_message(user("what is this?"))
    assert IMAGE_TOKENS <= estimate_message(photo) - text_only <= IMAGE_TOKENS + 20
    assert 2 * IMAGE_TOKENS <= estimate_message(two) - text_only <= 2 * IMAGE_TOKENS + 40
    by_url = Message(role="user", content=[ImageBlock(media_type="image/png", url="https://example.com/a.png")])
    assert estimate_message(by_url) >= IMAGE_TOKENS


def test_signatures_and_provider_state_count_by_their_length():
    plain = Message(role="assistant", content=[ThinkingBlock(text="hmm", provider="anthropic")])
    signed = Message(
        role="assistant", content=[ThinkingBlock(text="hmm", signature="s" * 4000, provider="anthropic")]
    )
    assert 990 <= estimate_message(signed) - estimate_message(plain) <= 1010
    carried = Message(
        role="assistant", content=[TextBlock(text="ok")], provider_data={"encrypted": "e" * 8000}
    )
    assert 1990 <= estimate_message(carried) - estimate_message(Message(role="assistant", content=[TextBlock(text="ok")])) <= 2010


def test_tool_calls_and_results_count():
    call = Message(role="assistant", content=[ToolCallBlock(id="c1", name="read_file", arguments={"path": "a" * 400})])
    result = Message(role="tool", content=[ToolResultBlock(tool_call_id="c1", content="r" * 8000)])
    assert estimate_message(call) >= 100
    assert 2000 <= estimate_message(result) <= 2030


def test_system_and_tools():
    assert estimate_system([]) == 0
    assert estimate_system([TextBlock(text="x" * 400), TextBlock(text="y" * 400)]) == 200 + MESSAGE_OVERHEAD
    assert estimate_tools([]) == 0
    one = estimate_tools(TOOLS[:1])
    both = estimate_tools(TOOLS)
    assert one > TOOL_OVERHEAD + 20  # the schema and the description count
    assert both > one + TOOL_OVERHEAD


def test_request_is_system_plus_messages_plus_tools():
    messages = [user("hello " * 50), Message(role="assistant", content=[TextBlock(text="hi " * 30)])]
    req = Request(model="m", system=[TextBlock(text="be brief " * 20)], messages=messages, tools=TOOLS)
    parts = estimate_system(req.system) + sum(map(estimate_message, messages)) + estimate_tools(TOOLS)
    assert estimate_request(req) == parts
    assert estimate_request(Request(model="m", messages=[])) == 0


def test_close_to_the_bytes_a_codec_sends():
    """Whatever the wire adds, the estimate stays within a small factor of
    (bytes sent) / 4: calibration corrects a steady factor, not chaos."""
    codec = AnthropicCodec(settings_for("anthropic", env={"ANTHROPIC_API_KEY": "k"}))
    messages = []
    for i in range(40):
        messages.append(user(f"question {i}: " + "why is the sky blue? " * (i + 1)))
        messages.append(Message(role="assistant", content=[TextBlock(text="because of Rayleigh scattering " * (i + 1))]))
    req = Request(model="claude-sonnet-4-5", system=[TextBlock(text="You answer questions.")], messages=messages, tools=TOOLS)
    sent = len(codec.encode(req, stream=True).body) / CHARS_PER_TOKEN
    assert 0.7 * sent <= estimate_request(req) <= 1.3 * sent


def test_fast_enough_to_run_before_every_call():
    messages = [user("lorem ipsum dolor sit amet " * 40) for _ in range(5000)]  # ~5 MB of text
    start = time.perf_counter()
    total = sum(estimate_message(m) for m in messages)
    elapsed = time.perf_counter() - start
    assert total > 5000 * 250
    assert elapsed < 2.0  # msgspec encodes ~1 GB/s; this is ~10 ms on a quiet machine


_TEXT = st.text(max_size=300)  # any code point, lone surrogates included
_BLOCK = st.one_of(
    st.builds(TextBlock, text=_TEXT),
    st.builds(ThinkingBlock, text=_TEXT, signature=st.none() | _TEXT, provider=st.none() | _TEXT),
    st.builds(ToolCallBlock, id=_TEXT, name=_TEXT, arguments=st.dictionaries(_TEXT, _TEXT | st.integers(), max_size=3)),
    st.builds(ToolResultBlock, tool_call_id=_TEXT, content=_TEXT, is_error=st.booleans()),
    st.builds(ImageBlock, media_type=_TEXT, data=st.none() | _TEXT, url=st.none() | _TEXT),
)


@settings(max_examples=300, deadline=None)
@given(blocks=st.lists(_BLOCK, max_size=6), more=_BLOCK, data=st.none() | st.dictionaries(_TEXT, _TEXT, max_size=3))
def test_any_message_gets_a_count_and_more_content_never_counts_less(blocks, more, data):
    msg = Message(role="user", content=blocks, provider_data=data)
    n = estimate_message(msg)
    assert isinstance(n, int) and n >= MESSAGE_OVERHEAD
    assert estimate_message(Message(role="user", content=[*blocks, more], provider_data=data)) >= n


def test_a_tool_results_image_costs_an_image_not_its_base64():
    from providers.tokens import IMAGE_TOKENS
    from providers.types import ImageBlock, ToolResultBlock

    data = "A" * 1_000_000
    shot = ToolResultBlock(tool_call_id="c", content="a screenshot", images=[ImageBlock(media_type="image/png", data=data)])
    plain = ToolResultBlock(tool_call_id="c", content="a screenshot")
    with_image = estimate_message(Message(role="tool", content=[shot]))
    without = estimate_message(Message(role="tool", content=[plain]))
    assert with_image - without <= IMAGE_TOKENS + 50
