"""The provider limiter's cap, buckets (configured and learned), pause,
usage correction, snapshot and config checks, in virtual time: the autojump
clock skips every wait, so the times asserted are the limiter's own."""

from __future__ import annotations

import math
from functools import partial
from types import SimpleNamespace

import pytest
import trio
import trio.lowlevel

from agents.limiter import (
    LimiterConfig,
    Limiters,
    ProviderLimiter,
    RateFacts,
    RateWindow,
    default_max_concurrent,
    key_id,
)


def approx(x: float) -> object:
    return pytest.approx(x, abs=1e-6)


class Calls:
    """Runs calls through a limiter and records when each started, relative
    to the test's start, and how many were in flight at the peak."""

    def __init__(self, limiter: ProviderLimiter) -> None:
        self.limiter = limiter
        self.t0 = trio.current_time()
        self.starts: dict[object, float] = {}
        self.live = 0
        self.peak = 0
        self.asked = 0

    async def spawn(self, nursery: trio.Nursery, name: object, hold: float = 1.0, **kw) -> None:
        """Start a call and return once it has asked for its slot: trio runs
        new tasks in no set order, and the queue's order is what is tested."""
        asked = self.asked
        nursery.start_soon(partial(self.call, name, hold, **kw))
        while self.asked == asked:
            await trio.lowlevel.checkpoint()

    async def call(self, name: object, hold: float = 1.0, *, used: tuple[int, int] | None = None, **slot) -> None:
        slot.setdefault("tree", "t")
        slot.setdefault("agent", name)
        self.asked += 1
        async with self.limiter.slot(**slot) as s:
            self.starts[name] = trio.current_time() - self.t0
            self.live += 1
            self.peak = max(self.peak, self.live)
            # let in (counted) before its task runs: never fewer than are running
            assert self.live <= self.limiter.in_flight <= self.limiter.max_concurrent
            await trio.sleep(hold)
            if used is not None:
                s.done(*used)
            self.live -= 1


async def test_the_cap_holds_and_every_call_is_served(autojump_clock):
    limiter = ProviderLimiter("anthropic", config=LimiterConfig(max_concurrent=3))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        for i in range(10):
            await calls.spawn(nursery, i)
    assert calls.peak == 3
    assert sorted(calls.starts.values()) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]
    # oldest first within a tree
    assert [calls.starts[i] for i in range(10)] == sorted(calls.starts.values())
    assert limiter.in_flight == 0 and limiter.queued == 0


async def test_default_caps_per_provider_kind():
    assert ProviderLimiter("anthropic").max_concurrent == default_max_concurrent("anthropic") == 8
    assert ProviderLimiter("openai").max_concurrent == 16
    assert ProviderLimiter("google").max_concurrent == 4
    assert ProviderLimiter("ollama").max_concurrent == 4
    assert ProviderLimiter("something-else").max_concurrent == 8
    # and no rate limit unless configured or learned
    assert ProviderLimiter("anthropic").snapshot()["buckets"] == []


async def test_requests_per_minute_burst_then_one_every_60_over_n(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=100, requests_per_minute=6))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        for i in range(9):
            await calls.spawn(nursery, i, 0.5)
    # a burst of 6, then the 7th waits until the bucket has one request again
    assert [calls.starts[i] for i in range(9)] == [approx(t) for t in (0, 0, 0, 0, 0, 0, 10, 20, 30)]


async def test_requests_per_minute_holds_over_a_long_run(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=100, requests_per_minute=30))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        for i in range(120):
            await calls.spawn(nursery, i, 0.1)
    starts = sorted(calls.starts.values())
    # 30 at once, then one every 2 s: the 120th at (120 - 30) * 2
    assert starts[-1] == approx(180.0)
    # in any minute after the burst no more than 30 start
    for i in range(30, 120):
        window = [t for t in starts if starts[i] <= t < starts[i] + 60 - 1e-6]
        assert len(window) <= 30


async def test_input_tokens_are_reserved_and_corrected_by_the_real_usage(autojump_clock):
    def limiter() -> ProviderLimiter:
        return ProviderLimiter("p", config=LimiterConfig(input_tokens_per_minute=1000))

    # no usage reported: the estimate stands; B waits for 600 - 400 at 1000/min
    calls = Calls(limiter())
    async with trio.open_nursery() as nursery:
        await calls.spawn(nursery, "A", 1.0, input_tokens=600)
        await calls.spawn(nursery, "B", 1.0, input_tokens=600)
    assert calls.starts["B"] == approx(12.0)

    # A used only 300: B need not wait
    calls = Calls(limiter())
    async with trio.open_nursery() as nursery:
        await calls.spawn(nursery, "A", 0.0, input_tokens=600, used=(300, 0))
        await calls.spawn(nursery, "B", 1.0, input_tokens=600)
    assert calls.starts["B"] == approx(0.0)

    # A used 900, more than it said: the debt delays B to (600 - 100) / (1000/60)
    calls = Calls(limiter())
    async with trio.open_nursery() as nursery:
        await calls.spawn(nursery, "A", 0.0, input_tokens=600, used=(900, 0))
        await calls.spawn(nursery, "B", 1.0, input_tokens=600)
    assert calls.starts["B"] == approx(30.0)


async def test_output_cap_is_reserved_until_the_call_ends(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(output_tokens_per_minute=600))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        # A reserves 400 and writes 50 in 1 s: then 200 + 10 + 350 are there for B
        await calls.spawn(nursery, "A", 1.0, max_output_tokens=400, used=(10, 50))
        await calls.spawn(nursery, "B", 1.0, max_output_tokens=400)
    assert calls.starts["B"] == approx(1.0)
    level = limiter.snapshot()["buckets"][0]["level"]
    # B took 400 of the 560, refilled 10 in its second, and ended with no
    # usage known: its output reservation came back whole
    assert level == approx(560 - 400 + 10 + 400)


async def test_a_call_bigger_than_the_bucket_waits_for_it_full_not_forever(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(input_tokens_per_minute=1000))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        await calls.spawn(nursery, "small", 0.0, input_tokens=500)
        await calls.spawn(nursery, "huge", 0.0, input_tokens=5000)
        await calls.spawn(nursery, "next", 0.0, input_tokens=100)
    assert calls.starts["huge"] == approx(30.0)  # the bucket full again
    # the huge one's debt (-4000) is paid before the next: 4100 at 1000/min
    assert calls.starts["next"] == approx(30.0 + 246.0)


async def test_learned_limits_slow_calls_before_the_wall(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=100))
    limiter.learn(RateFacts(requests=RateWindow(limit=10, remaining=2, reset_after=48)))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        for i in range(4):
            await calls.spawn(nursery, i, 0.1)
    assert [calls.starts[i] for i in range(4)] == [approx(t) for t in (0, 0, 6, 12)]


async def test_learned_from_a_flat_struct_and_input_tokens(autojump_clock):
    limiter = ProviderLimiter("p")
    # the provider side's struct may be flat: requests_limit, input_tokens_remaining...
    limiter.learn(
        SimpleNamespace(
            input_tokens_limit=6000, input_tokens_remaining=1000, input_tokens_reset_after=50.0, retry_after=None
        )
    )
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        await calls.spawn(nursery, "A", 0.0, input_tokens=3000)
    # 2000 short at 6000/min
    assert calls.starts["A"] == approx(20.0)


async def test_a_daily_quota_refills_at_its_own_pace(autojump_clock):
    limiter = ProviderLimiter("p")
    # 100 a day, none left, full again in 10 hours: one per 360 s
    limiter.learn(RateFacts(requests=RateWindow(limit=100, remaining=0, reset_after=36000)))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        await calls.spawn(nursery, "A", 0.0)
    assert calls.starts["A"] == approx(360.0)


@pytest.mark.parametrize(
    "window",
    [
        RateWindow(limit=math.nan, remaining=1),
        RateWindow(limit=-5, remaining=0),
        RateWindow(limit=0, remaining=0),
        RateWindow(limit=True, remaining=0),  # type: ignore[arg-type]
        RateWindow(limit="10", remaining=0),  # type: ignore[arg-type]
        RateWindow(limit=math.inf, remaining=0),
    ],
)
async def test_hostile_facts_teach_nothing(window, autojump_clock):
    limiter = ProviderLimiter("p")
    limiter.learn(RateFacts(requests=window, retry_after=-3))
    limiter.learn(RateFacts(retry_after=math.nan))
    snap = limiter.snapshot()
    assert snap["buckets"] == [] and snap["paused_for_s"] == 0


class Wall:
    """A provider with a real limit of its own (a token bucket of
    ``per_minute`` requests): answers 429 past it, and sends its limit and
    what remains with every answer, as Anthropic's headers do."""

    def __init__(self, per_minute: int) -> None:
        self.limit = per_minute
        self.level = float(per_minute)
        self.stamp = trio.current_time()
        self.rejected = 0

    def request(self) -> RateFacts:
        now = trio.current_time()
        self.level = min(self.limit, self.level + (now - self.stamp) * self.limit / 60)
        self.stamp = now
        if self.level < 1 - 1e-9:
            self.rejected += 1
            wait = (1 - self.level) * 60 / self.limit
            return RateFacts(retry_after=wait)
        self.level -= 1
        reset = (self.limit - self.level) * 60 / self.limit
        return RateFacts(requests=RateWindow(self.limit, math.floor(self.level), reset))


async def run_against_the_wall(learn: bool) -> tuple[int, float]:
    wall = Wall(per_minute=10)
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=8))
    t0 = trio.current_time()

    async def agent(i: int) -> None:
        while True:
            async with limiter.slot(tree=i % 3, agent=i) as slot:
                facts = wall.request()  # the request reaches the provider at its start
                await trio.sleep(2.0)  # the answer streams
                if learn:
                    slot.learn(facts)
                if facts.retry_after is None:
                    return
                limiter.pause(facts.retry_after, "429")

    async with trio.open_nursery() as nursery:
        for i in range(30):
            nursery.start_soon(agent, i)
    return wall.rejected, trio.current_time() - t0


async def test_learning_from_each_response_keeps_a_fan_out_off_the_wall(autojump_clock):
    rejected, took = await run_against_the_wall(learn=True)
    # 8 go blind at once (fits in 10), then the limiter knows: no 429 at all
    assert rejected == 0
    # and no slower than the wall allows: 10 at once, then 20 more at 6 s each
    assert took <= 1.3 * (20 * 6 + 2)
    # the same fan-out without learning runs into the wall
    rejected, _ = await run_against_the_wall(learn=False)
    assert rejected > 0


async def test_a_pause_holds_everyone_until_its_end(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=10))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        await calls.spawn(nursery, "first", 5.0)
        await trio.sleep(1.0)
        limiter.pause(30.0, "429")
        assert limiter.snapshot()["pause_reason"] == "429"
        for i in range(5):
            await calls.spawn(nursery, i, 1.0)
        await trio.sleep(10.0)
        # a longer pause wins; a shorter one changes nothing
        limiter.pause(40.0, "529 overloaded")
        limiter.pause(1.0, "later 429")
    assert calls.starts["first"] == 0
    assert [calls.starts[i] for i in range(5)] == [approx(51.0)] * 5
    assert limiter.snapshot()["paused_for_s"] == 0
    assert limiter.snapshot()["pause_reason"] is None


async def test_a_retry_after_in_the_facts_pauses_the_key(autojump_clock):
    limiter = ProviderLimiter("p")
    limiter.learn(RateFacts(retry_after=12.5))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        await calls.spawn(nursery, "A", 0.0)
    assert calls.starts["A"] == approx(12.5)


async def test_snapshot_contents(autojump_clock):
    limiter = ProviderLimiter(
        "anthropic", "k123", LimiterConfig(max_concurrent=2, requests_per_minute=60)
    )
    limiter.learn(RateFacts(input_tokens=RateWindow(limit=30000, remaining=20000, reset_after=20)))
    release = trio.Event()

    async def hold(name: str, priority: str) -> None:
        async with limiter.slot(tree=name, agent=name, priority=priority):
            await release.wait()

    async with trio.open_nursery() as nursery:
        for name, priority in [("a", "interactive"), ("b", "background"), ("c", "background"), ("d", "interactive")]:
            asked = limiter.in_flight + limiter.queued
            nursery.start_soon(hold, name, priority)
            while limiter.in_flight + limiter.queued == asked:
                await trio.lowlevel.checkpoint()
        limiter.pause(5.0, "429")
        snap = limiter.snapshot()
        release.set()
    assert snap["provider"] == "anthropic" and snap["key"] == "k123"
    assert snap["in_flight"] == 2 and snap["max_concurrent"] == 2
    assert snap["queued"] == {"interactive": 1, "background": 1}
    assert snap["paused_for_s"] == approx(5.0) and snap["pause_reason"] == "429"
    assert snap["buckets"] == [
        {"kind": "requests", "source": "configured", "level": approx(58), "capacity": 60, "per_minute": approx(60)},
        {"kind": "input_tokens", "source": "learned", "level": approx(20000), "capacity": 30000, "per_minute": approx(30000)},
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_concurrent", 0),
        ("max_concurrent", -1),
        ("max_concurrent", 2.5),
        ("requests_per_minute", 0),
        ("input_tokens_per_minute", -10),
        ("output_tokens_per_minute", math.inf),
        ("requests_per_minute", "60"),
        ("max_concurrent", True),
    ],
)
def test_a_bad_limit_is_refused_naming_its_field(field, value):
    with pytest.raises(ValueError, match=field):
        LimiterConfig(**{field: value})


async def test_a_bad_slot_request_is_refused_naming_its_field():
    limiter = ProviderLimiter("p")
    with pytest.raises(ValueError, match="priority"):
        limiter.slot(tree="t", agent="a", priority="urgent")
    with pytest.raises(ValueError, match="input_tokens"):
        limiter.slot(tree="t", agent="a", input_tokens=-1)
    with pytest.raises(ValueError, match="max_output_tokens"):
        limiter.slot(tree="t", agent="a", max_output_tokens=1.5)  # type: ignore[arg-type]


async def test_registry_is_keyed_by_provider_and_key_id_never_the_secret(autojump_clock):
    secret = "sk-ant-api03-very-secret"
    kid = key_id(secret)
    assert len(kid) == 12 and secret not in kid and kid == key_id(secret) != key_id(secret + "x")
    assert key_id(None) == key_id("") == ""
    limiters = Limiters({"anthropic": LimiterConfig(max_concurrent=3)})
    a = limiters.get("anthropic", kid)
    assert limiters.get("anthropic", kid) is a
    assert limiters.get("anthropic", key_id("other")) is not a
    assert a.max_concurrent == 3 and limiters.get("openai", "OPENAI_API_KEY").max_concurrent == 16
    snaps = limiters.snapshot()
    assert [(s["provider"], s["key"]) for s in snaps] == sorted(
        [("anthropic", kid), ("anthropic", key_id("other")), ("openai", "OPENAI_API_KEY")]
    )
    assert secret not in repr(snaps)
    # a reload reaches the live limiters; None goes back to the default
    limiters.configure("anthropic", LimiterConfig(max_concurrent=5, requests_per_minute=10))
    assert a.max_concurrent == 5 and a.snapshot()["buckets"][0]["capacity"] == 10
    limiters.configure("anthropic", None)
    assert a.max_concurrent == 8 and a.snapshot()["buckets"] == []


async def test_a_raised_cap_lets_waiting_calls_go_at_once(autojump_clock):
    limiter = ProviderLimiter("p", config=LimiterConfig(max_concurrent=1))
    calls = Calls(limiter)
    async with trio.open_nursery() as nursery:
        for i in range(3):
            await calls.spawn(nursery, i, 10.0)
        await trio.sleep(1.0)
        limiter.configure(LimiterConfig(max_concurrent=3))
    assert [calls.starts[i] for i in range(3)] == [0, 1, 1]
