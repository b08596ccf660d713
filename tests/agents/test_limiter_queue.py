"""The limiter's queue: fair across trees, interactive before background,
and a waiting call told where it stands. Virtual time (autojump clock)."""

from __future__ import annotations

from functools import partial

import pytest
import trio
import trio.lowlevel

from agents.limiter import LimiterConfig, ProviderLimiter, WaitInfo
from agents.limiter._queue import FairQueue, Waiter

HOLD = 1.0


async def until(predicate) -> None:
    """Let other tasks run until ``predicate()`` holds (no virtual time passes)."""
    with trio.fail_after(1):
        while not predicate():
            await trio.lowlevel.checkpoint()


class Log:
    """Every call's tree, when it asked and when it started, in start order."""

    def __init__(self, limiter: ProviderLimiter) -> None:
        self.limiter = limiter
        self.started: list[str] = []  # tree of each start, in order
        self.waits: list[tuple[str, int, int, float]] = []  # (tree, starts asked-at, started-at, s)

    async def agent(self, tree: str, name: str, rounds: int, priority: str = "background") -> None:
        for _ in range(rounds):
            asked_at, asked_t = len(self.started), trio.current_time()
            async with self.limiter.slot(tree=tree, agent=name, priority=priority):
                self.waits.append((tree, asked_at, len(self.started), trio.current_time() - asked_t))
                self.started.append(tree)
                await trio.sleep(HOLD)


async def test_a_tree_of_two_is_not_starved_by_a_tree_of_forty(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=1))
    log = Log(limiter)
    async with trio.open_nursery() as nursery:
        # the big tree is busy first: 40 calls queued before the small tree asks
        for i in range(40):
            nursery.start_soon(log.agent, "big", f"big-{i}", 3)
        await until(lambda: limiter.queued == 39)
        for i in range(2):
            nursery.start_soon(log.agent, "small", f"small-{i}", 10)
    small = [w for w in log.waits if w[0] == "small"]
    assert len(small) == 20 and log.started.count("big") == 120
    for _, asked_at, started_at, waited in small:
        # between asking and starting, the big tree started at most one call
        # per small-tree call ahead in its own tree (at most one) plus one,
        # plus one granted at the same virtual instant the small call asked
        # but not yet logged (trio runs same-instant tasks in either order)
        big_between = log.started[asked_at:started_at].count("big")
        assert big_between <= 3
        # one in flight, one big, one small, one big: a round of the queue
        assert waited <= 4 * HOLD
    # without fairness the small tree's first call would have waited behind all 40
    assert small[0][3] <= 2 * HOLD


async def test_interactive_overtakes_forty_queued_background_calls(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=1))
    log = Log(limiter)
    infos: list[WaitInfo] = []
    async with trio.open_nursery() as nursery:
        for i in range(41):
            nursery.start_soon(log.agent, f"tree-{i % 5}", f"bg-{i}", 1)
        await until(lambda: limiter.queued == 40)
        t0 = trio.current_time()

        async def person() -> None:
            async with limiter.slot(tree="tree-0", agent="me", priority="interactive", on_wait=infos.append):
                log.started.append("me")
                assert trio.current_time() - t0 == HOLD  # only the call in flight ahead
                await trio.sleep(HOLD)

        nursery.start_soon(person)
        await until(lambda: limiter.queued == 41)
        assert limiter.snapshot()["queued"] == {"interactive": 1, "background": 40}
    assert log.started.index("me") == 1
    assert infos[0].position == 1 and infos[0].reason == "concurrency"


async def test_a_waiting_call_is_told_its_position_and_expected_wait(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=1))
    seen: dict[str, list[tuple[float, WaitInfo]]] = {"b": [], "c": [], "d": []}

    async def call(name: str) -> None:
        def note(info: WaitInfo) -> None:
            seen[name].append((trio.current_time() - t0, info))

        async with limiter.slot(tree=name, agent=name, on_wait=note if name in seen else None):
            await trio.sleep(10.0)

    t0 = trio.current_time()
    async with trio.open_nursery() as nursery:
        for name in "abcd":
            nursery.start_soon(call, name)
            await until(lambda n=name: limiter.in_flight + limiter.queued == "abcd".index(n) + 1)
    # before any call has ended a call is guessed to hold its slot 15 s; then
    # a moving average of the real holds (10 s): 14, then 13.2
    assert seen["d"] == [
        (0.0, WaitInfo(3, 45.0, "concurrency")),
        (10.0, WaitInfo(2, pytest.approx(28.0), "concurrency")),
        (20.0, WaitInfo(1, pytest.approx(13.2), "concurrency")),
    ]
    assert [i.position for _, i in seen["b"]] == [1]
    assert [i.position for _, i in seen["c"]] == [2, 1]


async def test_the_reason_and_wait_follow_rate_and_pause(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(requests_per_minute=6))
    seen: list[tuple[float, WaitInfo]] = []
    t0 = trio.current_time()
    for i in range(6):
        async with limiter.slot(tree="t", agent=i):
            pass
    async with trio.open_nursery() as nursery:

        async def call() -> None:
            note = lambda info: seen.append((trio.current_time() - t0, info))  # noqa: E731
            async with limiter.slot(tree="t", agent="late", on_wait=note):
                pass

        nursery.start_soon(call)
        await until(lambda: limiter.queued == 1)
        await trio.sleep(2.0)
        limiter.pause(30.0, "429")
    assert seen == [
        (0.0, WaitInfo(1, pytest.approx(10.0), "rate")),
        # time passing is no news; a pause is
        (2.0, WaitInfo(1, pytest.approx(30.0), "paused")),
    ]


async def test_an_observer_that_raises_fails_its_own_call_only(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=1))

    def broken(info: WaitInfo) -> None:
        raise RuntimeError("observer bug")

    async with trio.open_nursery() as nursery, limiter.slot(tree="a", agent="a"):
        with pytest.raises(RuntimeError, match="observer bug"):
            async with limiter.slot(tree="b", agent="b", on_wait=broken):
                pass
        nursery.start_soon(partial(limiter.slot(tree="c", agent="c").__aenter__))
        await until(lambda: limiter.queued == 1)
    assert limiter.in_flight == 1  # c got the slot (its task holds it, never exits)


def test_the_queue_serves_round_robin_across_trees_oldest_first():
    q = FairQueue()
    ws = {}
    for name, tree, level in [
        ("a1", "A", 1), ("a2", "A", 1), ("a3", "A", 1), ("b1", "B", 1), ("c1", "C", 1), ("b2", "B", 1), ("i1", "A", 0),
    ]:  # fmt: skip
        ws[name] = Waiter(tree, name, level, {}, None)
        q.push(ws[name])
    expected = ["i1", "a1", "b1", "c1", "a2", "b2", "a3"]
    assert [w.agent for w in q.order()] == expected
    assert q.counts() == {"interactive": 1, "background": 6}
    assert q.remove(ws["c1"]) and not q.remove(ws["c1"])
    expected.remove("c1")
    assert [w.agent for w in q.order()] == expected
    served = []
    while q:
        assert q.head() is ws[expected[len(served)]]
        served.append(q.pop().agent)
    assert served == expected and q.head() is None
