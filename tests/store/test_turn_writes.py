"""The per-turn writes (queue a prompt, start the turn, its assistant row)
check the agent without a SELECT of their own: an unknown agent, a dead one, a
prompt not pending and a bad message still get the errors they always got, in
the same order, and nothing of a refused write is left behind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from providers.types import Message, TextBlock, Usage
from store import AgentNotFound, Entry, InvalidEntry, Store, StoreError

from .helpers import assistant, user

GHOST = "01900000-0000-7000-8000-00000000beef"
SPENT = Usage(input_tokens=1, output_tokens=1)


def new(store: Store, name: str = "main") -> str:
    return store.create_agent(
        name, provider="anthropic", model="claude-test", thinking_level="low"
    ).uuid


def counts(store: Store) -> tuple[int, int]:
    with store.engine.connect() as conn:
        queued = conn.exec_driver_sql("SELECT count(*) FROM prompt_queue").scalar()
        rows = conn.exec_driver_sql("SELECT count(*) FROM messages").scalar()
    return queued, rows


def test_an_unknown_agent_is_named_by_every_turn_write(store: Store) -> None:
    new(store)  # another agent exists: the refusals are about this id, not an empty table
    before = counts(store)
    calls = [
        lambda: store.enqueue_prompt(GHOST, "t1", "hello"),
        lambda: store.start_turn(GHOST, user("hello"), queue_id=None, turn="t1"),
        lambda: store.start_turn(GHOST, user("hello"), queue_id=1, turn="t1"),
        lambda: store.append_assistant(GHOST, assistant("hi")),
        lambda: store.append_assistant(GHOST, assistant("hi"), end_turn=True),
        lambda: store.record_usage(GHOST, SPENT),
    ]
    for call in calls:
        with pytest.raises(AgentNotFound, match=f"^no agent has the id '{GHOST}'$"):
            call()
    assert counts(store) == before


def test_an_unknown_agent_comes_before_a_bad_message(store: Store) -> None:
    wrong_role = Message(role="assistant", content=[TextBlock(text="not a user message")])
    with pytest.raises(AgentNotFound, match="no agent has the id"):
        store.start_turn(GHOST, wrong_role, queue_id=None, turn="t1")
    with pytest.raises(AgentNotFound, match="no agent has the id"):
        store.append_many(GHOST, [Entry(kind="assistant", message=user("wrong role"))])
    a = new(store)
    with pytest.raises(InvalidEntry, match="holds a 'user'-role message, not 'assistant'"):
        store.start_turn(a, wrong_role, queue_id=None, turn="t1")
    assert store.open_turns() == []


def test_a_dead_agent_takes_no_prompt_and_its_name_is_in_the_refusal(store: Store) -> None:
    a = new(store, "gone")
    store.mark_dead(a)
    with pytest.raises(InvalidEntry, match=rf"^agent gone \({a}\) is dead: it takes no prompts$"):
        store.enqueue_prompt(a, "t1", "too late")
    assert store.queued_prompts() == []
    assert counts(store)[0] == 0


def test_a_refused_prompt_leaves_its_mail_unread(store: Store) -> None:
    a = new(store)
    m1 = store.send_mail(a, "one")
    store.enqueue_prompt(a, "t1", "[mail]", mail_ids=[m1.id])
    m2 = store.send_mail(a, "two")
    with pytest.raises(InvalidEntry, match="not all unread"):
        store.enqueue_prompt(a, "t2", "[mail]", mail_ids=[m1.id, m2.id])
    assert [q.turn for q in store.queued_prompts(a)] == ["t1"]  # the refused row is not there
    assert [m.id for m in store.inbox(a, unread_only=True)] == [m2.id]


def test_a_prompt_of_another_agent_is_not_pending_for_this_one(store: Store) -> None:
    a, b = new(store, "a"), new(store, "b")
    q = store.enqueue_prompt(a, "t1", "for a")
    with pytest.raises(InvalidEntry, match=rf"queued prompt {q.id} of agent {b} is not pending"):
        store.start_turn(b, user("for a"), queue_id=q.id, turn="t1")
    assert [p.id for p in store.queued_prompts(a)] == [q.id]
    assert store.open_turns() == []
    row = store.start_turn(a, user("for a"), queue_id=q.id, turn="t1")
    assert store.open_turns() == [(a, row.id)]


def test_an_assistant_message_without_its_model_takes_the_agents(store: Store) -> None:
    a = new(store)
    bare = Message(role="assistant", content=[TextBlock(text="hi")])
    row = store.append_assistant(a, bare)[0]
    assert row.data is not None
    assert (row.data["provider"], row.data["model"], row.data["thinking_level"]) == (
        "anthropic",
        "claude-test",
        "low",
    )
    own = store.append_assistant(a, assistant("hi", provider="openai", model="gpt-x"))[0]
    assert own.data is not None
    assert (own.data["provider"], own.data["model"]) == ("openai", "gpt-x")
    spent = store.record_usage(a, SPENT)
    assert spent.data is not None
    assert (spent.data["provider"], spent.data["model"]) == ("anthropic", "claude-test")


def test_a_whole_turn_round_trips_after_the_writes(store: Store) -> None:
    a = new(store)
    for i in range(3):
        q = store.enqueue_prompt(a, f"t{i}", f"prompt {i}")
        store.start_turn(a, user(f"prompt {i}"), queue_id=q.id, turn=f"t{i}")
        store.append_assistant(a, assistant(f"answer {i}"), end_turn=True)
    assert store.open_turns() == []
    assert store.queued_prompts() == []
    assert [m.text for m in store.replay(a)] == [
        t for i in range(3) for t in (f"prompt {i}", f"answer {i}")
    ]


def test_between_writes_the_store_holds_no_lock_on_a_sqlite_file(tmp_path: Path) -> None:
    # the writer connection is kept open between writes: another process must
    # still be able to write at once (a held transaction would make it wait)
    path = tmp_path / "ikigai.db"
    with Store(f"sqlite:///{path}") as store:
        a = new(store)
        q = store.enqueue_prompt(a, "t1", "hello")
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("UPDATE prompt_queue SET text = 'changed' WHERE id = ?", (q.id,))
            other.execute("COMMIT")
        finally:
            other.close()
        assert [p.text for p in store.queued_prompts(a)] == ["changed"]
        store.start_turn(a, user("changed"), queue_id=q.id, turn="t1")
        assert store.queued_prompts() == []


def test_a_write_after_the_writer_connection_broke_starts_afresh(tmp_path: Path) -> None:
    with Store(f"sqlite:///{tmp_path / 'ikigai.db'}") as store:
        a = new(store)
        store.enqueue_prompt(a, "t1", "first")
        # break the kept connection under the store, as a lost file handle would
        kept = store._writer
        assert kept is not None
        kept.connection.dbapi_connection.close()  # type: ignore[union-attr]
        with pytest.raises(StoreError, match="closed database"):
            store.enqueue_prompt(a, "t2", "lost")
        store.enqueue_prompt(a, "t3", "after")
        assert [q.turn for q in store.queued_prompts(a)] == ["t1", "t3"]
