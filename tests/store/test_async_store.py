"""The trio shell of the store: each call runs in a worker thread, at most
``threads`` at once, returns once committed, raises the store's own errors,
and is never abandoned by a cancelled caller."""

from __future__ import annotations

import contextvars
import threading
import time

import pytest
import trio

from agents.store import AsyncStore, Workers
from providers.types import Message, TextBlock
from store import AgentNotFound, InvalidEntry, Store

from .helpers import assistant, user

GHOST = "01900000-0000-7000-8000-00000000beef"


async def test_no_more_than_the_limit_run_at_once() -> None:
    workers = Workers(3)
    lock = threading.Lock()
    running = peak = 0

    def slow(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return i * i

    results: dict[int, int] = {}

    async def one(i: int) -> None:
        results[i] = await workers.run(lambda: slow(i))

    async with trio.open_nursery() as nursery:
        for i in range(20):
            nursery.start_soon(one, i)
    assert results == {i: i * i for i in range(20)}
    assert peak == 3
    assert workers.threads == 3


async def test_calls_that_finish_together_wake_the_loop_once() -> None:
    # what a group commit does: eight callers answered while the loop is busy
    workers = Workers(8)
    gate = threading.Barrier(8)
    answered = 0
    answer = workers._answer

    def counted() -> None:
        nonlocal answered
        answered += 1
        answer()

    workers._answer = counted  # type: ignore[method-assign]

    def together(i: int) -> int:
        gate.wait(timeout=30)  # all eight running at once
        return i

    results: dict[int, int] = {}

    async def one(i: int) -> None:
        results[i] = await workers.run(lambda: together(i))

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for i in range(8):
                nursery.start_soon(one, i)
            await trio.testing.wait_all_tasks_blocked()
            # the loop held (a blocking wait in its own thread) until all eight
            # have finished, as when it is busy while a group commit answers
            deadline = time.monotonic() + 30
            while len(workers._done) < 8 and time.monotonic() < deadline:
                time.sleep(0.001)  # noqa: ASYNC251 - holding the loop is the point
    assert results == {i: i for i in range(8)}
    assert answered == 1


async def test_an_error_in_the_call_is_raised_in_the_caller() -> None:
    workers = Workers(2)

    def fails() -> None:
        raise KeyError("the key")

    with pytest.raises(KeyError, match="the key"):
        await workers.run(fails)
    assert await workers.run(lambda: "still working") == "still working"


async def test_a_cancelled_caller_waits_for_its_call_to_finish() -> None:
    workers = Workers(1)
    started, release = threading.Event(), threading.Event()
    done: list[str] = []
    got: list[str] = []
    scope = trio.CancelScope()

    def call() -> str:
        started.set()
        release.wait(5)
        done.append("committed")
        return "result"

    async def caller() -> None:
        with scope:
            got.append(await workers.run(call))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(caller)
        await trio.to_thread.run_sync(started.wait)
        scope.cancel()
        await trio.sleep(0.05)
        assert (done, got) == ([], [])  # cancelled, and still waiting on its call
        release.set()
    assert (done, got) == (["committed"], ["result"])


async def test_a_call_sees_the_callers_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("the caller's")
    assert await Workers(1).run(var.get) == "the caller's"


async def test_idle_workers_exit_and_come_back() -> None:
    workers = Workers(2, idle=0.05)
    assert await workers.run(lambda: 1) == 1
    assert workers.threads >= 1

    def exited() -> bool:
        deadline = time.monotonic() + 5
        while workers.threads and time.monotonic() < deadline:
            time.sleep(0.02)
        return workers.threads == 0

    assert await trio.to_thread.run_sync(exited)
    assert workers.threads == 0
    assert await workers.run(lambda: 2) == 2


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1, not 0"):
        Workers(0)


async def test_many_agents_turns_at_once_are_all_committed(store: Store) -> None:
    db = AsyncStore(store, threads=4)
    uuids = [
        (
            await db.create_agent(
                name=f"a{i}", provider="anthropic", model="m", thinking_level="low"
            )
        ).uuid
        for i in range(20)
    ]

    async def turns(uuid: str) -> None:
        for t in range(3):
            q = await db.enqueue_prompt(uuid, f"t{t}", f"prompt {t}")
            await db.start_turn(uuid, user(f"prompt {t}"), queue_id=q.id, turn=f"t{t}")
            msg = assistant(f"answer {t}")
            rows = await db.call(store.append_assistant, uuid, msg, end_turn=True)
            assert rows[0].kind == "assistant"

    async with trio.open_nursery() as nursery:
        for uuid in uuids:
            nursery.start_soon(turns, uuid)
    assert store.open_turns() == []
    assert store.queued_prompts() == []
    for uuid in uuids:
        assert [m.text for m in store.replay(uuid)] == [
            x for t in range(3) for x in (f"prompt {t}", f"answer {t}")
        ]


async def test_the_stores_refusals_reach_the_caller(store: Store) -> None:
    db = AsyncStore(store)
    with pytest.raises(AgentNotFound, match=f"no agent has the id '{GHOST}'"):
        await db.enqueue_prompt(GHOST, "t1", "hello")
    agent = await db.create_agent(name="gone", provider="p", model="m", thinking_level="low")
    await db.kill([agent.uuid], reason="test")
    with pytest.raises(InvalidEntry, match="is dead: it takes no prompts"):
        await db.enqueue_prompt(agent.uuid, "t1", "hello")
    with pytest.raises(AgentNotFound):
        await db.start_turn(
            GHOST, Message(role="user", content=[TextBlock(text="x")]), queue_id=None, turn="t"
        )
