"""Failover with fencing: a daemon killed -9 mid-turn, and a daemon cut off
from the database, lose no acknowledged prompt or mail, and no agent ever
runs in two daemons at once (docs/cluster.md)."""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
import trio

from tests.cluster.conftest import HEARTBEAT, LEASE, Cluster, Member, pg_socket, until
from tests.daemon.rpc import RpcFailure
from tests.fakes.partition import partition_to
from tests.fakes.script import Reply, Stall

pytestmark = pytest.mark.postgres

# what a loaded CI machine may add to the bound (a process start, a slow thread)
SLACK = 10.0


def _no_overlap(requests: list) -> None:
    """Never two model calls for the agent at once (this test's only agent)."""
    spans = sorted((r.arrived, r.finished) for r in requests)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end is not None and end <= start, f"two calls at once: {spans}"


async def _owner_becomes(cluster: Cluster, name: str, not_: str, limit: float) -> str:
    with trio.fail_after(limit):
        while True:
            owner = (await trio.to_thread.run_sync(cluster.owners)).get(name)
            if owner not in (None, not_):
                return owner
            await trio.sleep(0.05)


async def _answers(m: Member, name: str, limit: float) -> dict:
    """agent.show through ``m`` once the agent answers again."""
    with trio.fail_after(limit):
        while True:
            try:
                return await m.call("agent.show", agent=name)  # type: ignore[return-value]
            except RpcFailure as e:
                assert e.code == -32009, e.error  # unavailable meanwhile, nothing else
            await trio.sleep(0.05)


async def _history(m: Member, name: str) -> list[tuple[str, str]]:
    rows = (await m.call("agent.history", agent=name))["messages"]  # type: ignore[index]
    return [(r["kind"], r["content"]) for r in rows]


async def test_kill_9_mid_turn_its_agents_are_adopted(cluster: Cluster) -> None:
    a = await cluster.add("a")
    b = await cluster.add("b")
    c = await cluster.add("c")
    await a.call("agent.create", name="w", on=b.id)
    fake = cluster.fake
    fake.push(Reply(text="never finished", fault=Stall(after_bytes=0)))
    fake.default = Reply(text="answered after the failover")
    await a.call("agent.prompt", agent="w", text="the cut turn")
    with trio.fail_after(20):
        await fake.wait_for_requests(1)
    # acknowledged while the turn runs: a queued prompt and a mail
    queued = await c.call("agent.prompt", agent="w", text="the queued prompt")
    assert queued["position"] == 1
    await a.call("mail.send", to="w", text="a letter")

    assert b.proc.proc is not None
    b.proc.proc.kill()
    killed = trio.current_time()
    b.proc.proc.wait(10)
    owner = await _owner_becomes(cluster, "w", b.id, LEASE + HEARTBEAT + SLACK)
    shown = await _answers(a, "w", SLACK)
    took = trio.current_time() - killed
    assert owner in (a.id, c.id) and shown["daemon"] == owner
    assert took < LEASE + HEARTBEAT + SLACK, took
    assert "daemon lost" in (a.log() + c.log())

    # the queued prompt runs on the adopter; the cut turn is marked interrupted
    async def answered() -> bool:
        rows = await _history(a, "w")
        return ("user", "the queued prompt") in rows and (
            "assistant",
            "answered after the failover",
        ) in rows

    await until(answered, 30)
    history = await _history(a, "w")
    cut_at = history.index(("user", "the cut turn"))
    interrupted = [i for i, (k, _) in enumerate(history) if k == "interrupted"]
    assert len(interrupted) == 1 and interrupted[0] > cut_at, history
    assert history[interrupted[0]][1] == "the daemon stopped during this turn"
    unread = await trio.to_thread.run_sync(lambda: _unread(cluster))
    with trio.fail_after(30):  # the mail is delivered too (read by a turn of its own)
        while unread:
            await trio.sleep(0.2)
            unread = await trio.to_thread.run_sync(lambda: _unread(cluster))
    _no_overlap(fake.requests)


def _said(m: Member, text: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return text in m.log()

    return check


def _unread(cluster: Cluster) -> int:
    engine = cluster.engine()
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    sa.text(
                        "SELECT count(*) FROM mail JOIN agents a ON a.uuid = mail.to_uuid "
                        "WHERE a.name = 'w' AND mail.read_at IS NULL"
                    )
                ).scalar()
            )
    finally:
        engine.dispose()


async def test_a_daemon_cut_off_stops_before_its_lease_is_taken(cluster: Cluster) -> None:
    a = await cluster.add("a")
    async with partition_to(pg_socket(cluster.url)) as cut:
        db = cluster.url.split("?")[0].rsplit("/", 1)[-1]
        via = f"postgresql+psycopg://postgres@127.0.0.1:{cut.port}/{db}"
        b = await cluster.add("b", url=via)
        await b.call("agent.create", name="w")
        fake = cluster.fake
        fake.push(Reply(text="never finished", fault=Stall(after_bytes=0)))
        fake.default = Reply(text="answered by the adopter")
        await b.call("agent.prompt", agent="w", text="the cut turn")
        with trio.fail_after(20):
            await fake.wait_for_requests(1)
        # the trio clock as the wall clock the database stamps heartbeats with
        offset = time.time() - trio.current_time()

        cut.block()
        owner = await _owner_becomes(cluster, "w", b.id, LEASE + HEARTBEAT + SLACK)
        assert owner == a.id
        # b stopped its call before its lease could be taken: before its last
        # heartbeat (the database's clock) plus the lease
        stalled = fake.requests[0]
        assert stalled.finished is not None
        engine = cluster.engine()
        try:
            with engine.connect() as conn:
                row = conn.execute(
                    sa.text("SELECT state, heartbeat_at, lease FROM daemons WHERE id = :d"),
                    {"d": b.id},
                ).one()
        finally:
            engine.dispose()
        assert row.state == "lost"
        expiry = row.heartbeat_at.timestamp() + row.lease
        assert stalled.finished + offset < expiry, (stalled.finished + offset, expiry)
        assert "lease not renewed" in b.log()

        # it answers for the agent through a meanwhile, and when the partition
        # heals it rejoins, runs nothing of what it lost and writes nothing for it
        cut.heal()
        await until(_said(b, "had been marked lost"), LEASE * 3 + SLACK)
        status = await b.call("daemon.status")
        # 1 when it joined, 2 when marked lost, 3 when it joined again
        assert status["cluster"]["generation"] == 3
        assert status["cluster"]["lease_held"]
        done = await b.call("agent.prompt", agent="w", text="after the heal", wait=True)
        assert done["reply"] == "answered by the adopter"
        assert (await b.call("agent.show", agent="w"))["daemon"] == a.id
        history = await _history(a, "w")
        assert history.count(("user", "the cut turn")) == 1
        _no_overlap(fake.requests)
        assert (await trio.to_thread.run_sync(cluster.owners))["w"] == a.id


async def test_a_paused_daemon_makes_no_call_after_it_was_replaced(cluster: Cluster) -> None:
    """SIGSTOP past the lease (a paused VM): the others adopt; on SIGCONT the
    paused daemon stops its agents and joins again, no call made."""
    a = await cluster.add("a")
    b = await cluster.add("b")
    await b.call("agent.create", name="w")
    fake = cluster.fake
    fake.push(Reply(text="never finished", fault=Stall(after_bytes=0)))
    fake.default = Reply(text="answered by the adopter")
    await b.call("agent.prompt", agent="w", text="the paused turn")
    with trio.fail_after(20):
        await fake.wait_for_requests(1)
    b.proc.signal(signal.SIGSTOP)
    try:
        owner = await _owner_becomes(cluster, "w", b.id, LEASE + HEARTBEAT + SLACK)
        assert owner == a.id
    finally:
        b.proc.signal(signal.SIGCONT)
    await until(_said(b, "had been marked lost"), LEASE * 3 + SLACK)
    done = await a.call("agent.prompt", agent="w", text="next", wait=True)
    assert done["reply"] == "answered by the adopter"
    _no_overlap(fake.requests)
    assert len(fake.requests) == 2


async def test_an_agent_whose_folder_is_missing_is_adopted_as_needs_host(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The adopting host lacks the agent's folder: it is adopted in state
    needs_host, refuses prompts saying why, and keeps what it was sent."""
    a = await cluster.add("a")
    b = await cluster.add("b")
    folder = tmp_path / "only-on-b"
    folder.mkdir()
    await a.call("agent.create", name="w", on=b.id, cwd=str(folder))
    assert b.proc.proc is not None
    b.proc.proc.kill()
    b.proc.proc.wait(10)
    folder.rmdir()  # as if a's host never had it
    await _owner_becomes(cluster, "w", b.id, LEASE + HEARTBEAT + SLACK)
    shown = await _answers(a, "w", SLACK)
    assert shown["state"] == "needs_host"
    with pytest.raises(RpcFailure) as refused:
        await a.call("agent.prompt", agent="w", text="run here")
    assert refused.value.code == -32003
    assert "needs another host" in refused.value.error["message"]
    assert str(folder) in refused.value.error["message"]
    await a.call("mail.send", to="w", text="kept for later")
    assert await trio.to_thread.run_sync(lambda: _unread(cluster)) == 1
