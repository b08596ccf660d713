"""Group commit (store/_group.py): concurrent writes share one transaction
and one commit, each caller answered once its write is committed; a failing
write fails only its own caller, a failing commit every write in it; and
after kill -9 every acknowledged write is there exactly once.

On both engines: it is a SQLite file's default, and PostgreSQL's when asked
for (``group_commit=True``; its writes run in parallel by default)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import outcome
import pytest
import sqlalchemy as sa
from sqlalchemy import event, exc

from store import AgentNotFound, Budget, BudgetRefused, Store, StoreError
from store._rows import Prepared

from .helpers import user

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("group_writer.py")
GHOST = "01900000-0000-7000-8000-00000000beef"
WAIT = 60.0  # seconds: a generous bound on a loaded machine, never a pace


def new(store: Store, name: str) -> str:
    return store.create_agent(name, provider="anthropic", model="claude-test").uuid


@contextmanager
def counted_commits(store: Store) -> Iterator[list[int]]:
    """The COMMITs the store's engine issues inside the block."""
    seen = [0]

    def on_commit(_conn: Any) -> None:
        seen[0] += 1

    event.listen(store.engine, "commit", on_commit)
    try:
        yield seen
    finally:
        event.remove(store.engine, "commit", on_commit)


def texts(store: Store, uuid: str) -> list[str]:
    return [r.content for r in store.history(uuid)]


def committed(store: Store, row_id: int) -> bool:
    """Whether another connection sees the row: only committed rows are visible there."""
    with store.engine.connect() as conn:
        found = conn.execute(sa.text("SELECT 1 FROM messages WHERE id = :i"), {"i": row_id})
        return found.first() is not None


def one_batch(
    store: Store,
    lead: Callable[[sa.Connection], None],
    others: list[Callable[[], Any]],
) -> tuple[outcome.Outcome, list[outcome.Outcome]]:
    """Run ``lead`` as the body of a write that keeps its turn until each of
    ``others`` (store calls, in threads) waits for it: with the batch's time
    limit lifted, they all join its batch. The outcome of each."""
    holding, go = threading.Event(), threading.Event()
    results: list[outcome.Outcome | None] = [None] * (len(others) + 1)

    def leader() -> None:
        def body() -> None:
            with store._write() as conn:
                lead(conn)
                holding.set()
                assert go.wait(WAIT)

        results[0] = outcome.capture(body)

    def member(i: int, fn: Callable[[], Any]) -> None:
        results[i] = outcome.capture(fn)

    threads = [threading.Thread(target=leader)]
    threads[0].start()
    assert holding.wait(WAIT), results[0]
    for i, fn in enumerate(others, 1):
        threads.append(threading.Thread(target=member, args=(i, fn)))
        threads[-1].start()
    deadline = time.monotonic() + WAIT
    while store._group.waiting < len(others):  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the writers never queued for their turn"
        time.sleep(0.001)
    go.set()
    for t in threads:
        t.join(WAIT)
        assert not t.is_alive(), "a writer never returned"
    assert all(r is not None for r in results)
    return results[0], results[1:]  # type: ignore[return-value]


@pytest.fixture
def grouped(db_url: str, catalog: Any) -> Iterator[Store]:
    """A Store with group commit on (PostgreSQL's default is off)."""
    with Store(db_url, upgrade=False, catalog=catalog, group_commit=True) as store:
        yield store


@pytest.fixture
def batching(grouped: Store, monkeypatch: pytest.MonkeyPatch) -> Store:
    """Such a store with no time limit on a batch: a loaded machine may take
    long between members, and one_batch's writers must all share one commit."""
    monkeypatch.setattr(grouped._group, "_max_wait", 3600.0)
    return grouped


def insert(store: Store, conn: sa.Connection, uuid: str, text: str) -> None:
    store._insert(conn, uuid, [Prepared("user", text)])


# ---------------------------------------------------------------- sharing


def test_concurrent_writes_share_commits_and_each_returns_committed(grouped: Store) -> None:
    store = grouped
    threads, each = 16, 50
    agents = [new(store, f"w{k}") for k in range(threads)]
    start = threading.Barrier(threads)
    unseen: list[int] = []

    def work(k: int) -> None:
        start.wait(WAIT)
        for i in range(each):
            rec = store.append_user(agents[k], user(f"{k} {i}"))
            if not committed(store, rec.id):  # answered before its commit
                unseen.append(rec.id)

    with counted_commits(store) as commits:
        runs = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for t in runs:
            t.start()
        for t in runs:
            t.join(WAIT * 4)
            assert not t.is_alive()
    assert unseen == []
    writes = threads * each
    # Each commit while the others queue up gathers them: far fewer than writes
    # (about writes / threads when every thread writes all the time).
    assert commits[0] <= writes // 4, f"{commits[0]} commits for {writes} writes"
    for k, uuid in enumerate(agents):
        assert texts(store, uuid) == [f"{k} {i}" for i in range(each)]


def test_ungrouped_writes_commit_each_alone(db_url: str, engine_kind: str) -> None:
    # off (the benchmark's comparison), and PostgreSQL's default
    modes = [False, None] if engine_kind == "postgres" else [False]
    for mode in modes:
        with Store(db_url, upgrade=False, group_commit=mode) as store:
            agents = [new(store, f"w{k}-{mode}") for k in range(4)]
            with counted_commits(store) as commits:
                runs = [
                    threading.Thread(
                        target=lambda a=a: [store.append_user(a, user(str(i))) for i in range(10)]
                    )
                    for a in agents
                ]
                for t in runs:
                    t.start()
                for t in runs:
                    t.join(WAIT)
            assert commits[0] == 40, mode
            assert all(texts(store, a) == [str(i) for i in range(10)] for a in agents)


# ---------------------------------------------------------------- a failing write


def test_a_refused_write_inside_a_batch_fails_only_its_caller(batching: Store) -> None:
    store = batching
    lead, *good = (new(store, f"a{k}") for k in range(5))
    calls: list[Callable[[], Any]] = [
        lambda a=a: store.append_user(a, user(f"kept {a}")) for a in good[:2]
    ]
    # an unknown agent: the foreign key refuses the INSERT (on PostgreSQL that
    # fails the whole transaction but for the savepoint)
    calls.append(lambda: store.append_user(GHOST, user("ghost")))
    # a write that inserts its agent and is then refused: none of it may stay
    calls.append(
        lambda: store.create_agent(
            "doomed", provider="p", model="unpriced", budget=Budget(max_cost_usd=1.0)
        )
    )
    calls += [lambda a=a: store.append_user(a, user(f"kept {a}")) for a in good[2:]]
    with counted_commits(store) as commits:
        first, rest = one_batch(store, lambda c: insert(store, c, lead, "lead"), calls)
    assert commits[0] == 1  # one batch, committed once, refusals and all
    first.unwrap()
    with pytest.raises(AgentNotFound):
        rest[2].unwrap()
    with pytest.raises(BudgetRefused):
        rest[3].unwrap()
    for r in rest[:2] + rest[4:]:
        assert committed(store, r.unwrap().id)
    assert texts(store, lead) == ["lead"]
    assert all(texts(store, a) == [f"kept {a}"] for a in good)
    assert "doomed" not in {r.name for r in store.list_agents(include_dead=True)}


def test_a_body_that_raises_after_writing_is_undone_alone(batching: Store) -> None:
    store = batching
    a, b, c = (new(store, n) for n in "abc")

    def broken() -> None:
        with store._write() as conn:
            insert(store, conn, b, "half-done")
            raise ValueError("a bug in the middle of a write")

    first, (one, bad, two) = one_batch(
        store,
        lambda conn: insert(store, conn, a, "lead"),
        [
            lambda: store.append_user(a, user("one")),
            broken,
            lambda: store.append_user(c, user("two")),
        ],
    )
    first.unwrap()
    one.unwrap()
    two.unwrap()
    with pytest.raises(ValueError, match="a bug"):
        bad.unwrap()
    assert texts(store, a) == ["lead", "one"]
    assert texts(store, b) == []
    assert texts(store, c) == ["two"]
    store.append_user(b, user("after"))  # the writer goes on
    assert texts(store, b) == ["after"]


# ---------------------------------------------------------------- a failing commit


def test_a_failed_commit_fails_every_write_in_it(
    db_url: str, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(db_url, upgrade=False, catalog=catalog, group_commit=True)
    try:
        monkeypatch.setattr(store._group, "_max_wait", 3600.0)
        agents = [new(store, f"a{k}") for k in range(4)]
        failed = [0]

        def fault(_conn: Any) -> None:
            # the disk refuses the first COMMIT (as a full or failing one would)
            if failed[0] == 0:
                failed[0] += 1
                raise exc.OperationalError("COMMIT", None, OSError("disk I/O error"))

        event.listen(store.engine, "commit", fault)
        first, rest = one_batch(
            store,
            lambda conn: insert(store, conn, agents[0], "lead"),
            [lambda a=a: store.append_user(a, user("member")) for a in agents[1:]],
        )
        assert failed[0] == 1
        for r in [first, *rest]:
            with pytest.raises(StoreError, match="disk I/O error"):
                r.unwrap()
        assert all(texts(store, a) == [] for a in agents)  # none of them was committed
        # the connection was dropped; the next write opens another
        store.append_user(agents[0], user("after"))
        assert texts(store, agents[0]) == ["after"]
    finally:
        store.close()


def test_a_commit_sqlite_refuses_fails_every_write_in_it(
    sqlite_template: Path, tmp_path: Path, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a real refusal at COMMIT: a foreign key checked only then (SQLite's
    # deferred keys; PostgreSQL cannot defer the schema's, the fault above covers it)
    path = tmp_path / "ikigai.db"
    shutil.copyfile(sqlite_template, path)
    store = Store(f"sqlite:///{path}", upgrade=False, catalog=catalog)
    monkeypatch.setattr(store._group, "_max_wait", 3600.0)
    a, b = new(store, "a"), new(store, "b")

    def defer_and_dangle() -> None:
        with store._write() as conn:
            conn.exec_driver_sql("PRAGMA defer_foreign_keys = ON")
            insert(store, conn, GHOST, "dangling")

    first, rest = one_batch(
        store,
        lambda conn: insert(store, conn, a, "lead"),
        [lambda: store.append_user(b, user("member")), defer_and_dangle],
    )
    for r in [first, *rest]:
        with pytest.raises(StoreError, match="FOREIGN KEY"):
            r.unwrap()
    assert texts(store, a) == [] and texts(store, b) == []
    store.append_user(b, user("after"))
    assert texts(store, b) == ["after"]
    store.close()


# ---------------------------------------------------------------- turns


def test_a_write_inside_a_write_of_the_same_thread_is_refused(grouped: Store) -> None:
    store = grouped
    a = new(store, "a")
    with pytest.raises(RuntimeError, match="inside another write"), store._write() as conn:
        insert(store, conn, a, "outer")
        store.append_user(a, user("inner"))
    assert texts(store, a) == []
    store.append_user(a, user("after"))
    assert texts(store, a) == ["after"]


def test_close_commits_a_batch_left_open_for_it(db_url: str, catalog: Any) -> None:
    store = Store(db_url, upgrade=False, catalog=catalog, group_commit=True)
    a = new(store, "a")
    first, (closed,) = one_batch(store, lambda conn: insert(store, conn, a, "lead"), [store.close])
    first.unwrap()
    closed.unwrap()
    with Store(db_url, upgrade=False) as again:
        assert texts(again, a) == ["lead"]


# ---------------------------------------------------------------- kill -9


def run_and_kill(url: str, rnd: int, agents: list[str], acks: int) -> list[str]:
    """Start the writer, SIGKILL it once it acknowledged ``acks`` writes; its complete lines."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), url, str(rnd), *agents],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    watchdog = threading.Timer(WAIT * 2, proc.kill)  # a writer that hangs fails the test below
    watchdog.start()
    try:
        assert proc.stdout is not None
        lines: list[bytes] = []
        while len(lines) < acks:
            line = proc.stdout.readline()
            assert line, f"the writer stopped: {proc.stderr.read().decode()[-2000:]}"  # type: ignore[union-attr]
            lines.append(line)
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=WAIT)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    text = (b"".join(lines) + rest).decode()
    return text.splitlines()[: text.count("\n")]  # a line cut by the kill was not acknowledged


def test_sigkill_loses_and_doubles_no_acknowledged_write(store: Store, db_url: str) -> None:
    agents = [new(store, f"k{k}") for k in range(12)]
    rows: dict[int, str] = {}  # acknowledged history rows: id -> text
    queued: dict[int, str] = {}  # acknowledged prompts: id -> text
    for rnd in range(2):  # the second writer starts on what the killed one left
        for line in run_and_kill(db_url, rnd, agents, acks=300):
            tag, r, k, i, *ids = line.split()
            text = f"{r} {k} {i}"
            if tag == "S":
                rows[int(ids[0])] = text
            elif tag == "Q":
                queued[int(ids[0])] = text
            else:
                rows.update((int(n), f"{text} part {p}") for p, n in enumerate(ids))

    with Store(db_url, upgrade=False) as after:
        history = {a: after.history(a) for a in agents}
        stored = {r.id: r.content for h in history.values() for r in h}
        lost = {i: t for i, t in rows.items() if stored.get(i) != t}
        assert not lost, f"acknowledged rows lost: {lost}"
        doubled = [t for t, n in Counter(stored.values()).items() if n > 1]
        assert not doubled, f"rows written twice: {doubled}"
        prompts = {q.id: q.text for q in after.queued_prompts()}
        assert {i: t for i, t in queued.items() if prompts.get(i) != t} == {}
        assert [t for t, n in Counter(prompts.values()).items() if n > 1] == []
        # an append_many lands whole or not at all
        parts = Counter(t.rsplit(" part ", 1)[0] for t in stored.values() if " part " in t)
        assert set(parts.values()) <= {3}, parts
        # each agent's rows are in the order its thread wrote them
        for h in history.values():
            order = [tuple(int(x) for x in r.content.split()[:3]) for r in h]
            assert order == sorted(order)
        if after.dialect == "sqlite":
            with after.engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
