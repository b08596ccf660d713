"""Replay: the Messages a provider request needs, exactly as the agent held them."""

from __future__ import annotations

import pytest

from providers.types import Message, TextBlock
from store import Entry, NoSuchMark, Store

from .helpers import assistant, encode, image_user, same, tool_results, turn, user


def new(store: Store, name: str = "main", **kw) -> str:
    return store.create_agent(name, provider="anthropic", model="claude-test", **kw).uuid


def test_roundtrip_is_byte_exact_and_survives_restart(store: Store, open_store) -> None:
    a = new(store, system_prompt="You are terse.")
    want: list[Message] = []
    msgs, _ = turn(store, a, "list files", tools=2)
    want += msgs
    img = image_user()
    store.append_user(a, img)
    want.append(img)
    g = assistant("a picture", provider="google", model="gemini-test", tool_calls=1, tag="g")
    store.append_assistant(a, g, finish_reason="tool_use")
    want.append(g)

    got = store.replay(a)
    same(got, want)
    assert got == want
    # the awkward parts, checked one by one as well
    assert got[1].content[0].signature == "EqQBCkgIARABGAIiQLlist files+/=sig20"
    assert got[1].content[1].redacted is True
    assert list(got[1].content[3].arguments) == ["zeta_command", "a", "nested"]
    assert list(got[1].provider_data) == ["request_id", "zz_last", "a_first"]
    assert got[-1].content[3].signature == "gemini-thought-sig"

    # a restarted daemon (a fresh Store on the same database) sees the same bytes
    same(open_store().replay(a), want)


def test_replay_of_empty_and_control_only_history(store: Store) -> None:
    a = new(store, system_prompt="sys")  # writes a system row, which is not a message
    assert store.replay(a) == []
    store.mark(a, "x")
    store.clear(a)
    assert store.replay(a) == []
    assert store.replay_ids(a) == []


def test_fork_chain_three_deep_with_a_clear_in_the_middle(store: Store, open_store) -> None:
    a = new(store, name="a")
    a1, _ = turn(store, a, "a1", tools=1)
    a2, _ = turn(store, a, "a2")
    b = store.fork(a, name="b").uuid
    same(store.replay(b), a1 + a2)
    turn(store, b, "b1")
    store.clear(b)
    b2, _ = turn(store, b, "b2", tools=1)
    c = store.fork(b, name="c").uuid
    c1, _ = turn(store, c, "c1")
    d = store.fork(c, name="d").uuid
    d1, _ = turn(store, d, "d1", tools=1)
    # rows the parents write after the forks are not inherited
    a3, _ = turn(store, a, "a3")
    b3, _ = turn(store, b, "b3")
    c2, _ = turn(store, c, "c2")

    want = {a: a1 + a2 + a3, b: b2 + b3, c: b2 + c1 + c2, d: b2 + c1 + d1}
    for uuid, msgs in want.items():
        same(store.replay(uuid), msgs)
    # a restarted daemon works the lineage out from the rows alone
    fresh = open_store()
    for uuid, msgs in want.items():
        same(fresh.replay(uuid), msgs)
    # the raw history of d walks all the way up, clear included
    kinds = [r.kind for r in store.history(d)]
    assert kinds.count("clear") == 1
    assert kinds.count("fork") == 3
    assert [r.message.text for r in store.history(d) if r.kind == "user"] == [
        "a1",
        "a2",
        "b1",
        "b2",
        "c1",
        "d1",
    ]


def test_fork_at_an_earlier_message(store: Store, open_store) -> None:
    g = new(store, name="g")
    t1, _ = turn(store, g, "t1", tools=1)
    at = store.history(g)[-1].id  # last row of turn 1
    t2, _ = turn(store, g, "t2")
    early = store.fork(g, at_message_id=at, name="early")
    assert early.fork_message_id == at
    same(store.replay(early.uuid), t1)
    # the fork point may be a row the parent itself inherited
    p = store.fork(g, name="p").uuid
    p1, _ = turn(store, p, "p1")
    first_user = store.history(p)[0].id  # g's first row
    assert store.history(p)[0].agent_uuid == g
    q = store.fork(p, at_message_id=first_user, name="q").uuid
    same(store.replay(q), t1[:1])
    q1, _ = turn(store, q, "q1")
    want = {g: t1 + t2, early.uuid: t1, p: t1 + t2 + p1, q: t1[:1] + q1}
    fresh = open_store()
    for uuid, msgs in want.items():
        same(store.replay(uuid), msgs)
        same(fresh.replay(uuid), msgs)


def test_fork_of_an_agent_with_no_history_inherits_nothing(store: Store) -> None:
    a = new(store, name="a")
    b = store.fork(a, name="b")
    assert b.fork_message_id is None
    turn(store, a, "later")
    assert store.replay(b.uuid) == []


def test_spawned_child_does_not_inherit(store: Store) -> None:
    a = new(store, name="a")
    turn(store, a, "x")
    kid = store.create_agent("kid", provider="openai", model="gpt-test", parent_uuid=a)
    assert kid.parent_uuid == a and kid.fork_message_id is None
    assert store.replay(kid.uuid) == []


def test_mark_and_rewind(store: Store) -> None:
    a = new(store)
    t1, _ = turn(store, a, "t1")
    store.mark(a, "one")
    t2, _ = turn(store, a, "t2", tools=1)
    store.mark(a, "two")
    t3, _ = turn(store, a, "t3")
    same(store.replay(a), t1 + t2 + t3)

    store.rewind(a, "two")
    same(store.replay(a), t1 + t2)
    turn(store, a, "t4")
    store.rewind(a, "two")  # the same mark again
    same(store.replay(a), t1 + t2)
    store.rewind(a, "one")
    same(store.replay(a), t1)
    # "two" was set after "one": rewinding past it forgets it
    with pytest.raises(NoSuchMark, match="'two'"):
        store.rewind(a, "two")
    t5, _ = turn(store, a, "t5")
    store.mark(a)  # unlabelled
    turn(store, a, "t6")
    store.rewind(a)  # newest mark
    same(store.replay(a), t1 + t5)
    # everything stays in the raw history
    assert [r.message.text for r in store.history(a) if r.kind == "user"] == [
        "t1",
        "t2",
        "t3",
        "t4",
        "t5",
        "t6",
    ]


def test_rewind_to_a_mark_inherited_from_the_parent(store: Store) -> None:
    a = new(store, name="a")
    t1, _ = turn(store, a, "t1")
    store.mark(a, "base")
    t2, _ = turn(store, a, "t2")
    b = store.fork(a, name="b").uuid
    turn(store, b, "b1")
    store.rewind(b, "base")
    same(store.replay(b), t1)
    same(store.replay(a), t1 + t2)  # the parent is untouched


def test_clear_forgets_marks(store: Store) -> None:
    a = new(store)
    turn(store, a, "t1")
    store.mark(a, "m")
    store.clear(a)
    with pytest.raises(NoSuchMark):
        store.rewind(a, "m")
    t2, _ = turn(store, a, "t2")
    same(store.replay(a), t2)


def test_interrupted_turns_are_left_out(store: Store) -> None:
    a = new(store)
    t1, _ = turn(store, a, "t1", tools=1)
    # a turn cancelled after the model asked for tools, before the results
    start = store.append_user(a, user("t2")).id
    store.append_assistant(a, assistant("calling", tool_calls=2, tag="x"), finish_reason="tool_use")
    store.mark_interrupted(a, start, reason="cancelled by user")
    same(store.replay(a), t1)
    t3, _ = turn(store, a, "t3")
    same(store.replay(a), t1 + t3)
    # a turn cancelled after some tool results
    start = store.append_user(a, user("t4")).id
    calls = assistant("calling", tool_calls=1, tag="y")
    store.append_assistant(a, calls)
    store.append_tool_results(a, tool_results(calls))
    store.mark_interrupted(a, start)
    same(store.replay(a), t1 + t3)
    # kept in history, with the interrupted rows
    hist = store.history(a)
    assert [r.kind for r in hist].count("interrupted") == 2
    assert [r.message.text for r in hist if r.kind == "user"] == ["t1", "t2", "t3", "t4"]
    # a child forked after the interruption does not see it either
    b = store.fork(a, name="b").uuid
    same(store.replay(b), t1 + t3)


def test_child_forked_inside_a_turn_keeps_it_even_if_the_parent_interrupts(store: Store) -> None:
    a = new(store, name="a")
    start = store.append_user(a, user("half")).id
    b = store.fork(a, name="b").uuid
    store.mark_interrupted(a, start)
    assert store.replay(a) == []
    same(store.replay(b), [user("half")])


def test_model_switch_mid_history(store: Store) -> None:
    a = new(store)
    t1, _ = turn(store, a, "t1", tools=1)
    rec = store.switch_model(a, provider="openai", model="gpt-test", thinking_level="med")
    assert (rec.provider, rec.model, rec.thinking_level) == ("openai", "gpt-test", "med")
    u = user("now with gpt")
    store.append_user(a, u)
    o = assistant(
        "gpt answer", provider="openai", model="gpt-test-2025-08-07", tool_calls=1, tag="o"
    )
    store.append_assistant(a, o)
    got = store.replay(a)
    same(got, [*t1, u, o])
    assert [m.provider for m in got if m.role == "assistant"] == [
        "anthropic",
        "anthropic",
        "openai",
    ]
    switch = [r for r in store.history(a) if r.kind == "model_switch"]
    assert len(switch) == 1
    assert switch[0].data == {
        "from": {"provider": "anthropic", "model": "claude-test", "thinking_level": "none"},
        "to": {"provider": "openai", "model": "gpt-test", "thinking_level": "med"},
    }
    assert store.get_agent(a).model == "gpt-test"
    # the assistant row records the model as reported
    last = [r for r in store.history(a) if r.kind == "assistant"][-1]
    assert last.data["model"] == "gpt-test-2025-08-07"
    assert last.data["provider"] == "openai"
    # no change, no row
    store.switch_model(a, model="gpt-test")
    assert [r.kind for r in store.history(a)].count("model_switch") == 1


def test_history_rows_carry_the_exact_message(store: Store) -> None:
    a = new(store)
    msgs, _ = turn(store, a, "hello", tools=1)
    rows = [r for r in store.history(a) if r.message is not None]
    assert [encode(r.message) for r in rows] == [encode(m) for m in msgs]
    kinds = [r.kind for r in store.history(a)]
    assert kinds == ["user", "assistant", "tool_call", "tool_result", "assistant"]


def test_replay_ids_match_replay(store: Store) -> None:
    a = new(store)
    turn(store, a, "t1")
    start = store.append_user(a, user("gone")).id
    store.mark_interrupted(a, start)
    turn(store, a, "t2")
    ids = store.replay_ids(a)
    rows = {r.id: r for r in store.history(a)}
    same([rows[i].message for i in ids], store.replay(a))
    assert start not in ids


def test_long_fork_chain_beyond_one_query(store: Store) -> None:
    """105 generations: more ranges than one query takes (the store splits them)."""
    want: list[Message] = []
    uuid = new(store, name="gen0")
    for i in range(105):
        m = user(f"generation {i}")
        store.append_user(uuid, m)
        want.append(m)
        uuid = store.fork(uuid, name=f"gen{i + 1}").uuid
    last = Message(role="user", content=[TextBlock(text="last")])
    store.append_many(uuid, [Entry(kind="user", message=last)])
    want.append(last)
    same(store.replay(uuid), want)
    assert len(store.history(uuid, limit=5)) == 5
    assert [r.kind for r in store.history(uuid, limit=3)] == ["user", "fork", "user"]
