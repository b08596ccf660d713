"""A call cancelled while it waits, or just as it is let in, leaves the
limiter as if it had never asked: no slot, no tokens, no stuck timer."""

from __future__ import annotations

import trio
import trio.lowlevel
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.limiter import LimiterConfig, ProviderLimiter


async def until(predicate) -> None:
    with trio.fail_after(1):
        while not predicate():
            await trio.lowlevel.checkpoint()


def requests_level(limiter: ProviderLimiter) -> float:
    return next(b["level"] for b in limiter.snapshot()["buckets"] if b["kind"] == "requests")


async def test_a_call_cancelled_in_the_queue_leaves_it(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=1))
    order = []

    async def call(name: str, scope_box: dict | None = None) -> None:
        with trio.CancelScope() as scope:
            if scope_box is not None:
                scope_box["scope"] = scope
            async with limiter.slot(tree=name, agent=name):
                order.append(name)
                await trio.sleep(1)

    box: dict = {}
    async with trio.open_nursery() as nursery:
        for name in "abcd":
            nursery.start_soon(call, name, box if name == "b" else None)
            await until(lambda n=name: limiter.in_flight + limiter.queued == "abcd".index(n) + 1)
        box["scope"].cancel()
        await until(lambda: limiter.queued == 2)
    assert order == ["a", "c", "d"]
    assert limiter.in_flight == 0 and limiter.queued == 0


async def test_cancelling_the_head_that_waits_for_time_hands_the_timer_on(autojump_clock):
    # the head waits for a full bucket (its own timer); the next, small one must
    # not then wait forever once the head is gone
    limiter = ProviderLimiter("p", config=LimiterConfig(input_tokens_per_minute=600))
    started = {}
    t0 = trio.current_time()

    async def call(name: str, tokens: int, scope: trio.CancelScope | None = None) -> None:
        with scope or trio.CancelScope():
            async with limiter.slot(tree=name, agent=name, input_tokens=tokens):
                started[name] = trio.current_time() - t0

    await call("first", 600)  # empties the bucket
    big_scope = trio.CancelScope()
    with trio.fail_after(1000):  # virtual time: a waiter left without a timer fails here
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "big", 600, big_scope)
            await until(lambda: limiter.queued == 1)
            nursery.start_soon(call, "small", 60)
            await until(lambda: limiter.queued == 2)
            await trio.sleep(1.0)
            big_scope.cancel()
    # 60 tokens at 600/min: 6 s after the bucket was emptied
    assert started == {"first": 0.0, "small": 6.0}
    assert limiter.queued == 0 and limiter.in_flight == 0


async def test_a_call_cancelled_as_it_is_let_in_gives_everything_back(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=1, requests_per_minute=60))
    scope = trio.CancelScope()
    entered = []

    async def late() -> None:
        with scope:
            async with limiter.slot(tree="b", agent="b"):
                entered.append("b")

    async with trio.open_nursery() as nursery, limiter.slot(tree="a", agent="a"):
        nursery.start_soon(late)
        await until(lambda: limiter.queued == 1)
        level = requests_level(limiter)
        # in one tick: b is cancelled, then a's end lets b in before b runs
        scope.cancel()
    assert entered == []
    assert limiter.in_flight == 0 and limiter.queued == 0
    # b's request came back: only a's is spent (and no time passed)
    assert requests_level(limiter) == level


calls = st.lists(
    st.fixed_dictionaries(
        {
            "tree": st.integers(0, 3),
            "priority": st.sampled_from(["interactive", "background"]),
            "arrive": st.integers(0, 20),
            "hold": st.integers(0, 10),
            "cancel_at": st.none() | st.integers(0, 40),
            "tokens": st.integers(0, 3000),
            "out": st.integers(0, 1000),
            "used": st.none() | st.tuples(st.integers(0, 4000), st.integers(0, 2000)),
        }
    ),
    min_size=1,
    max_size=25,
)
configs = st.builds(
    LimiterConfig,
    max_concurrent=st.integers(1, 4),
    requests_per_minute=st.none() | st.integers(1, 30),
    input_tokens_per_minute=st.none() | st.integers(2000, 20000),
    output_tokens_per_minute=st.none() | st.integers(1000, 5000),
)
events = st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["pause", "learn"])), max_size=3)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, plan=calls, events=events)
def test_any_interleaving_keeps_the_cap_and_serves_every_call(config, plan, events):
    outcome: dict = {"served": set(), "cancelled": set(), "peak": 0}

    async def main() -> None:
        limiter = ProviderLimiter("p", config=config)
        live = 0

        async def call(i: int, c: dict) -> None:
            nonlocal live
            await trio.sleep(c["arrive"])
            deadline = float("inf") if c["cancel_at"] is None else t0 + c["cancel_at"]
            with trio.move_on_at(deadline):
                async with limiter.slot(
                    tree=c["tree"], agent=i, priority=c["priority"], input_tokens=c["tokens"], max_output_tokens=c["out"]
                ) as slot:
                    live += 1
                    outcome["peak"] = max(outcome["peak"], live)
                    assert limiter.in_flight <= config.max_concurrent
                    try:
                        await trio.sleep(c["hold"])
                        if c["used"] is not None:
                            slot.done(*c["used"])
                        outcome["served"].add(i)
                    finally:
                        live -= 1
                return
            outcome["cancelled"].add(i)

        async def event(at: int, what: str) -> None:
            await trio.sleep(at)
            if what == "pause":
                limiter.pause(7.0, "429")
            else:
                limiter.learn(type("F", (), {"requests_limit": 5, "requests_remaining": 0, "retry_after": None})())

        t0 = trio.current_time()
        # virtual time: a stuck waiter shows as this deadline, not as a hang
        with trio.fail_after(10**6):
            async with trio.open_nursery() as nursery:
                for i, c in enumerate(plan):
                    nursery.start_soon(call, i, c)
                for at, what in events:
                    nursery.start_soon(event, at, what)
        assert limiter.in_flight == 0 and limiter.queued == 0
        assert limiter._timekeeper is None and limiter._observers == 0

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert outcome["peak"] <= config.max_concurrent
    never_cancelled = {i for i, c in enumerate(plan) if c["cancel_at"] is None}
    assert never_cancelled <= outcome["served"]
    assert outcome["served"] | outcome["cancelled"] == set(range(len(plan)))
