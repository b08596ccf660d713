"""Compaction rows: the context up to a row is replaced in replay by a summary,
while history keeps every row; rewinds, clears and forks see it as documented
in docs/store.md."""

from __future__ import annotations

import pytest

from providers.types import Message, Usage
from store import SUMMARY_PREFIX, InvalidEntry, Replayed, Store, summary_message

from .helpers import encode, same, turn, user


def new(store: Store, name: str = "main") -> str:
    return store.create_agent(name, provider="anthropic", model="claude-test").uuid


def three_turns(store: Store, a: str) -> tuple[list[Message], list[Message], list[Message]]:
    t1, _ = turn(store, a, "one", tools=1)
    t2, _ = turn(store, a, "two")
    t3, _ = turn(store, a, "three", tools=2)
    return t1, t2, t3


def test_replay_after_compaction_is_the_summary_then_what_follows(store: Store, open_store) -> None:
    a = new(store)
    t1, t2, t3 = three_turns(store, a)
    before_ids = store.replay_ids(a)
    kept_json = [encode(m) for m in store.replay(a)[len(t1 + t2) :]]
    upto = before_ids[len(t1 + t2) - 1]  # the last message of turn two
    rows_before = store.history(a)

    rec = store.compact(
        a, upto=upto, summary="they said one, then two", data={"reason": "auto", "keep": 4}
    )

    assert rec.kind == "compaction" and rec.content == "they said one, then two"
    assert rec.data == {"upto": upto, "reason": "auto", "keep": 4}
    assert rec.message == summary_message("they said one, then two")
    want = [summary_message("they said one, then two"), *t3]
    same(store.replay(a), want)
    assert store.replay(a)[0].content[0].text.startswith(SUMMARY_PREFIX)
    # kept messages come back byte for byte (signatures, provider data, key order)
    assert [encode(m) for m in store.replay(a)[1:]] == kept_json
    ids = [rec.id, *before_ids[len(t1 + t2) :]]
    assert store.replay_ids(a) == ids
    entries = store.replay_entries(a)
    assert entries == [
        Replayed(i, m, n == 0) for n, (i, m) in enumerate(zip(ids, want, strict=True))
    ]
    # history still has every row, and the compaction row as it was written
    rows = store.history(a)
    assert [r.id for r in rows] == [r.id for r in rows_before] + [rec.id]
    assert rows[-1].data == rec.data and rows[-1].message == rec.message
    # a restarted daemon folds the same
    same(open_store().replay(a), want)
    assert open_store().replay_ids(a) == ids


def test_a_later_compaction_covers_the_earlier_one(store: Store) -> None:
    a = new(store)
    t1, t2, t3 = three_turns(store, a)
    ids = store.replay_ids(a)
    first = store.compact(a, upto=ids[len(t1) - 1], summary="one")
    same(store.replay(a), [summary_message("one"), *t2, *t3])
    # the same point again is allowed (a fresh summary of the same span)
    store.compact(a, upto=ids[len(t1) - 1], summary="one again")
    second = store.compact(a, upto=ids[len(t1 + t2) - 1], summary="one and two")
    same(store.replay(a), [summary_message("one and two"), *t3])
    assert store.replay_ids(a)[0] == second.id
    n = len(store.history(a))
    with pytest.raises(
        InvalidEntry, match=rf"{a}.*row {ids[0]} is before row {ids[len(t1 + t2) - 1]}"
    ):
        store.compact(a, upto=ids[0], summary="less", usage=Usage(input_tokens=5))
    assert len(store.history(a)) == n
    assert first.id < second.id


def test_refused_points_write_nothing(store: Store) -> None:
    a = new(store)
    other = new(store, "other")
    o_msgs, o_first = turn(store, other, "elsewhere")
    t1, _ = turn(store, a, "one", tools=1)
    mark = store.mark(a, "m").id
    start = store.append_user(a, user("cancelled")).id
    store.mark_interrupted(a, start, reason="cancel")
    t2, _ = turn(store, a, "two")
    ok = store.compact(a, upto=store.replay_ids(a)[len(t1) - 1], summary="s")
    tool_call = next(r.id for r in store.history(a) if r.kind == "tool_call")
    nowhere = max(r.id for r in store.history(a)) + 1000
    rows = [(r.id, r.kind) for r in store.history(a)]
    spent = store.usage(a).total

    for upto in (start, o_first, nowhere, ok.id, mark, tool_call):
        with pytest.raises(InvalidEntry, match=rf"agent {a}: row {upto} is not a message"):
            store.compact(a, upto=upto, summary="x", usage=Usage(input_tokens=9))
    for kwargs, why in [
        ({"upto": True}, "upto must be a row id"),
        ({"upto": "7"}, "upto must be a row id"),
        ({"summary": "  \n"}, "summary is empty"),
        ({"summary": "bad \ud800 half"}, "not valid unicode"),
        ({"data": {"upto": 1}}, "give upto as the argument"),
        ({"data": ["not", "a", "dict"]}, "must be a dict"),
        ({"data": {"x": object()}}, "not JSON-able"),
    ]:
        call = {"upto": store.replay_ids(a)[-1], "summary": "x", **kwargs}
        with pytest.raises(InvalidEntry, match=why):
            store.compact(a, usage=Usage(input_tokens=9), **call)
    assert [(r.id, r.kind) for r in store.history(a)] == rows
    assert store.usage(a).total == spent
    same(store.replay(a), [summary_message("s"), *t2])
    same(store.replay(other), o_msgs)


def test_rewind_before_the_compaction_undoes_it_after_keeps_it(store: Store) -> None:
    a = new(store)
    t1, _ = turn(store, a, "one")
    store.mark(a, "before")
    t2, _ = turn(store, a, "two", tools=1)
    ids = store.replay_ids(a)
    store.compact(a, upto=ids[len(t1 + t2) - 1], summary="one two")
    store.mark(a, "after")
    t3, _ = turn(store, a, "three")
    compacted = [summary_message("one two")]

    store.rewind(a, "after")
    same(store.replay(a), compacted)
    t4, _ = turn(store, a, "four")
    same(store.replay(a), [*compacted, *t4])

    store.rewind(a, "before")  # set before the compaction: its messages are back
    same(store.replay(a), t1)
    assert store.replay_ids(a) == ids[: len(t1)]
    assert all(not e.summary for e in store.replay_entries(a))
    # the undone compaction no longer bounds the next one
    store.compact(a, upto=ids[0], summary="first prompt")
    same(store.replay(a), [summary_message("first prompt"), *t1[1:]])
    assert t3  # (written, then rewound away)


def test_rewind_to_a_mark_set_before_undoes_even_when_upto_survives(store: Store) -> None:
    a = new(store)
    t1, t2, t3 = three_turns(store, a)
    store.mark(a, "m")  # after every message the compaction covers, but before it
    store.compact(a, upto=store.replay_ids(a)[len(t1) - 1], summary="one")
    turn(store, a, "four")
    store.rewind(a, "m")
    same(store.replay(a), [*t1, *t2, *t3])
    assert not any(e.summary for e in store.replay_entries(a))


def test_clear_drops_the_compaction(store: Store) -> None:
    a = new(store)
    t1, t2, _ = three_turns(store, a)
    ids = store.replay_ids(a)
    store.compact(a, upto=ids[len(t1) - 1], summary="one")
    store.clear(a)
    assert store.replay(a) == [] and store.replay_entries(a) == []
    t4, _ = turn(store, a, "four")
    same(store.replay(a), t4)
    # rows from before the clear are not in the context any more
    with pytest.raises(InvalidEntry, match="not a message of its current context"):
        store.compact(a, upto=ids[len(t1 + t2) - 1], summary="old")


def test_forks_before_and_after_the_compaction(store: Store) -> None:
    a = new(store, "parent")
    t1, t2, t3 = three_turns(store, a)
    ids = store.replay_ids(a)
    rec = store.compact(a, upto=ids[len(t1 + t2) - 1], summary="one two")
    parent_view = [summary_message("one two"), *t3]

    # forked at a row before the compaction: the uncompacted parent history
    early = store.fork(a, name="early", at_message_id=ids[len(t1 + t2) - 1]).uuid
    same(store.replay(early), [*t1, *t2])
    # at the compaction row itself, or later: the summary is inherited
    at = store.fork(a, name="at", at_message_id=rec.id).uuid
    same(store.replay(at), parent_view)
    late = store.fork(a, name="late").uuid
    same(store.replay(late), parent_view)
    assert store.replay_entries(late)[0] == Replayed(rec.id, summary_message("one two"), True)

    # the child's own compaction may cover its parent's rows; the parent is untouched
    t4, _ = turn(store, late, "four")
    store.compact(late, upto=store.replay_ids(late)[-len(t4) - 1], summary="up to three")
    same(store.replay(late), [summary_message("up to three"), *t4])
    same(store.replay(a), parent_view)
    early_compaction = store.compact(early, upto=ids[0], summary="first")
    same(store.replay(early), [summary_message("first"), *t1[1:], *t2])
    same(store.replay(a), parent_view)
    assert early_compaction.agent_uuid == early


def test_the_summary_calls_usage_is_counted(store: Store) -> None:
    a = new(store)
    t1, _, _ = three_turns(store, a)
    before = store.usage(a).total
    before_all = store.usage_totals()[a]
    spent = Usage(input_tokens=12_000, output_tokens=800, cached_tokens=2_000)
    store.compact(
        a,
        upto=store.replay_ids(a)[len(t1) - 1],
        summary="s",
        usage=spent,
        provider="openai",
        model="gpt-test",
    )
    after = store.usage(a)
    assert after.total.input_tokens - before.input_tokens == 12_000
    assert after.total.output_tokens - before.output_tokens == 800
    gpt = next(t for t in after.by_model if (t.provider, t.model) == ("openai", "gpt-test"))
    assert (gpt.input_tokens, gpt.output_tokens, gpt.cached_tokens) == (12_000, 800, 2_000)
    assert gpt.cost_usd == pytest.approx((10_000 * 1.25 + 2_000 * 0.125 + 800 * 10.0) / 1e6)
    totals = store.usage_totals()[a]
    assert totals.input_tokens - before_all.input_tokens == 12_000
    assert totals.output_tokens - before_all.output_tokens == 800
    usage_row = store.history(a)[-1]
    assert usage_row.kind == "usage" and usage_row.content == "context compaction"
    assert store.history(a)[-2].kind == "compaction"
    # without provider/model the agent's own are recorded
    store.compact(a, upto=store.replay_ids(a)[-1], summary="t", usage=Usage(input_tokens=3))
    assert store.history(a)[-1].data["model"] == "claude-test"
