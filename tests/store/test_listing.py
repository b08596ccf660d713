"""agent.list's reads of the store (store/_listing.py): every agent's usage
totals and last activity, kept between calls and caught up from the rows
written since (a high-water mark), are at every step what a full computation
gives; and the listed rows are list_agents' and agent_refs'.

Each test opens its own Store (open_store): the kept values belong to a Store,
and the shared PostgreSQL one sees its tables emptied by hand between tests.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.catalog import Catalog
from providers.types import Usage
from store import InvalidEntry, Store
from store._schema import messages

from .helpers import assistant, user

MODELS = [
    ("anthropic", "claude-test"),
    ("openai", "gpt-test"),
    ("openai", "gpt-test-2025-08-07"),  # a dated snapshot: priced as gpt-test
    ("local", "llama-x"),  # no price: cost unknown
]


def check(store: Store) -> None:
    """The kept values are what the full computations give now."""
    facts = store.listing_facts()
    assert facts.totals == store.usage_totals()
    every = store.last_active(None)
    created = {r.uuid: r.created_at for r in store.list_agents(include_dead=True)}
    assert set(facts.active) <= set(every)  # none for an agent purged away
    assert {u: facts.active.get(u, created[u]) for u in every} == every


def reply(store: Store, uuid: str, model: int, tokens: int) -> None:
    provider, name = MODELS[model]
    store.append_user(uuid, user(f"q{tokens}"))
    store.append_assistant(
        uuid,
        assistant(f"a{tokens}", provider=provider, model=name),
        usage=Usage(input_tokens=tokens, output_tokens=tokens // 3 + 1, cached_tokens=tokens // 4),
        finish_reason="stop",
        end_turn=True,
    )


AGENT = st.integers(0, 50)  # which live agent, modulo how many there are
TOKENS = st.integers(1, 10**6)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("new"), st.integers(0, len(MODELS) - 1)),
        st.tuples(st.just("reply"), AGENT, st.integers(0, len(MODELS) - 1), TOKENS),
        st.tuples(st.just("reply"), AGENT, st.just(0), TOKENS),  # (replies twice as often)
        st.tuples(st.just("usage"), AGENT, st.integers(0, len(MODELS) - 1), TOKENS),
        st.tuples(st.just("switch"), AGENT, st.integers(0, len(MODELS) - 1)),
        st.tuples(st.just("fork"), AGENT),
        st.tuples(st.just("compact"), AGENT, TOKENS),
        st.tuples(st.just("purge"), AGENT),
        st.tuples(st.just("kill"), AGENT),
    ),
    min_size=1,
    max_size=14,
)


_names = itertools.count()  # live names are unique: the examples share a database


def apply(store: Store, live: list[str], op: tuple) -> None:
    kind = op[0]
    n = next(_names)
    if kind == "new" or not live:
        provider, model = MODELS[op[1] if kind == "new" else 0]
        live.append(store.create_agent(f"n{n}", provider=provider, model=model).uuid)
        return
    uuid = live[op[1] % len(live)]
    if kind == "reply":
        reply(store, uuid, op[2], op[3])
    elif kind == "usage":
        provider, model = MODELS[op[2]]
        store.record_usage(
            uuid, Usage(input_tokens=op[3], output_tokens=7), provider=provider, model=model
        )
    elif kind == "switch":
        provider, model = MODELS[op[2]]
        store.switch_model(uuid, provider=provider, model=model)
    elif kind == "fork":
        live.append(store.fork(uuid, name=f"f{n}").uuid)
    elif kind == "compact":
        ids = store.replay_ids(uuid)
        usage = Usage(input_tokens=op[2], output_tokens=3)
        # (the newest row may not be one a compaction can end at: then none)
        with contextlib.suppress(InvalidEntry, IndexError):
            store.compact(uuid, upto=ids[-1], summary="s", usage=usage)
    elif kind in ("purge", "kill"):
        # children first: a parent never dies before its child
        for d in reversed(store.descendants(uuid)):
            store.mark_dead(d.uuid)
            live.remove(d.uuid)
        store.mark_dead(uuid)
        live.remove(uuid)
        if kind == "purge":  # rows a living fork still reads stay; the rest go
            store.remove_agent(uuid, purge=True)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS, look=st.lists(st.booleans(), min_size=14, max_size=14))
def test_kept_totals_and_activity_are_a_full_computation_after_every_write(
    db_url: str, catalog: Catalog, ops: list[tuple], look: list[bool]
) -> None:
    # a Store per example, closed after it (PostgreSQL's connections are few);
    # the database keeps what the examples before wrote
    with Store(db_url, upgrade=False, catalog=catalog) as store:
        check(store)  # (computed from nothing on a store's first call)
        live: list[str] = []
        for n, op in enumerate(ops):
            apply(store, live, op)
            if look[n]:  # some writes pile up between two calls
                check(store)
        check(store)
        assert store._kept.filled  # the last calls caught up: they did not start again
        with Store(db_url, upgrade=False, catalog=catalog) as again:  # a restarted daemon
            assert again.listing_facts() == store.listing_facts()


def test_a_purge_is_seen_though_it_writes_no_row(open_store: Callable[[], Store]) -> None:
    store = open_store()
    parent = store.create_agent("p", provider="anthropic", model="claude-test").uuid
    reply(store, parent, 0, 1000)
    child = store.fork(parent, name="c").uuid  # reads the parent's first turn: it stays
    reply(store, parent, 1, 2000)
    reply(store, child, 0, 500)
    check(store)
    store.mark_dead(child)
    store.mark_dead(parent)
    store.remove_agent(parent, purge=True)  # its second turn goes; the first stays
    check(store)
    assert parent in store.listing_facts().totals
    store.remove_agent(child, purge=True)  # and then the parent's rows and row too
    facts = store.listing_facts()
    assert parent not in facts.totals and child not in facts.totals
    assert parent not in facts.active
    check(store)


def test_an_agent_without_rows_has_no_entry(open_store: Callable[[], Store]) -> None:
    store = open_store()
    check(store)
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    facts = store.listing_facts()
    assert a not in facts.totals and a not in facts.active
    store.set_system_prompt(a, "be brief")  # a row: activity, no usage
    facts = store.listing_facts()
    assert a not in facts.totals and a in facts.active
    check(store)


def test_concurrent_writers_never_leave_a_listing_stale(open_store: Callable[[], Store]) -> None:
    """Writers append in threads; each listing begun after a write was
    acknowledged shows it, and the last one is the full computation."""
    store = open_store()
    writers, turns = 6, 40
    agents = [
        [
            store.create_agent(f"w{w}-{i}", provider="anthropic", model="claude-test").uuid
            for i in range(10)
        ]
        for w in range(writers)
    ]
    acked: dict[str, int] = {}  # agent -> model calls acknowledged
    lock = threading.Lock()
    errors: list[BaseException] = []
    done = threading.Event()

    def write(mine: list[str]) -> None:
        try:
            for t in range(turns):
                uuid = mine[t % len(mine)]
                reply(store, uuid, t % 3, 100 + t)
                with lock:
                    acked[uuid] = acked.get(uuid, 0) + 1
        except BaseException as e:
            errors.append(e)

    def listen() -> None:
        try:
            while not done.is_set():
                with lock:
                    before = dict(acked)
                totals = store.listing_facts().totals
                for uuid, calls in before.items():
                    assert totals[uuid].calls >= calls, "a listing missed an acknowledged write"
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=write, args=(a,)) for a in agents]
    listeners = [threading.Thread(target=listen) for _ in range(2)]
    for t in [*listeners, *threads]:
        t.start()
    for t in threads:
        t.join(timeout=300)
    done.set()
    for t in listeners:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in [*threads, *listeners])
    assert not errors, errors
    check(store)
    assert sum(t.calls for t in store.listing_facts().totals.values()) == writers * turns


@pytest.mark.parametrize("engine_kind", [pytest.param("postgres", marks=pytest.mark.postgres)])
def test_postgres_a_row_committed_after_a_larger_id_is_not_missed(
    engine_kind: str, open_store: Callable[[], Store]
) -> None:
    """PostgreSQL's writers take ids in one order and commit in another: a
    listing that set its mark to the largest id it saw would never read the
    row still in flight below it."""
    store = open_store()
    a = store.create_agent("a", provider="anthropic", model="claude-test").uuid
    b = store.create_agent("b", provider="anthropic", model="claude-test").uuid
    check(store)
    slow = store.engine.connect()  # a writer whose row takes the smaller id and commits last
    try:
        slow.begin()
        usage = {"input_tokens": 1234, "output_tokens": 5}
        slow.execute(
            messages.insert().values(
                agent_uuid=a,
                kind="usage",
                content="",
                data={"usage": usage, "provider": "anthropic", "model": "claude-test"},
                created_at=datetime.now(UTC),
            )
        )
        reply(store, b, 0, 99)  # the larger id, committed first
        facts = store.listing_facts()  # cannot wait for the slow writer: it goes on without it
        assert facts.totals[b].input_tokens == 99 and a not in facts.totals
        slow.commit()
    finally:
        slow.close()
    assert store.listing_facts().totals[a].input_tokens == 1234
    check(store)


def test_listing_records_are_list_agents_and_agent_refs(open_store: Callable[[], Store]) -> None:
    store = open_store()
    made = [
        store.create_agent(f"r{i}", provider="anthropic", model="claude-test") for i in range(6)
    ]
    store.mark_dead(made[1].uuid)
    store.mark_dead(made[2].uuid)
    store.remove_agent(made[2].uuid)  # hidden: not listed, still a ref
    for step in range(3):
        for dead in (False, True):
            records, refs = store.listing_records(include_dead=dead)
            assert records == store.list_agents(include_dead=dead, include_hidden=False)
            assert refs == sorted(store.agent_refs())
        # a changed row is read again, not taken from the last call
        store.rename_agent(made[0].uuid, f"renamed{step}")
        store.switch_model(made[3].uuid, provider="openai", model=f"gpt-test-{step}")
    assert store.listing_records()[0][0].name == "renamed2"
