"""The provider limiter in front of every model call of real agents: a
supervisor on a real SQLite file, talking over loopback to the fake provider,
which enforces a real per-key limit and sends the real rate-limit headers
(tests/fakes/ratelimit.py).

The fleet test runs on trio's mock clock, so a limit of a minute's tokens
takes no minute: it jumps only when every task has been idle for a few real
milliseconds (SQLite runs in threads, replies cross a socket: a jump at the
first idle instant would fire timeouts no real run meets).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agents import AgentConfig, RetryPolicy
from agents.events import ProviderWait, StateChanged
from agents.limiter import LimiterConfig
from tests.agents.conftest import Harness
from tests.fakes.ratelimit import KeyLimit
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider

MODEL = "claude-sonnet-4-5/none"
FLEET = 50
TOKENS_PER_MINUTE = 60_000


@pytest.fixture
def idle_jump_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0.05)


async def _harness(nursery: trio.Nursery, tmp_path, fake: FakeProvider) -> Harness:
    await nursery.start(fake.serve)
    return Harness(nursery, fake, tmp_path / "ikigai.db")


def _entries(sup, uuid: str) -> list:
    return [e.event for e in sup.actors[uuid].log.backlog(1)]


async def _fleet(nursery, tmp_path, *, limit: bool) -> tuple[float, float, KeyLimit, int, int]:
    """FLEET agents prompt at once against a key of TOKENS_PER_MINUTE input
    tokens: (seconds taken, the fewest seconds the limit allows, the key,
    retries, turns completed)."""
    key = KeyLimit(requests_per_minute=10_000, input_tokens_per_minute=TOKENS_PER_MINUTE)
    fake = FakeProvider(default=Reply(text="ok"), limit=key)
    h = await _harness(nursery, tmp_path, fake)
    # the retry policy of the daemon (with its jitter), patient enough for a minute's wall
    sup = await h.start(
        config=AgentConfig(retry=RetryPolicy(max_attempts_patient=10)), read_timeout=60.0
    )
    sup.pool.limit = limit
    prompt = "x" * 6000  # ~2,000 of the fake's tokens a request: 30 fill the minute
    actors = []
    for i in range(FLEET):
        record, _, _ = await sup.create(model=MODEL, name=f"a{i}")
        actors.append(sup.actors[record.uuid])
    start = trio.current_time()
    turns = [await a.submit(prompt) for a in actors]
    async with trio.open_nursery() as waits:
        for actor, (turn, _) in zip(actors, turns, strict=True):
            waits.start_soon(actor.wait_turn, turn)
    took = trio.current_time() - start
    completed = sum(a.last_result is not None and a.last_result.status == "completed" for a in actors)
    demand = sum(r.tokens or 0 for r in fake.requests if r.tokens) / len(fake.requests) * FLEET
    fewest = max(0.0, demand - TOKENS_PER_MINUTE) / (TOKENS_PER_MINUTE / 60.0)
    retries = sum(
        1 for a in actors for e in _entries(sup, a.uuid) if type(e).__name__ == "RetryScheduled"
    )
    await h.stop()
    return took, fewest, key, retries, completed


async def test_fifty_agents_on_one_key_meet_few_429s_at_the_pace_the_key_allows(
    nursery, tmp_path, idle_jump_clock
):
    took, fewest, key, retries, completed = await _fleet(nursery, tmp_path, limit=True)
    assert completed == FLEET
    assert fewest > 30  # the limit binds: 50 requests of ~2,000 tokens, a minute holds 30
    # at most a handful of 429s: learned from the headers, the pace is set before the wall
    assert key.refused <= 5, (key.refused, retries)
    assert retries == key.refused
    assert took <= 1.3 * fewest, (took, fewest)


async def test_without_the_limiter_the_same_fleet_walks_into_the_wall(
    nursery, tmp_path, idle_jump_clock
):
    # what the test above would see without the limiter: the test can fail
    _, _, key, retries, completed = await _fleet(nursery, tmp_path, limit=False)
    assert key.refused >= FLEET - 30 > 5
    # each agent retried on its own schedule: the retries came in waves into the wall
    assert retries >= key.refused - (FLEET - completed) * 10


async def test_an_interactive_prompt_overtakes_queued_background_calls(nursery, tmp_path):
    fake = FakeProvider(default=Reply(text="ok", delay=0.05))
    h = await _harness(nursery, tmp_path, fake)
    sup = await h.start()
    sup.pool.limiters.configure("anthropic", LimiterConfig(max_concurrent=1))
    background = []
    for i in range(8):
        record, _, _ = await sup.create(model=MODEL, name=f"bg{i}")
        background.append(sup.actors[record.uuid])
    person, _, _ = await sup.create(model=MODEL, name="person")
    limiter = sup.pool.limiter("anthropic")
    assert limiter is not None
    turns = [await a.submit(f"background {i}", priority="background") for i, a in enumerate(background)]
    with trio.fail_after(10):
        while limiter.queued < len(background) - 1:  # every task idle: look again
            await trio.testing.wait_all_tasks_blocked(0.01)
        # a person prompts now: it goes before every background call still waiting
        turn, _ = await sup.prompt(sup.actors[person.uuid], "a person asks")
        await sup.actors[person.uuid].wait_turn(turn)
        for a, (t, _) in zip(background, turns, strict=True):
            await a.wait_turn(t)
    order = [r.json["messages"][-1]["content"][0]["text"] for r in fake.requests]
    assert order.index("a person asks") == 1, order  # only the call already in flight before it
    # the waiting was visible: the state and the events
    waited = background[-1]
    events = _entries(sup, waited.uuid)
    assert StateChanged(state="waiting_for_provider") in events
    waits = [e for e in events if isinstance(e, ProviderWait)]
    assert waits and waits[0].provider == "anthropic" and waits[0].reason == "concurrency"
    assert waits[0].position >= 1
    await h.stop()


async def test_a_forks_priority_is_its_parents_and_survives_a_restart(nursery, tmp_path):
    fake = FakeProvider(default=Reply(text="ok"))
    h = await _harness(nursery, tmp_path, fake)
    sup = await h.start()
    parent, _, _ = await sup.create(model=MODEL, name="p", priority="background")
    assert sup.actors[parent.uuid].priority == "background"
    child, _, _ = await sup.fork("p", name="c")
    other, _, _ = await sup.create(model=MODEL, name="o")
    assert sup.actors[child.uuid].priority == "background"
    assert sup.actors[child.uuid].tree == parent.uuid  # one tree: the root's
    assert sup.actors[other.uuid].priority is None
    await sup.set_priority("o", "interactive")
    with pytest.raises(Exception, match="priority must be one of interactive, background"):
        await sup.set_priority("o", "urgent")
    await h.stop()
    sup = await h.start()
    assert sup.actors[child.uuid].priority == "background"
    assert sup.actors[child.uuid].tree == parent.uuid
    assert sup.actors[other.uuid].priority == "interactive"
    await sup.set_priority("o", None)
    assert h.store.get_agent(other.uuid).priority is None
    await h.stop()


async def test_new_limits_reach_a_live_limiter_and_its_waiters_keep_their_place(
    nursery, tmp_path
):
    from daemon.config import limiter_configs, parse_config

    fake = FakeProvider(default=Reply(text="ok", delay=0.3))
    h = await _harness(nursery, tmp_path, fake)
    sup = await h.start()
    sup.pool.reset(limits={"anthropic": LimiterConfig(max_concurrent=1)})
    actors = []
    for i in range(3):
        record, _, _ = await sup.create(model=MODEL, name=f"r{i}")
        actors.append(sup.actors[record.uuid])
    limiter = sup.pool.limiter("anthropic")
    assert limiter is not None and limiter.max_concurrent == 1
    turns = [await a.submit("hi") for a in actors]
    with trio.fail_after(10):
        while limiter.queued < 2:  # every task idle: look again
            await trio.testing.wait_all_tasks_blocked(0.01)
        # a reload with a wider cap: the two waiting start at once, none is lost
        config = parse_config(b'{"providers": {"anthropic": {"max_concurrent": 3}}}', tmp_path / "c.json")
        sup.pool.reset(limits=limiter_configs(config))
        assert sup.pool.limiter("anthropic") is limiter and limiter.max_concurrent == 3
        assert limiter.queued == 0 and limiter.in_flight == 3
        for a, (t, _) in zip(actors, turns, strict=True):
            await a.wait_turn(t)
    assert all(a.last_result.status == "completed" for a in actors)
    # a provider config no longer names goes back to its default cap
    sup.pool.reset(limits={})
    assert limiter.max_concurrent == 8
    await h.stop()
