"""Short ids at listing size (agents/store.py): short_refs is what comparing
ids character by character gives, and AsyncStore.listing, which keeps the
last listing's short ids while no agent is made, renamed, killed or removed,
gives ones that resolve after each of those."""

from __future__ import annotations

import string
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from agents.store import SHORT_REF, AsyncStore, short_refs
from providers.types import Usage
from store import AgentRef, Store

from .helpers import assistant


def by_characters(wanted: list[str], refs: list[AgentRef]) -> dict[str, str]:
    """short_refs as it was first written: each id against its neighbours in
    id order, one character at a time."""
    ids = sorted({r.uuid for r in refs}.union(wanted))
    names = {r.name for r in refs if r.alive}
    out = {}
    for u in wanted:
        i = ids.index(u)
        need = SHORT_REF
        for other in ids[max(i - 1, 0) : i] + ids[i + 1 : i + 2]:
            same = next((k for k, (a, b) in enumerate(zip(u, other, strict=False)) if a != b), None)
            need = max(need, (len(u) if same is None else same) + 1)
        while need < len(u) and (u[need - 1] == "-" or u[:need] in names):
            need += 1
        out[u] = u[:need]
    return out


HEX = string.hexdigits[:16]


def as_uuid(h: str) -> str:
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# a burst of UUIDv7 ids: a common stem, the rest varying (equal lengths, ASCII)
uuids = st.text(HEX, max_size=31).flatmap(
    lambda stem: st.lists(
        st.text(HEX, min_size=32 - len(stem), max_size=32 - len(stem)).map(
            lambda t: as_uuid(stem + t)
        ),
        min_size=1,
        max_size=12,
        unique=True,
    )
)
# anything else: lengths that differ, ids that begin others, hyphens, non-ASCII
others = st.text("01-é", max_size=6).flatmap(
    lambda stem: st.lists(
        st.text("01-é", max_size=14).map(lambda t: stem + t), min_size=1, max_size=12, unique=True
    )
)


@given(st.one_of(uuids, others), st.data())
def test_short_refs_are_what_comparing_characters_gives(
    ids: list[str], data: st.DataObject
) -> None:
    refs = [
        AgentRef(
            u,
            # names that are prefixes of ids: a live one makes the ref longer
            data.draw(
                st.sampled_from([u[:k] for k in range(1, len(u) + 1)] + ["x"])
                if u
                else st.just("x")
            ),
            data.draw(st.booleans()),
        )
        for u in ids
        if data.draw(st.booleans())
    ]
    wanted = data.draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
    assert short_refs(wanted, refs) == by_characters(wanted, refs)


async def test_a_listings_short_ids_resolve_after_each_change(
    open_store: Callable[[], Store],
) -> None:
    store = open_store()
    db = AsyncStore(store, threads=2)

    async def listed() -> dict[str, str]:
        listing = await db.listing(include_dead=True)
        shorts = {r.uuid: listing.shorts[r.uuid] for r in listing.records}
        for uuid, short in shorts.items():  # each names its agent alone
            assert store.resolve(short).uuid == uuid
        assert shorts == short_refs(list(shorts), store.agent_refs())
        return shorts

    async def make(name: str) -> str:
        made = await db.create_agent(
            name=name, provider="anthropic", model="claude-test", thinking_level="none"
        )
        return made.uuid

    burst = [await make(f"b{i}") for i in range(12)]  # ids sharing far more than SHORT_REF
    first = await listed()
    assert await listed() == first  # (the kept ones: nothing changed)
    late = await make("late")
    assert late in await listed()
    # a live agent named like another's short id: that one's gets longer
    store.rename_agent(late, first[burst[3]])
    after = await listed()
    assert len(after[burst[3]]) > len(first[burst[3]])
    await db.kill([late], reason="test")  # a dead agent's name no longer counts
    assert (await listed())[burst[3]] == first[burst[3]]
    store.remove_agent(late)  # removed: no longer listed, its id still taken
    assert late not in await listed()


async def test_the_listings_usage_is_the_stores(open_store: Callable[[], Store]) -> None:
    store = open_store()
    db = AsyncStore(store, threads=2)
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    b = store.create_agent("b", provider="anthropic", model="claude-test").uuid
    store.append_assistant(
        a, assistant("x"), usage=Usage(input_tokens=9, output_tokens=2), finish_reason="stop"
    )
    assert await db.usage_totals() == store.usage_totals()
    listing = await db.listing()
    assert listing.totals == store.usage_totals()
    assert listing.active == {a: store.last_active([a])[a]}
    assert b not in listing.active
