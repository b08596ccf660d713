"""Appending rows, reading history, mail."""

from __future__ import annotations

import threading

import pytest

from providers.types import Message, TextBlock, ToolResultBlock, Usage
from store import AgentNotFound, Entry, InvalidEntry, NoSuchMark, Store

from .helpers import assistant, encode, same, tool_results, user


def new(store: Store, name: str = "main") -> str:
    return store.create_agent(
        name, provider="anthropic", model="claude-test", thinking_level="med"
    ).uuid


def test_assistant_row_data_and_tool_call_rows(store: Store) -> None:
    a = new(store)
    msg = assistant("hi", tool_calls=2, tag="t")
    rows = store.append_assistant(
        a,
        msg,
        usage=Usage(input_tokens=1200, output_tokens=80, thinking_tokens=50, cached_tokens=1000),
        finish_reason="tool_use",
    )
    assert [r.kind for r in rows] == ["assistant", "tool_call", "tool_call"]
    assert rows[0].id < rows[1].id < rows[2].id
    head = rows[0]
    assert head.content == "hi"
    assert head.data == {
        "provider": "anthropic",
        "model": "claude-test",
        "thinking_level": "high",  # as the message says, not the agent's "med"
        "thinking": "thinking about 'hi' ✓",
        "provider_data": {"request_id": "req_t", "zz_last": True, "a_first": 1},
        "usage": {
            "input_tokens": 1200,
            "output_tokens": 80,
            "thinking_tokens": 50,
            "cached_tokens": 1000,
        },
        "finish_reason": "tool_use",
    }
    assert encode(head.message) == encode(msg)
    assert (
        rows[1].content
        == 'bash {"zeta_command":"echo 0","a":[1,2.5,null],"nested":{"y":1,"x":"é"}}'
    )
    assert rows[1].data["tool_call_id"] == "call_t_0"
    assert rows[1].message is None
    # what the store returned is what it reads back
    assert store.history(a) == rows


def test_assistant_without_provider_takes_the_agents(store: Store) -> None:
    a = new(store)
    bare = Message(role="assistant", content=[TextBlock(text="ok")])
    [row] = store.append_assistant(a, bare)
    assert (row.data["provider"], row.data["model"], row.data["thinking_level"]) == (
        "anthropic",
        "claude-test",
        "med",
    )
    same(store.replay(a), [bare])  # the message itself is not altered


def test_tool_result_rows(store: Store) -> None:
    a = new(store)
    calls = assistant("x", tool_calls=2, tag="r")
    res = store.append_tool_results(a, tool_results(calls))
    assert res.kind == "tool_result"
    assert res.content == "out of call_r_0\n\n[error] out of call_r_1\n"
    assert res.data == {
        "results": [
            {"tool_call_id": "call_r_0", "name": "bash", "is_error": False},
            {"tool_call_id": "call_r_1", "name": "bash", "is_error": True},
        ]
    }


@pytest.mark.parametrize(
    ("entry", "error", "match"),
    [
        (Entry(kind="banana"), InvalidEntry, "unknown message kind 'banana'"),
        (Entry(kind="tool_call"), InvalidEntry, "written with its assistant message"),
        (Entry(kind="fork"), InvalidEntry, "fork rows are written by its own Store method"),
        (Entry(kind="user"), InvalidEntry, "needs a providers.types.Message"),
        (
            Entry(kind="user", message=Message(role="assistant", content=[])),
            InvalidEntry,
            "'user'-role message, not 'assistant'",
        ),
        (
            Entry(kind="tool_result", message=Message(role="user", content=[])),
            InvalidEntry,
            "'tool'-role",
        ),
        (
            Entry(kind="clear", message=Message(role="user", content=[])),
            InvalidEntry,
            "takes no message",
        ),
        (Entry(kind="usage", data={}), InvalidEntry, "usage is missing"),
        (
            Entry(kind="usage", data={"usage": {"input_tokens": "many"}}),
            InvalidEntry,
            "usage is not valid",
        ),
        (Entry(kind="rewind", data={"mark_id": 999}), NoSuchMark, "mark 999"),
        (Entry(kind="interrupted", data={"turn_start": 999}), InvalidEntry, "turn_start 999"),
        (Entry(kind="mark", data={"x": object()}), InvalidEntry, "not JSON-able"),
    ],
)
def test_bad_entries_are_refused_and_nothing_lands(
    store: Store, entry: Entry, error: type, match: str
) -> None:
    a = new(store)
    store.append_user(a, user("before"))
    with pytest.raises(error, match=match):
        store.append_many(a, [Entry(kind="user", message=user("batched")), entry])
    assert [r.message.text for r in store.history(a)] == ["before"]


def test_interrupted_must_point_at_the_agents_own_row(store: Store) -> None:
    a = new(store, "a")
    b = new(store, "b")
    other = store.append_user(b, user("b's")).id
    with pytest.raises(InvalidEntry, match=f"turn_start {other} is not one of its messages"):
        store.mark_interrupted(a, other)


def test_append_many_is_all_or_nothing_and_ordered(store: Store) -> None:
    a = new(store)
    calls = assistant("x", tool_calls=1, tag="m")
    rows = store.append_many(
        a,
        [
            Entry(kind="user", message=user("q")),
            Entry(kind="assistant", message=calls, data={"usage": {"input_tokens": 3}}),
            Entry(kind="tool_result", message=tool_results(calls)),
            Entry(kind="mark", content="m", data={"label": "m"}),
        ],
    )
    assert [r.kind for r in rows] == ["user", "assistant", "tool_call", "tool_result", "mark"]
    assert [r.id for r in rows] == sorted(r.id for r in rows)
    assert store.history(a) == rows
    assert store.append_many(a, []) == []


def test_generic_rewind_and_interrupted(store: Store) -> None:
    a = new(store)
    u1 = user("one")
    store.append(a, "user", message=u1)
    mark = store.append(a, "mark", "cp", {"label": "cp"})
    start = store.append(a, "user", message=user("two")).id
    store.append(a, "interrupted", "", {"turn_start": start})
    store.append(a, "user", message=user("three"))
    store.append(a, "rewind", "", {"mark_id": mark.id})
    same(store.replay(a), [u1])


def test_usage_rows(store: Store) -> None:
    a = new(store)
    row = store.record_usage(a, Usage(input_tokens=10, output_tokens=2), note="cancelled stream")
    assert row.kind == "usage"
    assert row.data == {
        "usage": {"input_tokens": 10, "output_tokens": 2},
        "provider": "anthropic",
        "model": "claude-test",
    }
    assert store.replay(a) == []


def test_history_paging(store: Store) -> None:
    a = new(store, "a")
    for i in range(10):
        store.append_user(a, user(f"a{i}"))
    b = store.fork(a, name="b").uuid
    for i in range(5):
        store.append_user(b, user(f"b{i}"))
    texts = lambda rows: [r.message.text if r.message else r.kind for r in rows]  # noqa: E731
    full = store.history(b)
    assert texts(full) == [f"a{i}" for i in range(10)] + ["fork"] + [f"b{i}" for i in range(5)]
    assert texts(store.history(b, limit=3)) == ["b2", "b3", "b4"]
    page = store.history(b, limit=4, before=full[11].id)  # b0
    assert texts(page) == ["a7", "a8", "a9", "fork"]
    assert texts(store.history(b, limit=2, after=full[8].id)) == ["a9", "fork"]
    assert texts(store.history(b, after=full[13].id)) == ["b3", "b4"]
    assert texts(store.history(b, before=full[2].id)) == ["a0", "a1"]
    assert store.history(b, limit=0) == []


def test_unknown_agent_everywhere(store: Store) -> None:
    ghost = "01900000-0000-7000-8000-000000000000"
    calls = [
        lambda: store.get_agent(ghost),
        lambda: store.append_user(ghost, user("x")),
        lambda: store.append_assistant(ghost, assistant("x")),
        lambda: store.clear(ghost),
        lambda: store.mark(ghost),
        lambda: store.rewind(ghost),
        lambda: store.history(ghost),
        lambda: store.replay(ghost),
        lambda: store.fork(ghost),
        lambda: store.mark_dead(ghost),
        lambda: store.switch_model(ghost, model="m2"),
        lambda: store.set_system_prompt(ghost, "x"),
        lambda: store.usage(ghost),
        lambda: store.descendants(ghost),
        lambda: store.send_mail(ghost, "hi"),
        lambda: store.inbox(ghost),
        lambda: store.mark_read(ghost),
        lambda: store.create_agent("kid", provider="p", model="m", parent_uuid=ghost),
    ]
    for call in calls:
        with pytest.raises(AgentNotFound, match=f"no agent has the id '{ghost}'"):
            call()
    assert store.list_agents(include_dead=True) == []


def test_mail(store: Store) -> None:
    a = new(store, "a")
    b = new(store, "b")
    m1 = store.send_mail(b, "hello from a", from_uuid=a)
    m2 = store.send_mail(b, "hello from a person")
    store.send_mail(a, "for a")
    assert (m1.from_uuid, m1.to_uuid, m1.body, m1.read_at) == (a, b, "hello from a", None)
    assert m2.from_uuid is None
    assert store.inbox(b) == [m1, m2]
    assert store.mark_read(b, [m1.id]) == 1
    assert store.mark_read(b, [m1.id]) == 0  # already read
    assert [m.id for m in store.inbox(b)] == [m2.id]
    assert store.mark_read(a, [m2.id]) == 0  # not a's mail
    assert store.mark_read(b, []) == 0
    assert store.mark_read(b) == 1
    assert store.inbox(b) == []
    everything = store.inbox(b, unread_only=False)
    assert [m.id for m in everything] == [m1.id, m2.id]
    assert all(m.read_at is not None for m in everything)
    assert store.inbox(b, unread_only=False, limit=1)[0].id == m1.id
    assert [m.body for m in store.inbox(a)] == ["for a"]


def test_concurrent_writers_from_threads(store: Store) -> None:
    """The agents layer calls the store from worker threads: nothing is lost or interleaved."""
    agents = [new(store, f"t{i}") for i in range(4)]
    errors: list[BaseException] = []

    def work(uuid: str) -> None:
        try:
            for i in range(15):
                store.append_many(
                    uuid,
                    [
                        Entry(kind="user", message=user(f"{uuid}-{i}")),
                        Entry(kind="mark", data={"label": str(i)}),
                    ],
                )
                store.replay(uuid)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(u,)) for u in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for u in agents:
        rows = store.history(u)
        assert [r.kind for r in rows] == ["user", "mark"] * 15
        assert [r.message.text for r in rows if r.message] == [f"{u}-{i}" for i in range(15)]


def test_tool_results_with_images_and_unicode_roundtrip(store: Store) -> None:
    a = new(store)
    m = Message(
        role="tool",
        content=[
            ToolResultBlock(tool_call_id="c", content="naïve ☃ \u0000 \ud7ff end", name="grep")
        ],
    )
    store.append_tool_results(a, m)
    same(store.replay(a), [m])
    # PostgreSQL text and JSONB cannot hold NUL: the readable copies lose it, the message keeps it
    [row] = store.history(a)
    assert row.content == "naïve ☃ \ufffd \ud7ff end"
    assert row.message.content[0].content == m.content[0].content


def test_in_memory_sqlite_from_threads() -> None:
    """sqlite:// (one shared connection) works for quick scripts and tests, from threads too."""
    with Store("sqlite://") as s:
        a = new(s)
        errors: list[BaseException] = []

        def work() -> None:
            try:
                for i in range(20):
                    s.append_user(a, user(str(i)))
                    s.replay(a)
                    s.history(a, limit=3)
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(s.replay(a)) == 80
