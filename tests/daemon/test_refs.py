"""Displayed agent ids are refs that resolve: the shortest prefix (8 characters
or more) unique among every agent of the store, dead ones too. UUIDv7 ids
begin with their creation time, so agents made in one burst share far more
than 8 characters; a shorter display would name several agents."""

from __future__ import annotations

import string
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.store import SHORT_REF, short_refs
from store import AgentRecord, Store
from tests.daemon.rpc import RpcFailure, connect


def record(uuid: str, *, name: str | None = None, alive: bool = True) -> AgentRecord:
    return AgentRecord(
        uuid=uuid,
        name=name or f"agent-{uuid[-6:]}",
        parent_uuid=None,
        fork_message_id=None,
        provider="anthropic",
        model="claude-sonnet-4-5",
        thinking_level="none",
        system_prompt="",
        status="running" if alive else "dead",
        created_at=datetime.now(UTC),
        ended_at=None,
    )


def as_uuid(h: str) -> str:
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


HEX = string.hexdigits[:16]
# ids that share long prefixes, as a burst of UUIDv7 does: a common stem and a
# few varying characters
stems = st.text(HEX, min_size=0, max_size=31)
burst = stems.flatmap(
    lambda stem: st.lists(
        st.text(HEX, min_size=32 - len(stem), max_size=32 - len(stem)).map(lambda t: as_uuid(stem + t)),
        min_size=1,
        max_size=12,
        unique=True,
    )
)


@given(burst, st.data())
def test_each_short_ref_names_one_agent_and_is_the_shortest(uuids, data) -> None:
    dead = data.draw(st.sets(st.sampled_from(uuids)))
    records = [record(u, alive=u not in dead) for u in uuids]
    shorts = short_refs(uuids, records)
    assert set(shorts) == set(uuids)
    for u, ref in shorts.items():
        assert u.startswith(ref) and len(ref) >= SHORT_REF and not ref.endswith("-")
        assert [v for v in uuids if v.startswith(ref)] == [u]
        shorter = ref[:-1].rstrip("-")
        if len(shorter) >= SHORT_REF:  # one character less would name another agent too
            assert len([v for v in uuids if v.startswith(shorter)]) > 1


def test_a_live_name_that_looks_like_the_prefix_is_skipped() -> None:
    a, b = as_uuid("0190aaaabbbb7000" + "8" * 16), as_uuid("0190aaaa" + "c" * 24)
    named = record(b, name=a[:8])  # a live agent named like a's 8 characters
    assert short_refs([a], [record(a), named]) == {a: a[:10]}  # "0190aaaa-b": past the hyphen


def test_a_burst_in_a_real_store_resolves_by_each_short_ref(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'ikigai.db'}")
    try:
        made = [
            store.create_agent(f"b{i}", provider="anthropic", model="claude-sonnet-4-5") for i in range(40)
        ]
        for r in made[1::3]:  # dead agents still take refs
            store.mark_dead(r.uuid, reason="test")
        uuids = [r.uuid for r in made]
        assert len({u[:SHORT_REF] for u in uuids}) < len(uuids)  # the burst shares 8 characters
        shorts = short_refs(uuids, store.list_agents(include_dead=True))
        for u in uuids:
            assert store.resolve(shorts[u]).uuid == u
    finally:
        store.close()


@pytest.mark.parametrize("dead_middle", [True, False])
async def test_daemon_lists_and_shows_refs_that_resolve(daemon, nursery, dead_middle) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    uuids = [(await c.call("agent.create", name=f"burst{i}"))["agent"]["uuid"] for i in range(6)]
    if dead_middle:
        for u in uuids[1::2]:
            await c.call("agent.kill", agent=u)
    listed = await c.call("agent.list", include_dead=True)
    assert {a["uuid"] for a in listed} == set(uuids)
    for a in listed:
        shown = await c.call("agent.show", agent=a["short"])
        assert shown["uuid"] == a["uuid"] and shown["short"] == a["short"]
    created = await c.call("agent.create", name="late")
    assert (await c.call("agent.show", agent=created["agent"]["short"]))["uuid"] == created["agent"]["uuid"]


async def test_ambiguous_ref_lists_candidates_once_in_data(daemon, nursery) -> None:
    await daemon.start()
    c = await connect(nursery, str(daemon.socket))
    made = [(await c.call("agent.create", name=f"amb{i}"))["agent"] for i in range(3)]
    common = made[0]["uuid"][:SHORT_REF]
    assert all(a["uuid"].startswith(common) for a in made)  # made within 65 s
    with pytest.raises(RpcFailure) as caught:
        await c.call("agent.show", agent=common)
    err = caught.value.error
    assert err["code"] == -32002
    assert "3 agent ids" in err["message"]
    for a in made:  # the message names none of them: clients list them from data, once
        assert a["uuid"] not in err["message"] and a["name"] not in err["message"]
    # (a short ref grows as agents sharing it are made: the one shown now)
    now = {a["uuid"]: a["short"] for a in await c.call("agent.list")}
    assert [(x["uuid"], x["short"], x["name"]) for x in err["data"]["candidates"]] == [
        (a["uuid"], now[a["uuid"]], a["name"]) for a in made
    ]
