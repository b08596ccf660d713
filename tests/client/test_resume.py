"""A subscription that falls behind resumes by itself: the daemon's control
server over a real Unix socket (a small send buffer, so a burst makes it
send ``lagged`` and end the subscription), a real EventLog, and the client
library (async under trio, and sync in a worker thread) reading it.

Every event comes once, in order; only events the daemon no longer keeps
are reported, as one ``lagged`` event naming the seqs lost."""

from __future__ import annotations

import pytest
import trio
import trio.lowlevel

import ikigai
import protocol as p
from agents.eventlog import EventLog
from daemon.server import ControlServer
from protocol.params import PARAMS
from providers.types import TextDelta

BURST = 600


@pytest.fixture
async def served(tmp_path, nursery):
    """(log, socket path): a control server whose agent.subscribe follows ``log``."""
    logs: dict[str, EventLog] = {}

    async def unused(conn, params):
        raise AssertionError("not called")

    async def subscribe(conn, params):
        log = logs["log"]
        next_seq = log.next_seq
        from_seq = params.from_seq if params.from_seq is not None else next_seq
        return {"subscription": conn.subscribe(log, from_seq), "next_seq": next_seq}

    async def unsubscribe(conn, params):
        return {"ok": conn.unsubscribe(params.subscription)}

    handlers = {m: unused for m in PARAMS} | {p.AGENT_SUBSCRIBE: subscribe, p.AGENT_UNSUBSCRIBE: unsubscribe}
    server = ControlServer(handlers, client_buffer=200)  # events past 136 queued lines lag
    path = str(tmp_path / "s.sock")
    sock = trio.socket.socket(trio.socket.AF_UNIX)
    await sock.bind(path)
    sock.listen()
    await nursery.start(server.serve, sock)

    def make(keep: int) -> EventLog:
        logs["log"] = EventLog("agent-1", keep=keep)
        return logs["log"]

    return make, path


def burst(log: EventLog, n: int = BURST) -> None:
    # no checkpoint between publishes: the connection's queue fills at once
    for i in range(n):
        log.publish(TextDelta(index=0, text=f"w{i} "), turn="t1")


@pytest.mark.parametrize("keep", [1000, 100])
async def test_async_subscription_resumes_after_lagged(served, keep):
    make, path = served
    log = make(keep)
    got: list[dict] = []
    with trio.fail_after(20):
        async with ikigai.connect_async(path, autostart=False) as c:
            sub = await c.subscribe("agent-1")
            burst(log)
            async for ev in sub:
                got.append(ev)
                if ev["seq"] == BURST:
                    break
            await sub.aclose()
    assert sub.resumed >= 1  # the daemon did lag this subscriber
    _check(got, keep)


@pytest.mark.parametrize("keep", [1000, 100])
async def test_sync_subscription_resumes_after_lagged(served, keep):
    make, path = served
    log = make(keep)

    def follow() -> tuple[list[dict], int]:
        out: list[dict] = []
        with ikigai.connect(path, autostart=False) as c:
            sub = c.subscribe("agent-1")
            trio.from_thread.run_sync(burst, log)
            for ev in sub:
                out.append(ev)
                if ev["seq"] == BURST:
                    break
            sub.close()
            return out, sub.resumed

    with trio.fail_after(20):
        got, resumed = await trio.to_thread.run_sync(follow)
    assert resumed >= 1
    _check(got, keep)


async def test_a_full_client_inbox_resumes_too(served):
    """The client's own bound (a reader slower than the socket): the events
    past it are fetched again from the daemon, not lost."""
    make, path = served
    log = make(1000)
    with trio.fail_after(20):
        async with ikigai.connect_async(path, autostart=False) as c:
            sub = await c.subscribe("agent-1")
            box = c._inboxes[sub.sid]
            box.limit = 10
            for i in range(100):  # slower than the daemon's buffer, faster than this reader
                log.publish(TextDelta(index=0, text=f"w{i} "), turn="t1")
                await trio.lowlevel.checkpoint()
            while len(box) <= 10:  # the inbox overflowed before this reader took one
                await trio.lowlevel.checkpoint()
            got = []
            async for ev in sub:
                got.append(ev)
                if ev["seq"] == 100:
                    break
    assert [e["seq"] for e in got] == list(range(1, 101))
    assert sub.resumed >= 1


def _check(got: list[dict], keep: int) -> None:
    seqs = [e["seq"] for e in got]
    if keep >= BURST:
        assert seqs == list(range(1, BURST + 1))
        assert [e["event"]["text"] for e in got] == [f"w{i} " for i in range(BURST)]
        assert not any(e["event"]["type"] == "lagged" for e in got)
        return
    lags = [e for e in got if e["event"]["type"] == "lagged"]
    assert len(lags) == 1
    lag = lags[0]["event"]
    oldest = BURST - keep + 1
    assert lag["oldest_kept"] == oldest and 1 < lag["resume_from"] < oldest
    # before the gap: from 1, contiguous; after it: every kept event
    at = got.index(lags[0])
    assert [e["seq"] for e in got[:at]] == list(range(1, lag["resume_from"]))
    assert [e["seq"] for e in got[at + 1 :]] == list(range(oldest, BURST + 1))
