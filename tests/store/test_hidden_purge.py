"""Removing and purging agents (issue 19), on SQLite and PostgreSQL: a
removed agent leaves the listings and name lookups; a purge deletes its rows
except those another agent's lineage reads, and never changes what any other
agent's history or replay holds. Also rename, last activity, the lineage
outline, and a lineage copied into a new agent (export and import)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from providers.types import ToolCallBlock
from store import AgentAlive, AgentNotFound, ImportedRow, InvalidEntry, NameTaken, Store
from store._schema import agents, approvals, mail, messages, prompt_queue
from tests.store.helpers import encode, turn


def _views(store: Store, uuids: list[str]) -> dict[str, tuple]:
    """What each agent sees: its history rows and its replayed messages."""
    return {
        u: (
            [(r.id, r.agent_uuid, r.kind, r.content, r.data) for r in store.history(u)],
            [encode(m) for m in store.replay(u)],
        )
        for u in uuids
    }


def _count(store: Store, table: sa.Table, **where: str) -> int:
    with store.engine.connect() as conn:
        q = sa.select(sa.func.count()).select_from(table)
        for column, value in where.items():
            q = q.where(table.c[column] == value)
        return conn.execute(q).scalar_one()


def _last(store: Store, uuid: str, kind: str) -> int:
    return [r.id for r in store.history(uuid) if r.kind == kind][-1]


def test_a_live_agent_is_never_removed(store: Store) -> None:
    a = store.create_agent("alive", provider="anthropic", model="claude-test")
    with pytest.raises(AgentAlive, match="is running: kill it"):
        store.remove_agent(a.uuid, purge=True)
    assert store.get_agent(a.uuid).hidden_at is None


def test_removed_agents_leave_listings_and_names_not_ids(store: Store) -> None:
    a = store.create_agent("gone", provider="anthropic", model="claude-test")
    turn(store, a.uuid, "hello")
    store.mark_dead(a.uuid)
    assert store.remove_agent(a.uuid).purged_rows == 0
    assert store.get_agent(a.uuid).hidden_at is not None
    assert [r.uuid for r in store.list_agents(include_dead=True, include_hidden=False)] == []
    assert [r.uuid for r in store.list_agents(include_dead=True)] == [a.uuid]
    with pytest.raises(AgentNotFound):
        store.resolve("gone")
    assert store.resolve(a.uuid[:13]).uuid == a.uuid
    assert [r.kind for r in store.history(a.uuid)] == ["user", "assistant", "agent_killed"]
    assert store.usage(a.uuid).total.calls == 1  # money spent stays counted


def test_purge_keeps_what_descendants_read_and_changes_no_view(store: Store) -> None:
    # a -> b (forked at a's first turn) -> c (at b's own turn); a -> d at a's second
    a = store.create_agent("a", provider="anthropic", model="claude-test", system_prompt="sys")
    turn(store, a.uuid, "one")
    at_one = _last(store, a.uuid, "assistant")
    turn(store, a.uuid, "two", tools=2)
    at_two = _last(store, a.uuid, "assistant")
    turn(store, a.uuid, "three")
    b = store.fork(a.uuid, at_message_id=at_one, name="b")
    turn(store, b.uuid, "b-own")
    c = store.fork(b.uuid, name="c")
    turn(store, c.uuid, "c-own")
    d = store.fork(a.uuid, at_message_id=at_two, name="d")
    turn(store, d.uuid, "d-own")
    store.send_mail(a.uuid, "to a", from_uuid=b.uuid)
    store.send_mail(b.uuid, "from a", from_uuid=a.uuid)
    store.enqueue_prompt(a.uuid, "t-x", "queued")
    store.add_approval(
        a.uuid,
        approval_id="ap-1",
        turn="t",
        call=ToolCallBlock(id="c1", name="bash", arguments={}),
        rule="ask bash",
        policy="default",
    )
    for x in (a, b, c, d):
        store.mark_dead(x.uuid)
    others = [b.uuid, c.uuid, d.uuid]
    before = _views(store, others)
    a_rows = [r.id for r in store.history(a.uuid)]

    first = store.remove_agent(a.uuid, purge=True)
    assert first.deleted is False
    kept = [r.id for r in store.history(a.uuid)]
    assert kept == [i for i in a_rows if i <= at_two]  # d reads up to at_two, b less
    # rows after at_two, its mail, its queued prompt and its approval
    assert first.purged_rows == len(a_rows) - len(kept) + 1 + 1 + 1
    assert _count(store, mail, to_uuid=a.uuid) == 0
    assert _count(store, prompt_queue, agent_uuid=a.uuid) == 0
    assert _count(store, approvals, agent_uuid=a.uuid) == 0
    assert _views(store, others) == before

    store.remove_agent(d.uuid, purge=True)  # d's rows go, and a's it alone read
    assert _views(store, [b.uuid, c.uuid]) == {u: before[u] for u in (b.uuid, c.uuid)}
    assert [r.id for r in store.history(a.uuid)] == [i for i in a_rows if i <= at_one]
    with pytest.raises(AgentNotFound):
        store.get_agent(d.uuid)

    store.remove_agent(b.uuid, purge=True)
    assert _views(store, [c.uuid]) == {c.uuid: before[c.uuid]}
    store.remove_agent(c.uuid, purge=True)  # the last reader: everything goes, up the chain
    assert _count(store, agents) == 0 and _count(store, messages) == 0
    assert _count(store, mail) == 0


def test_mail_a_purged_agent_sent_stays_with_its_recipient(store: Store) -> None:
    a = store.create_agent("sender", provider="anthropic", model="claude-test")
    b = store.create_agent("reader", provider="anthropic", model="claude-test")
    store.send_mail(b.uuid, "keep me", from_uuid=a.uuid)
    store.mark_dead(a.uuid)
    assert store.remove_agent(a.uuid, purge=True).deleted is True
    (kept,) = store.inbox(b.uuid)
    assert kept.body == "keep me" and kept.from_uuid is None


def test_rename(store: Store) -> None:
    a = store.create_agent("one", provider="anthropic", model="claude-test")
    store.create_agent("two", provider="anthropic", model="claude-test")
    assert store.rename_agent(a.uuid, "uno").name == "uno"
    assert store.resolve("uno").uuid == a.uuid
    with pytest.raises(NameTaken):
        store.rename_agent(a.uuid, "two")
    with pytest.raises(InvalidEntry):
        store.rename_agent(a.uuid, " padded")
    store.mark_dead(a.uuid)
    assert store.rename_agent(a.uuid, "two").name == "two"  # the dead may share a live name


def test_last_active_and_outline(store: Store) -> None:
    a = store.create_agent("a", provider="anthropic", model="claude-test")
    empty = store.create_agent("b", provider="anthropic", model="claude-test")
    turn(store, a.uuid, "hi")
    active = store.last_active()
    assert active[empty.uuid] == empty.created_at
    assert active[a.uuid] == store.history(a.uuid)[-1].created_at > empty.created_at
    assert store.last_active([a.uuid]) == {a.uuid: active[a.uuid]}
    child = store.fork(a.uuid)
    turn(store, child.uuid, "more")
    outline = store.history_outline(child.uuid)
    assert [(o.id, o.agent_uuid, o.kind) for o in outline] == [
        (r.id, r.agent_uuid, r.kind) for r in store.history(child.uuid)
    ]
    data = {r.id: r.data for r in store.history(child.uuid)}
    assert all(o.data == data[o.id] for o in outline if o.kind in ("user", "model_switch"))
    assert all(o.data is None for o in outline if o.kind in ("assistant", "fork"))
    assert any(data[o.id] for o in outline if o.kind in ("assistant", "fork"))


def _imported_rows(store: Store, uuid: str) -> list[ImportedRow]:
    from store._replay import decode_message

    return [
        ImportedRow(
            r.id,
            r.kind,
            r.content,
            r.data,
            decode_message(r.message_json) if r.message_json else None,
            r.created_at,
        )
        for r in store.lineage_rows(uuid)
    ]


def test_a_lineage_imported_replays_the_same(store: Store) -> None:
    a = store.create_agent("src", provider="anthropic", model="claude-test", system_prompt="sys")
    turn(store, a.uuid, "one", tools=1)
    mk = store.mark(a.uuid, "m")
    turn(store, a.uuid, "two")
    store.rewind(a.uuid, "m")
    _, start = turn(store, a.uuid, "cut")
    store.mark_interrupted(a.uuid, start)
    turn(store, a.uuid, "three")
    upto = _last(store, a.uuid, "assistant")
    store.compact(a.uuid, upto=upto, summary="summary")
    child = store.fork(a.uuid, name="kid")
    turn(store, child.uuid, "four")
    rows = _imported_rows(store, child.uuid)
    new = store.import_agent(
        "copy",
        provider="anthropic",
        model="claude-test",
        thinking_level="high",
        system_prompt="sys",
        cwd=None,
        policy=None,
        mcp=None,
        rows=rows,
    )
    assert [encode(m) for m in store.replay(new.uuid)] == [
        encode(m) for m in store.replay(child.uuid)
    ]
    mine = store.history(new.uuid)
    assert [r.kind for r in mine] == [r.kind for r in rows if r.kind != "fork"]
    assert [r.created_at for r in mine] == [r.created_at for r in rows if r.kind != "fork"]
    rewind = next(r for r in mine if r.kind == "rewind")
    assert rewind.data["mark_id"] == next(r.id for r in mine if r.kind == "mark") != mk.id
    assert store.get_agent(new.uuid).parent_uuid is None


def test_an_import_that_fails_writes_nothing(store: Store) -> None:
    a = store.create_agent("src", provider="anthropic", model="claude-test")
    turn(store, a.uuid, "one")
    rows = _imported_rows(store, a.uuid)
    bad = [
        *rows,
        rows[0]._replace(
            id=rows[-1].id + 1, kind="rewind", message=None, data={"mark_id": rows[0].id}
        ),
    ]
    with pytest.raises(
        InvalidEntry,
        match=r"messages\[2\]\.data\.mark_id: \d+ is not the id of an earlier mark row",
    ):
        store.import_agent(
            "copy",
            provider="anthropic",
            model="claude-test",
            thinking_level="none",
            system_prompt="",
            cwd=None,
            policy=None,
            mcp=None,
            rows=bad,
        )
    assert [r.name for r in store.list_agents(include_dead=True)] == ["src"]
    bad_usage = [rows[0], rows[1]._replace(data={"usage": {"input_tokens": "many"}})]
    with pytest.raises(InvalidEntry, match=r"messages\[1\]\.data\.usage"):
        store.import_agent(
            "copy",
            provider="anthropic",
            model="claude-test",
            thinking_level="none",
            system_prompt="",
            cwd=None,
            policy=None,
            mcp=None,
            rows=bad_usage,
        )
