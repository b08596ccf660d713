"""Compaction against a reference model, and against hostile arguments.

The model is an actor that holds only what it sends: the context it shows
the model now. A compaction replaces a prefix of it with the summary; a mark
remembers a copy of the context as it stood; a rewind restores that copy and
forgets later marks; a clear empties it. That is a different formulation
from the store's fold (uncompacted positions plus compactions in force), so
agreeing on random sequences says the fold rule is the intuitive one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from providers.types import Message
from store import InvalidEntry, Store, summary_message

from .helpers import assistant, same, user


@dataclass
class Actor:
    uuid: str
    shown: list[tuple[int | None, Message]] = field(default_factory=list)  # None: the summary
    summary_id: int | None = None  # the compaction row the summary comes from
    marks: list[tuple[str | None, list[tuple[int | None, Message]], int | None]] = field(
        default_factory=list
    )


LABELS = st.sampled_from(["a", "b", None])
SUMMARIES = st.text(max_size=40).map(lambda t: "s" + t)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.booleans()),  # cancelled or not
        st.tuples(st.just("turn"), st.just(False)),  # (twice as many turns as the rest)
        st.tuples(st.just("mark"), LABELS),
        st.tuples(st.just("rewind"), LABELS),
        st.tuples(st.just("clear")),
        st.tuples(st.just("compact"), st.integers(0, 20), SUMMARIES),
    ),
    min_size=6,
    max_size=20,
)


def run(store: Store, ops: list[tuple], run_id: int) -> Actor:
    me = Actor(store.create_agent(f"p{run_id}", provider="anthropic", model="claude-test").uuid)
    for n, op in enumerate(ops):
        kind = op[0]
        if kind == "turn":
            tag = f"{run_id}.{n}"
            u = user(f"q{tag}")
            start = store.append_user(me.uuid, u).id
            a = assistant(f"a{tag}", tag=tag)
            a_id = store.append_assistant(me.uuid, a)[0].id
            if op[1]:
                store.mark_interrupted(me.uuid, start, reason="cancel")
            else:
                me.shown += [(start, u), (a_id, a)]
        elif kind == "mark":
            store.mark(me.uuid, op[1])
            me.marks.append((op[1], list(me.shown), me.summary_id))
        elif kind == "rewind":
            found = [i for i, (lb, _, _) in enumerate(me.marks) if op[1] is None or lb == op[1]]
            if not found:
                continue
            store.rewind(me.uuid, op[1])
            i = found[-1]
            _, shown, summary_id = me.marks[i]
            if summary_id != me.summary_id:
                event("a rewind changed the compaction in force")
            me.shown, me.summary_id = list(shown), summary_id
            del me.marks[i + 1 :]
        elif kind == "clear":
            store.clear(me.uuid)
            me.shown, me.summary_id, me.marks = [], None, []
        elif kind == "compact":
            # any message shown (not the summary) may be the last one covered
            points = [i for i, (rid, _) in enumerate(me.shown) if rid is not None]
            if not points:
                continue
            at = points[op[1] % len(points)]
            upto = me.shown[at][0]
            assert upto is not None
            rec = store.compact(me.uuid, upto=upto, summary=op[2])
            me.shown = [(None, summary_message(op[2])), *me.shown[at + 1 :]]
            event("second compaction" if me.summary_id else "compaction")
            me.summary_id = rec.id
    return me


def expected_ids(me: Actor) -> list[int]:
    return [me.summary_id if rid is None else rid for rid, _ in me.shown]  # type: ignore[misc]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_replay_matches_an_actor_that_compacts(store: Store, open_store, ops: list[tuple]) -> None:
    run_id = len(store.list_agents(include_dead=True))
    me = run(store, ops, run_id)
    want = [m for _, m in me.shown]
    for s in (store, open_store()):
        same(s.replay(me.uuid), want)
        assert s.replay_ids(me.uuid) == expected_ids(me)
        entries = s.replay_entries(me.uuid)
        assert [e.id for e in entries] == expected_ids(me)
        assert [e.summary for e in entries] == [rid is None for rid, _ in me.shown]
        same([e.message for e in entries], want)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=20,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    upto=st.one_of(st.integers(-(2**70), 2**70), st.sampled_from(["row", 1.5, None, True])),
    pick=st.integers(0, 10),
    # a lone surrogate is not unicode any database or JSON encoder takes
    summary=st.text(max_size=30) | st.text(max_size=5).map(lambda t: t + "\ud800"),
    data=st.one_of(st.none(), st.dictionaries(st.text(max_size=8), JSON, max_size=5), JSON),
)
def test_hostile_arguments_are_refused_clearly_or_stored_whole(
    store: Store, upto: object, pick: int, summary: str, data: object
) -> None:
    a = store.create_agent(
        f"h{len(store.list_agents(include_dead=True))}", provider="anthropic", model="claude-test"
    ).uuid
    for i in range(3):
        store.append_user(a, user(f"u{i}"))
        store.append_assistant(a, assistant(f"a{i}", tag=str(i)))
    ids = store.replay_ids(a)
    if pick < len(ids):
        upto = ids[pick]  # a valid point, so the other arguments get tested too
    rows = [r.id for r in store.history(a)]
    before = store.replay(a)
    try:
        rec = store.compact(a, upto=upto, summary=summary, data=data)  # type: ignore[arg-type]
    except InvalidEntry as e:
        assert a in str(e) or "data" in str(e)
        assert [r.id for r in store.history(a)] == rows
        same(store.replay(a), before)
        return
    assert upto in ids and summary.strip()
    got = store.replay(a)
    assert got[0].content[0].text.endswith(summary)  # type: ignore[union-attr]
    same(got[1:], before[ids.index(upto) + 1 :])
    assert store.history(a)[-1].id == rec.id
