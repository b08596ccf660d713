"""A fork never ends its inherited history on tool calls without their
results (issue 21 item 2): the store refuses, naming the valid points near it."""

from __future__ import annotations

import pytest

from store import BadForkPoint, Store
from tests.store.helpers import turn


def _rows(store: Store, uuid: str) -> list[tuple[int, str]]:
    return [(r.id, r.kind) for r in store.history(uuid)]


def test_fork_at_tool_calls_is_refused_naming_the_valid_points(store: Store) -> None:
    a = store.create_agent("parent", provider="anthropic", model="claude-test")
    turn(store, a.uuid, "first")
    turn(store, a.uuid, "use a tool", tools=2)
    rows = _rows(store, a.uuid)
    kinds = [k for _, k in rows]
    results = rows[kinds.index("tool_result")][0]
    calls = [i for i, k in rows if k == "tool_call"]
    assert len(calls) == 2
    answer = calls[0] - 1  # the assistant row the tool_call rows follow
    prompt = answer - 1
    assert dict(rows)[answer] == "assistant" and dict(rows)[prompt] == "user"
    for at in (answer, *calls):
        with pytest.raises(BadForkPoint) as e:
            store.fork(a.uuid, at_message_id=at)
        text = str(e.value)
        assert f"at message {at}" in text and "tool calls" in text
        assert f"at {results} (with the results)" in text and f"at {prompt} (before the calls)" in text
    assert [r.name for r in store.list_agents()] == ["parent"]  # nothing was made
    # the points it names are valid, and so is every row that is not such a call
    for at in (results, prompt):
        child = store.fork(a.uuid, at_message_id=at)
        replay = store.replay(child.uuid)
        assert not (replay[-1].role == "assistant" and replay[-1].tool_calls)


def test_fork_at_calls_inherited_from_a_grandparent_is_refused_too(store: Store) -> None:
    a = store.create_agent("root", provider="anthropic", model="claude-test")
    turn(store, a.uuid, "use a tool", tools=1)
    b = store.fork(a.uuid, name="mid")
    calls = next(i for i, k in _rows(store, b.uuid) if k == "tool_call")
    with pytest.raises(BadForkPoint, match="tool calls"):
        store.fork(b.uuid, at_message_id=calls)
