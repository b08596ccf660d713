"""The pure parts of compaction: where to cut, the transcript the summarizer
reads, tool-result bounds, windows named in refusals, the meter's calibration."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.compaction import Budget, choose_cut, chunks, transcript, window_from_error
from agents.context import bound_results, for_provider
from agents.meter import ContextMeter
from providers.errors import error_from_http
from providers.types import (
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def reply(text: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=text)], provider="anthropic")


def call(n: int) -> list[Message]:
    return [
        Message(
            role="assistant",
            content=[ToolCallBlock(id=f"c{n}", name="bash", arguments={"command": f"echo {n}"})],
            provider="anthropic",
        ),
        Message(role="tool", content=[ToolResultBlock(tool_call_id=f"c{n}", content=f"out {n}", name="bash")]),
    ]


# a turn: a prompt, some tool steps, a final reply
turns = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 400)), min_size=0, max_size=30)


def build(spec: list[tuple[int, int]]) -> tuple[list[Message], list[int]]:
    messages: list[Message] = []
    for n, (steps, size) in enumerate(spec):
        messages.append(user(f"prompt {n} " + "x" * size))
        for s in range(steps):
            messages.extend(call(n * 10 + s))
        messages.append(reply(f"answer {n}"))
    sizes = [len(m.text) // 4 + 5 for m in messages]
    return messages, sizes


@settings(max_examples=300, deadline=None)
@given(turns, st.integers(0, 2000), st.booleans(), st.data())
def test_a_cut_falls_before_a_prompt_and_keeps_what_fits(spec, keep, current, data):
    messages, sizes = build(spec)
    first_is_summary = bool(messages) and data.draw(st.booleans())
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    protect = starts[-1] if current and starts else len(messages)
    cut = choose_cut(
        messages, sizes, first_is_summary=first_is_summary, protect_from=protect, keep_tokens=keep
    )
    lowest = 2 if first_is_summary else 1
    if protect < lowest or sum(sizes) <= keep:
        assert cut is None  # nothing before the current turn, or all of it fits in what is kept
        return
    assert cut is not None and lowest <= cut <= protect
    # never the current turn, never between a call and its result
    assert cut == protect or messages[cut].role == "user"
    if cut < len(messages):
        before = messages[cut - 1]
        assert not (before.role == "assistant" and before.tool_calls)
    kept = sum(sizes[cut:])
    if cut != protect:
        assert kept <= keep
    # the most that fits is kept: the next earlier cut would not fit
    earlier = [i for i in starts if lowest <= i < cut]
    if earlier:
        assert sum(sizes[earlier[-1] :]) > keep


@given(turns, st.integers(0, 40))
def test_keep_turns_keeps_exactly_that_many(spec, keep):
    messages, sizes = build(spec)
    cut = choose_cut(messages, sizes, first_is_summary=False, protect_from=len(messages), keep_turns=keep)
    prompts = [i for i, m in enumerate(messages) if m.role == "user"]
    if keep == 0:
        assert cut == (len(messages) if messages else None)
    elif keep < len(prompts):
        assert cut is not None and sum(1 for i in prompts if i >= cut) == keep
    else:
        assert cut is None  # keeping every turn (or more) compacts nothing


def test_nothing_to_compact_when_only_the_current_turn_or_the_summary_is_there():
    messages, sizes = build([(1, 10)])
    assert choose_cut(messages, sizes, first_is_summary=False, protect_from=0, keep_tokens=0) is None
    one = [user("summary"), user("prompt")]
    assert choose_cut(one, [5, 5], first_is_summary=True, protect_from=1, keep_tokens=0) is None


def test_transcript_shows_roles_calls_and_results_not_thinking():
    msgs = [
        user("please list"),
        Message(
            role="assistant",
            content=[
                ThinkingBlock(text="secret reasoning", signature="sig"),
                ToolCallBlock(id="c1", name="bash", arguments={"command": "ls"}),
            ],
        ),
        Message(role="tool", content=[ToolResultBlock(tool_call_id="c1", content="a\nb" + "z" * 5000, name="bash")]),
        reply("two files"),
    ]
    text = transcript(msgs)
    assert "## User\nplease list" in text
    assert '[called tool bash with {"command": "ls"}]' in text
    assert "[bash result]\na\nb" in text and "characters cut" in text
    assert "secret reasoning" not in text and "sig" not in text
    assert text.endswith("## Assistant\ntwo files")


def test_chunks_are_consecutive_and_within_budget():
    messages, sizes = build([(1, 300)] * 10)
    parts = chunks(messages, sizes, 200)
    assert [m for part in parts for m in part] == messages
    at = 0
    for part in parts:
        n = len(part)
        assert n == 1 or sum(sizes[at : at + n]) <= 200
        at += n


def test_budget_limit_leaves_room_for_the_answer():
    assert Budget(window=4000, output=300, compact_at=0.8).limit == 3200
    assert Budget(window=4000, output=3000, compact_at=0.8).limit == 1000
    assert Budget(window=1000, output=2000, compact_at=0.8).limit == 0


def test_windows_named_in_real_refusals():
    cases = {
        "prompt is too long: 208310 tokens > 200000 maximum": 200000,
        "input length and `max_tokens` exceed context limit: 187254 + 20000 > 200000, decrease input length": 200000,
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.": 128000,
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).": 1048576,
        "request exceeds the available context size": None,
    }
    for message, window in cases.items():
        assert window_from_error(message) == window, message


@given(st.text(max_size=300))
def test_window_from_error_never_raises(text):
    found = window_from_error(text)
    assert found is None or found >= 256


def test_a_refusal_is_classified_as_context_length_by_the_codec():
    body = b'{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 5000 tokens > 4000 maximum"}}'
    error = error_from_http(400, body, provider="anthropic")
    assert error.category == "context_length"
    assert window_from_error(error.message) == 4000


def test_bound_results_cuts_only_the_replay():
    big = "".join(f"{i:06d}\n" for i in range(10000))
    msgs = [user("go"), *call(1)[:1], Message(role="tool", content=[ToolResultBlock(tool_call_id="c1", content=big, name="bash")])]
    out = bound_results(msgs, 500)
    assert msgs[2].content[0].content == big  # the input is not touched
    text = out[2].content[0].content
    assert len(text) < 500 * 4 + 300
    assert text.startswith("000000\n") and text.endswith("009999\n")
    assert f"of {len(big):,} characters cut" in text
    small = [user("go"), *call(2)]
    assert bound_results(small, 500) is small


def test_consecutive_user_messages_go_as_one():
    out = for_provider([user("summary"), user("prompt"), reply("ok")], "anthropic")
    assert [m.role for m in out] == ["user", "assistant"]
    assert [b.text for b in out[0].content] == ["summary", "prompt"]


def test_meter_calibrates_to_reported_usage_and_caches_sizes():
    meter = ContextMeter()
    msgs = [user("x" * 4000), reply("y" * 400)]
    req = Request(model="m", messages=msgs)
    raw = meter.raw(req)
    assert meter.scale("anthropic", raw) == raw + 1  # uncalibrated: the raw estimate
    meter.learn("anthropic", raw, raw * 2)
    assert abs(meter.scale("anthropic", raw) - raw * 2) <= 1
    # appended since: the reported prefix plus the scaled new part
    more = Request(model="m", messages=[*msgs, user("z" * 400)])
    grown = meter.raw(more)
    assert meter.scale("anthropic", grown) > raw * 2
    assert meter.scale("openai", grown) == grown + 1  # per provider
    # the size of a message is computed once
    first = meter.sizes(more.messages)
    assert meter._sizes[id(msgs[0])][0] is msgs[0]
    assert meter.sizes(more.messages) == first
    # an absurd report is bounded
    meter.learn("anthropic", raw, raw * 100)
    assert meter.ratio["anthropic"] == 4.0
