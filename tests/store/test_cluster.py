"""Several daemons on one database, at the store: membership, the fence,
marking a lost daemon and claiming its agents (store/_cluster.py). Real
PostgreSQL; SQLite is one daemon per file and is not fenced."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from store import Fenced, Joining, Store

# PostgreSQL only: the parameter replaces the fixture's sqlite/postgres pair
pytestmark = [pytest.mark.postgres, pytest.mark.parametrize("engine_kind", ["postgres"])]


def _me(name: str, lease: float = 10.0) -> Joining:
    return Joining(
        id=name,
        host="h",
        pid=1,
        home=f"/home/{name}",
        socket=f"/run/{name}.sock",
        version="0",
        schema="0011",
        lease=lease,
    )


def _age(store: Store, daemon: str, seconds: float) -> None:
    """Backdate a daemon's heartbeat: as if it had been silent that long."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE daemons SET heartbeat_at = now() - make_interval(secs => %(s)s) WHERE id = %(d)s",
            {"s": seconds, "d": daemon},
        )


@pytest.fixture
def pg(open_store: Callable[[], Store]) -> Callable[[], Store]:
    return open_store


def test_join_bumps_generation_and_lists(pg: Callable[[], Store]) -> None:
    a = pg()
    assert a.join(_me("a")) == 1
    assert a.join(_me("a")) == 2
    b = pg()
    b.join(_me("b"))
    listed = {d.id: d for d in a.daemons()}
    assert set(listed) == {"a", "b"}
    assert listed["a"].generation == 2 and listed["a"].state == "up"
    assert not listed["a"].expired and listed["a"].heartbeat_age < 5
    made = a.create_agent("x", provider="anthropic", model="m")
    assert made.daemon == "a" and a.get_agent(made.uuid).daemon == "a"
    assert a.owned() == {made.uuid} and b.owned() == set()


def test_a_lost_daemon_writes_nothing_more(pg: Callable[[], Store]) -> None:
    a, b = pg(), pg()
    a.join(_me("a"))
    b.join(_me("b"))
    x = a.create_agent("x", provider="anthropic", model="m")
    assert b.mark_lost() == []  # a's lease has not run out
    _age(b, "a", 11)
    assert b.mark_lost() == ["a"]
    with pytest.raises(Fenced, match="lost its lease"):
        a.create_agent("y", provider="anthropic", model="m")
    assert a.heartbeat(1) is False  # it learns it was lost
    assert b.orphans() == 1
    assert b.claim_orphans(10) == [x.uuid]
    assert b.owner_of(x.uuid) == "b" and b.orphans() == 0
    # it may rejoin, with a new generation, and then writes again
    a.join(_me("a"))
    assert a.owned() == set()
    a.create_agent("y", provider="anthropic", model="m")


def test_marking_lost_waits_for_the_write_in_flight(pg: Callable[[], Store]) -> None:
    """A write of the lost daemon that holds its lease commits before the
    daemon is marked lost, never after."""
    a, b = pg(), pg()
    a.join(_me("a"))
    b.join(_me("b"))
    _age(b, "a", 11)
    inside, release = threading.Event(), threading.Event()
    order: list[str] = []

    def write() -> None:
        with a._write() as conn:  # holds a's row FOR SHARE until it commits
            inside.set()
            release.wait(10)
            conn.exec_driver_sql("SELECT 1")
            order.append("a committed")

    def mark() -> None:
        inside.wait(10)
        lost = b.mark_lost()
        order.append(f"b marked {lost}")

    t1, t2 = threading.Thread(target=write), threading.Thread(target=mark)
    t1.start()
    t2.start()
    inside.wait(10)
    t2.join(0.5)
    assert t2.is_alive(), "marking lost did not wait for the fenced write"
    release.set()
    t1.join(10)
    t2.join(10)
    assert order == ["a committed", "b marked ['a']"]


def test_orphans_are_claimed_in_shares_without_waiting(pg: Callable[[], Store]) -> None:
    a, b, c = pg(), pg(), pg()
    for s, name in ((a, "a"), (b, "b"), (c, "c")):
        s.join(_me(name))
    made = {a.create_agent(f"x{i}", provider="anthropic", model="m").uuid for i in range(6)}
    _age(b, "a", 11)
    assert b.mark_lost() == ["a"]
    got_b = b.claim_orphans(3)
    got_c = c.claim_orphans(3)
    assert len(got_b) == 3 and len(got_c) == 3
    assert set(got_b) | set(got_c) == made and not set(got_b) & set(got_c)
    assert b.claim_orphans(3) == []


def test_leave_keeps_agents_for_the_daemon(pg: Callable[[], Store]) -> None:
    a, b = pg(), pg()
    a.join(_me("a"))
    b.join(_me("b"))
    a.create_agent("x", provider="anthropic", model="m")
    a.leave()
    assert b.orphans() == 0  # a stopped daemon's agents wait for it
    assert [d.id for d in b.daemons()] == ["b"]
    assert {d.id: d.state for d in b.daemons(include_gone=True)} == {"a": "stopped", "b": "up"}
