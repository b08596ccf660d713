"""The replay kept between model calls (agents/_prefix.py): after any sequence
of appends and invalidations it is exactly the whole walk (for_provider, then
bound_results, then the meter), and a list handed out is never changed."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.context import bound_results, for_provider
from agents.meter import ContextMeter
from providers.tokens import estimate_message
from providers.types import (
    Message,
    Request,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)

PROVIDERS = ["anthropic", "openai", "google"]
# max_tokens of the cut: rooms of 200 (the floor), 240, 400 and 20,000 characters
BOUNDS = [1, 60, 100, 5000]

_provider = st.sampled_from([None, *PROVIDERS])
_signature = st.one_of(st.none(), st.sampled_from(["sig-a", "sig-b"]))
_text = st.text(alphabet="ab c\n", max_size=8)
_thinking = st.builds(
    ThinkingBlock,
    text=_text,
    signature=_signature,
    redacted=st.booleans(),
    provider=_provider,
    provider_data=st.one_of(st.none(), st.just({"id": "rs_1"})),
)
_text_block = st.builds(TextBlock, text=_text, signature=_signature, provider=_provider)
_call = st.builds(
    ToolCallBlock,
    id=st.sampled_from(["call_1", "call_2"]),
    name=st.just("bash"),
    arguments=st.just({"command": "ls"}),
    signature=_signature,
    provider=_provider,
    provider_data=st.one_of(st.none(), st.just({"thought": "x"})),
)


def _long(n: int) -> str:
    # head and tail differ, so a cut in the wrong place shows
    return "".join(chr(97 + i % 26) for i in range(n))


_result = st.builds(
    ToolResultBlock,
    tool_call_id=st.sampled_from(["call_1", "call_2"]),
    content=st.one_of(_text, st.integers(0, 1500).map(_long)),
    is_error=st.booleans(),
    name=st.just("bash"),
)
_user = st.builds(
    Message, role=st.just("user"), content=st.lists(_text_block, min_size=1, max_size=2)
)
_assistant = st.builds(
    Message,
    role=st.just("assistant"),
    # thinking only (a reply cut off while reasoning) is dropped from the replay
    content=st.lists(st.one_of(_thinking, _text_block, _call), max_size=4),
    provider=_provider,
    model=st.sampled_from([None, "m"]),
    provider_data=st.one_of(st.none(), st.just({"response_id": "r1"})),
)
_tool = st.builds(
    Message,
    role=st.just("tool"),
    content=st.lists(st.one_of(_result, _result, _text_block), min_size=1, max_size=3),
)
# users weighed up: consecutive users are what the conversion merges
_message = st.one_of(_user, _user, _assistant, _tool)

_step = st.one_of(
    st.tuples(st.just("append"), st.lists(_message, min_size=1, max_size=4)),
    st.tuples(st.just("append"), st.lists(_message, min_size=1, max_size=4)),
    st.tuples(st.just("append"), st.lists(_user, min_size=1, max_size=2)),
    # the context replaced by a new list (a reload, a rewind, a compaction):
    # its first messages kept, as the same objects or as equal copies from the store
    st.tuples(st.just("replace"), st.integers(0, 60)),
    st.tuples(st.just("reload"), st.integers(0, 60)),
    # the same list cut short in place, and maybe appended to with new
    # messages before the next call (not what an actor does: what the check catches)
    st.tuples(st.just("pop"), st.integers(1, 3)),
    st.tuples(st.just("rewrite"), st.tuples(st.integers(1, 3), st.lists(_message, max_size=4))),
    st.tuples(st.just("provider"), st.sampled_from(PROVIDERS)),
    st.tuples(st.just("bound"), st.sampled_from(BOUNDS)),
    st.tuples(st.just("clear"), st.none()),
)


def _copy(msg: Message) -> Message:
    return msgspec.msgpack.decode(msgspec.msgpack.encode(msg), type=Message)


def _full(context: list[Message], provider: str, bound: int) -> list[Message]:
    return bound_results(for_provider(context, provider), bound)


SYSTEM = [TextBlock(text="be brief")]


@settings(max_examples=300, deadline=None)
@given(
    first=st.lists(_message, max_size=6),
    steps=st.lists(_step, min_size=1, max_size=30),
    provider=st.sampled_from(PROVIDERS),
    bound=st.sampled_from(BOUNDS),
)
def test_the_kept_replay_is_the_whole_walk_after_every_step(first, steps, provider, bound):
    meter = ContextMeter()
    context = list(first)
    handed: list[tuple[list[Message], list[Message]]] = []  # (list returned, its elements then)
    for kind, arg in steps:
        if kind == "append":
            context.extend(arg)
        elif kind == "replace":
            context = context[:arg]
        elif kind == "reload":
            context = [_copy(m) for m in context[:arg]]
        elif kind == "pop":
            del context[max(0, len(context) - arg) :]
        elif kind == "rewrite":
            del context[max(0, len(context) - arg[0]) :]
            context.extend(arg[1])
        elif kind == "provider":
            provider = arg
        elif kind == "bound":
            bound = arg
        else:
            meter.prefix.clear()
        out = meter.prepared(context, provider, bound)
        full = _full(context, provider, bound)
        assert out == full
        # the context's own objects where the whole walk keeps them (the size
        # cache goes by identity): nothing re-made needlessly
        own = {id(m) for m in context}
        assert all(a is b for a, b in zip(out, full, strict=True) if id(b) in own)
        request = Request(model="m", messages=out, system=SYSTEM)
        expected = ContextMeter().fixed(request) + sum(estimate_message(m) for m in full)
        assert meter.raw(request) == expected
        # a list already in a request is appended to at most, never changed
        for sent, then in handed:
            assert len(sent) >= len(then)
            assert all(a is b for a, b in zip(sent, then, strict=False))
        handed.append((out, list(out)))


def test_a_prompt_after_a_prompt_merges_without_changing_the_request_sent():
    meter = ContextMeter()
    first = Message(role="user", content=[TextBlock(text="a failed turn's prompt")])
    context = [first]
    sent = meter.prepared(context, "anthropic", 1000)
    context.append(Message(role="user", content=[TextBlock(text="the next prompt")]))
    now = meter.prepared(context, "anthropic", 1000)
    assert sent == [first]  # the earlier request still holds what it sent
    assert now is not sent
    assert [b.text for b in now[0].content] == ["a failed turn's prompt", "the next prompt"]
    assert meter.raw(Request(model="m", messages=now)) == estimate_message(now[0])


def test_an_appended_message_is_walked_alone():
    """Steady state: the list grows in place, and the total with it."""
    meter = ContextMeter()
    context = [
        Message(role="user" if i % 2 == 0 else "assistant", content=[TextBlock(text=f"m{i}")])
        for i in range(100)
    ]
    out = meter.prepared(context, "anthropic", 1000)
    context.append(Message(role="user", content=[TextBlock(text="more")]))
    assert meter.prepared(context, "anthropic", 1000) is out  # appended to, not rebuilt
    assert len(out) == 101
    assert meter.raw(Request(model="m", messages=out)) == sum(estimate_message(m) for m in out)
    # a request whose list is not the replay kept is measured message by message
    other = list(out)
    assert meter.raw(Request(model="m", messages=other)) == sum(estimate_message(m) for m in other)


def test_replaced_contexts_do_not_pile_up_in_the_size_cache():
    meter = ContextMeter()
    for n in range(30):  # 30 reloads of a 100-message context, each new objects
        context = [Message(role="user", content=[TextBlock(text=f"{n}-{i}")]) for i in range(100)]
        for i in range(10):
            context.append(Message(role="tool", content=[TextBlock(text=f"{n}+{i}")]))
            meter.prepared(context, "openai", 1000)
    assert len(meter._sizes) <= 2 * 110 + 256
