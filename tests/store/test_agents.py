"""Agents: creation, lookup by id, name or prefix, the tree, death, settings."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from store import AgentNotFound, AmbiguousAgent, InvalidEntry, NameTaken, Store, uuid7
from store._ids import uuid7_time

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_uuid7_is_time_ordered_and_printable() -> None:
    before = datetime.now(UTC)
    ids = [uuid7() for _ in range(5000)]
    assert all(UUID7.match(i) for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    t = uuid7_time(ids[0])
    assert before - timedelta(milliseconds=2) <= t <= datetime.now(UTC)


def test_create_and_get(store: Store) -> None:
    a = store.create_agent(
        "main",
        provider="anthropic",
        model="claude-test",
        thinking_level="high",
        system_prompt="Be brief.",
    )
    assert UUID7.match(a.uuid)
    assert (a.name, a.provider, a.model, a.thinking_level, a.system_prompt, a.status) == (
        "main",
        "anthropic",
        "claude-test",
        "high",
        "Be brief.",
        "running",
    )
    assert a.parent_uuid is None and a.fork_message_id is None and a.ended_at is None
    assert a.created_at.tzinfo is not None
    got = store.get_agent(a.uuid)
    assert got == a  # timestamps round-trip exactly, as aware UTC
    [row] = store.history(a.uuid)
    assert (row.kind, row.content) == ("system", "Be brief.")


def test_live_names_are_unique_dead_ones_free_theirs(store: Store) -> None:
    a = store.create_agent("worker", provider="openai", model="gpt-test")
    with pytest.raises(NameTaken, match=rf"'worker' is taken by live agent {a.uuid}"):
        store.create_agent("worker", provider="openai", model="gpt-test")
    with pytest.raises(NameTaken, match="'worker'"):
        store.fork(a.uuid, name="worker")
    store.mark_dead(a.uuid, reason="done")
    b = store.create_agent("worker", provider="openai", model="gpt-test")
    assert b.uuid != a.uuid
    # only the live one answers to the name
    assert store.resolve("worker").uuid == b.uuid
    store.mark_dead(b.uuid)
    # with none alive, the newest dead one does
    assert store.resolve("worker").uuid == b.uuid
    assert [x.uuid for x in store.find_agents("worker")] == [b.uuid, a.uuid]


@pytest.mark.parametrize("bad", ["", " x", "x ", "two words", "tab\there", "x" * 201, "nl\n"])
def test_bad_names_are_refused(store: Store, bad: str) -> None:
    with pytest.raises(InvalidEntry, match="agent name"):
        store.create_agent(bad, provider="p", model="m")


def test_bad_thinking_level_is_refused(store: Store) -> None:
    with pytest.raises(InvalidEntry, match="thinking level 'max'"):
        store.create_agent("a", provider="p", model="m", thinking_level="max")


def test_resolve_by_id_prefix_and_name(store: Store) -> None:
    a = store.create_agent("alpha", provider="p", model="m")
    b = store.create_agent("beta", provider="p", model="m")
    assert store.resolve(a.uuid) == a
    assert store.resolve(a.uuid.upper()) == a
    assert store.resolve("beta") == b
    # ids made in the same millisecond share a long prefix; the tail differs
    common = 0
    while a.uuid[common] == b.uuid[common]:
        common += 1
    assert store.resolve(b.uuid[: common + 1]) == b
    with pytest.raises(AmbiguousAgent, match=r"start of 2 agent ids"):
        store.resolve(a.uuid[:common])
    with pytest.raises(AgentNotFound, match="'gamma'"):
        store.resolve("gamma")


def test_a_name_beats_an_id_prefix(store: Store) -> None:
    a = store.create_agent("alpha", provider="p", model="m")
    named = store.create_agent(a.uuid[:6], provider="p", model="m")
    assert store.resolve(a.uuid[:6]) == named
    assert store.find_agents(a.uuid[:6])[0].uuid == named.uuid


def test_list_tree_and_descendants(store: Store) -> None:
    root = store.create_agent("root", provider="p", model="m")
    c1 = store.fork(root.uuid, name="c1")
    c2 = store.create_agent("c2", provider="p", model="m", parent_uuid=root.uuid)
    g1 = store.fork(c1.uuid, name="g1")
    other = store.create_agent("other", provider="p", model="m")
    assert [a.name for a in store.list_agents()] == ["root", "c1", "c2", "g1", "other"]
    assert [a.name for a in store.list_agents(parent_uuid=root.uuid)] == ["c1", "c2"]
    assert [a.name for a in store.descendants(root.uuid)] == ["c1", "c2", "g1"]
    assert store.descendants(other.uuid) == []
    store.mark_dead(g1.uuid)
    assert [a.name for a in store.descendants(root.uuid)] == ["c1", "c2"]
    assert [a.name for a in store.descendants(root.uuid, include_dead=True)] == ["c1", "c2", "g1"]
    assert [a.name for a in store.list_agents()] == ["root", "c1", "c2", "other"]
    assert [a.name for a in store.list_agents(include_dead=True)] == [
        "root",
        "c1",
        "c2",
        "g1",
        "other",
    ]
    assert c2.parent_uuid == root.uuid


def test_mark_dead_records_and_is_idempotent(store: Store) -> None:
    a = store.create_agent("a", provider="p", model="m")
    dead = store.mark_dead(a.uuid, reason="killed by user")
    assert dead.status == "dead" and not dead.alive
    assert dead.ended_at is not None and dead.ended_at >= dead.created_at
    again = store.mark_dead(a.uuid, reason="twice")
    assert again == dead
    rows = [r for r in store.history(a.uuid) if r.kind == "agent_killed"]
    assert len(rows) == 1
    assert rows[0].data == {"reason": "killed by user"}
    assert rows[0].content == "killed by user"
    # dead agents stay readable, and can be forked to carry on
    child = store.fork(a.uuid, name="again")
    assert child.alive


def test_set_system_prompt(store: Store) -> None:
    a = store.create_agent("a", provider="p", model="m")
    assert [r.kind for r in store.history(a.uuid)] == []
    rec = store.set_system_prompt(a.uuid, "New rules.")
    assert rec.system_prompt == "New rules."
    assert store.get_agent(a.uuid).system_prompt == "New rules."
    assert [(r.kind, r.content) for r in store.history(a.uuid)] == [("system", "New rules.")]


def test_fork_inherits_settings_unless_overridden(store: Store) -> None:
    a = store.create_agent(
        "a", provider="anthropic", model="claude-test", thinking_level="low", system_prompt="P"
    )
    b = store.fork(a.uuid)
    assert b.name == f"a-{b.uuid[-6:]}"
    assert (b.provider, b.model, b.thinking_level, b.system_prompt) == (
        "anthropic",
        "claude-test",
        "low",
        "P",
    )
    assert b.parent_uuid == a.uuid
    c = store.fork(
        a.uuid,
        name="c",
        provider="openai",
        model="gpt-test",
        thinking_level="high",
        system_prompt="Q",
    )
    assert (c.provider, c.model, c.thinking_level, c.system_prompt) == (
        "openai",
        "gpt-test",
        "high",
        "Q",
    )
    kinds = [(r.kind, r.agent_uuid == c.uuid) for r in store.history(c.uuid)]
    assert kinds == [("system", False), ("fork", True), ("system", True)]
    fork_row = store.history(c.uuid)[1]
    assert fork_row.data == {"parent_uuid": a.uuid, "at_message_id": store.history(a.uuid)[-1].id}
    assert store.get_agent(c.uuid) == c
