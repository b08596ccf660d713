"""The durable prompt queue and open turns: a prompt is in exactly one of the
queue and history, in order, and a turn a crash cut is found and closed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from providers.types import Message, TextBlock
from store import InvalidEntry, Store

from .helpers import assistant


def new(store: Store, name: str = "main") -> str:
    return store.create_agent(name, provider="anthropic", model="claude-test").uuid


def prompt(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def test_queue_survives_a_reopen_in_order(store: Store, open_store: Callable[[], Store]) -> None:
    a = new(store)
    for i in range(3):
        store.enqueue_prompt(a, f"t{i}", f"prompt {i}")
    again = open_store()  # a restarted daemon
    assert [(q.turn, q.text) for q in again.queued_prompts()] == [(f"t{i}", f"prompt {i}") for i in range(3)]
    assert [q.text for q in again.queued_prompts(a)] == ["prompt 0", "prompt 1", "prompt 2"]


def test_a_queued_tool_choice_survives_a_reopen_and_stays_out_of_the_message(
    store: Store, open_store: Callable[[], Store]
) -> None:
    a = new(store)
    store.enqueue_prompt(a, "t0", "plain")
    q = store.enqueue_prompt(a, "t1", "forced", tool_choice={"mode": "tool", "name": "bash"})
    assert q.tool_choice == {"mode": "tool", "name": "bash"}
    again = open_store()  # a restarted daemon
    assert [p.tool_choice for p in again.queued_prompts(a)] == [None, {"mode": "tool", "name": "bash"}]
    row = again.start_turn(a, prompt("forced"), queue_id=q.id, turn="t1")
    assert row.data == {"turn": "t1"}  # the turn's choice, not its message's


def test_starting_a_turn_moves_the_prompt_into_history_once(store: Store) -> None:
    a = new(store)
    q = store.enqueue_prompt(a, "t1", "hello")
    row = store.start_turn(a, prompt("hello"), queue_id=q.id, turn="t1")
    assert store.queued_prompts(a) == []
    assert row.kind == "user" and row.data == {"turn": "t1"}
    assert store.open_turns() == [(a, row.id)]
    with pytest.raises(InvalidEntry, match="not pending"):  # never twice
        store.start_turn(a, prompt("hello"), queue_id=q.id, turn="t1")
    assert [r.kind for r in store.history(a)] == ["user"]


def test_a_completed_turn_closes_with_its_last_row(store: Store) -> None:
    a = new(store)
    q = store.enqueue_prompt(a, "t1", "hello")
    store.start_turn(a, prompt("hello"), queue_id=q.id, turn="t1")
    store.append_assistant(a, assistant("hi"), end_turn=True)
    assert store.open_turns() == []


def test_a_cut_turn_is_marked_interrupted_on_the_next_start(store: Store, open_store: Callable[[], Store]) -> None:
    a = new(store)
    store.start_turn(a, prompt("first"), queue_id=None, turn="t0")
    store.append_assistant(a, assistant("done"), end_turn=True)
    q = store.enqueue_prompt(a, "t1", "cut")
    row = store.start_turn(a, prompt("cut"), queue_id=q.id, turn="t1")
    store.append_assistant(a, assistant("half", tool_calls=1))  # then the daemon dies
    again = open_store()
    assert again.close_open_turns("the daemon stopped") == [(a, row.id)]
    assert again.open_turns() == []
    kinds = [r.kind for r in again.history(a)]
    assert kinds[-1] == "interrupted"
    assert [m.text for m in again.replay(a)] == ["first", "done"]  # the cut turn is out of the context
    assert again.close_open_turns("again") == []


def test_mail_is_read_in_the_transaction_that_queues_it(store: Store) -> None:
    a = new(store)
    m1 = store.send_mail(a, "one")
    m2 = store.send_mail(a, "two")
    assert store.agents_with_unread_mail() == {a}
    store.enqueue_prompt(a, "t1", "[mail]", mail_ids=[m1.id, m2.id])
    assert store.inbox(a, unread_only=True) == []
    assert store.agents_with_unread_mail() == set()
    m3 = store.send_mail(a, "three")
    with pytest.raises(InvalidEntry, match="not all unread"):  # already delivered: refused whole
        store.enqueue_prompt(a, "t2", "[mail]", mail_ids=[m1.id, m3.id])
    assert [m.id for m in store.inbox(a, unread_only=True)] == [m3.id]
    assert len(store.queued_prompts(a)) == 1


def test_a_killed_agent_keeps_its_queue_set_aside(store: Store) -> None:
    a = new(store)
    store.enqueue_prompt(a, "t1", "never run")
    store.mark_dead(a)
    assert store.queued_prompts() == []
    with store.engine.connect() as conn:
        kept = conn.exec_driver_sql("SELECT text, dropped_at IS NOT NULL FROM prompt_queue").all()
    assert [tuple(r) for r in kept] == [("never run", True)]
    with pytest.raises(InvalidEntry, match="dead"):
        store.enqueue_prompt(a, "t2", "too late")
