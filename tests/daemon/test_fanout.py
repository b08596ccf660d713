"""Agent events to socket subscribers (daemon/server/subscriptions.py): the control server
over a real Unix socket, a real EventLog, clients reading raw lines.

Each event is encoded once whatever the number of subscribers, the answer to
agent.subscribe comes before its first event, a burst leaves in one write,
stream.flush_interval batches, and a subscriber that stops reading is lagged
without ever blocking the publisher."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

import daemon.server.subscriptions as fanout
import protocol as p
from agents.eventlog import EventLog
from agents.events import Notice
from daemon.config import ConfigError, parse_config
from daemon.server import ControlServer
from protocol.params import PARAMS
from providers.types import TextDelta


class Client:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = b""
        self.reads = 0
        self.lines: list[dict[str, Any]] = []
        self.raw: list[bytes] = []

    async def send(self, **msg: Any) -> None:
        await self.stream.send_all(json.dumps({"jsonrpc": "2.0", **msg}).encode() + b"\n")

    async def read_until(self, done) -> None:
        with trio.fail_after(10):
            while not done(self.lines):
                data = await self.stream.receive_some(1 << 20)
                assert data, "the daemon closed the connection"
                self.reads += 1
                self.buf += data
                *whole, self.buf = self.buf.split(b"\n")
                self.raw += whole
                self.lines += [json.loads(x) for x in whole]

    def events(self, sid: int | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]
            for m in self.lines
            if m.get("method") == "agent.event" and sid in (None, m["params"]["subscription"])
        ]


@pytest.fixture
async def served(tmp_path, nursery):
    """(server, log, connect): a control server whose agent.subscribe follows ``log``."""
    log = EventLog("agent-1")

    async def unused(conn, params):
        raise AssertionError("not called")

    async def subscribe(conn, params):
        next_seq = log.next_seq
        from_seq = params.from_seq if params.from_seq is not None else next_seq
        return {"subscription": conn.subscribe(log, from_seq), "next_seq": next_seq}

    async def unsubscribe(conn, params):
        return {"ok": conn.unsubscribe(params.subscription)}

    handlers = {m: unused for m in PARAMS} | {
        p.AGENT_SUBSCRIBE: subscribe,
        p.AGENT_UNSUBSCRIBE: unsubscribe,
    }
    server = ControlServer(handlers, client_buffer=200)
    path = str(tmp_path / "s.sock")
    sock = trio.socket.socket(trio.socket.AF_UNIX)
    await sock.bind(path)
    sock.listen()
    await nursery.start(server.serve, sock)

    async def connect() -> Client:
        return Client(await trio.open_unix_socket(path))

    return server, log, connect


def answered(rid: int):
    return lambda lines: any(m.get("id") == rid for m in lines)


async def subscribe(c: Client, rid: int, **params: Any) -> int:
    await c.send(id=rid, method="agent.subscribe", params={"agent": "agent-1", **params})
    await c.read_until(answered(rid))
    return next(m for m in c.lines if m.get("id") == rid)["result"]["subscription"]


async def test_backlog_after_the_answer_then_live_events_encoded_once(served, monkeypatch):
    _, log, connect = served
    for i in range(5):
        log.publish(TextDelta(index=0, text=f"old {i}"), turn="t1")
    a, b = await connect(), await connect()
    await a.send(id=1, method="agent.subscribe", params={"agent": "agent-1", "from_seq": 2})
    await a.read_until(lambda lines: len(lines) >= 5)
    # the answer first, then the kept entries from seq 2
    assert a.lines[0] == {"jsonrpc": "2.0", "id": 1, "result": {"subscription": 1, "next_seq": 6}}
    assert [e["seq"] for e in a.events()] == [2, 3, 4, 5]
    sid2 = await subscribe(a, 2)
    sid3 = await subscribe(b, 1)

    encodes = 0
    real = fanout._encoder

    class Counting:
        def encode(self, obj: Any) -> bytes:
            nonlocal encodes
            encodes += 1
            return real.encode(obj)

    monkeypatch.setattr(fanout, "_encoder", Counting())
    for i in range(50):
        log.publish(TextDelta(index=0, text=f"new {i} “Ω”"), turn="t2")
    await a.read_until(lambda lines: len([e for e in Client.events(a) if e["turn"] == "t2"]) == 100)
    await b.read_until(lambda lines: len(Client.events(b)) == 50)
    assert encodes == 50  # three subscribers, one encoding per event

    for sid, client in ((1, a), (sid2, a), (sid3, b)):
        live = [e for e in client.events(sid) if e["turn"] == "t2"]
        assert [e["seq"] for e in live] == list(range(6, 56)), sid
        assert [e["event"]["text"] for e in live] == [f"new {i} “Ω”" for i in range(50)]
        assert all(e["agent"] == "agent-1" for e in live)
    # byte for byte the same event JSON on every subscription
    tails = {
        line.split(b'"subscription":', 1)[1].split(b",", 1)[1]
        for client in (a, b)
        for line in client.raw
        if b'"seq":30,' in line
    }
    assert len(tails) == 1


async def test_a_burst_leaves_in_one_write(served):
    _, log, connect = served
    c = await connect()
    await subscribe(c, 1)
    reads_before = c.reads
    for i in range(120):  # one tick, as the deltas of one network read are
        log.publish(TextDelta(index=0, text=f"d{i}"), turn="t")
    await c.read_until(lambda lines: len(Client.events(c)) == 120)
    assert c.reads - reads_before == 1


@pytest.mark.parametrize(("interval", "most_reads"), [(0.0, None), (0.3, 3)])
async def test_flush_interval_batches_events_published_apart(served, interval, most_reads):
    server, log, connect = served
    server.flush_interval = interval
    c = await connect()
    await subscribe(c, 1)
    reads_before = c.reads

    async def publish() -> None:
        for i in range(20):
            log.publish(TextDelta(index=0, text=f"d{i}"), turn="t")
            await trio.sleep(0.005)

    async with trio.open_nursery() as n:
        n.start_soon(publish)
        await c.read_until(lambda lines: len(Client.events(c)) == 20)
    reads = c.reads - reads_before
    if most_reads is None:
        assert reads >= 10  # immediate: each event as it comes
    else:
        assert reads <= most_reads
    assert [e["event"]["text"] for e in c.events()] == [f"d{i}" for i in range(20)]


async def test_a_subscriber_that_stops_reading_is_lagged_and_never_blocks(served):
    _, log, connect = served
    slow, fast = await connect(), await connect()
    await subscribe(slow, 1)
    await subscribe(fast, 1)
    big = "x" * 20_000
    with trio.fail_after(10):
        for i in range(600):  # never waits, whoever reads
            log.publish(Notice(text=f"{i} {big}"), turn="t")
            if i % 10 == 0:
                await trio.sleep(0.001)
                await fast.read_until(lambda lines, i=i: len(Client.events(fast)) > i - 10)
    await fast.read_until(lambda lines: len(Client.events(fast)) == 600)
    assert [e["seq"] for e in fast.events()] == list(range(1, 601))
    assert not any(m.get("method") == p.SUBSCRIPTION_END for m in fast.lines)

    # the slow one reads at last: events in order, then lagged, then the end
    await slow.read_until(lambda lines: any(m.get("method") == p.SUBSCRIPTION_END for m in lines))
    events = slow.events()
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) < 600
    lag = events[-1]["event"]
    assert lag["type"] == "lagged" and lag["resume_from"] == seqs[-1]
    assert 1 <= lag["oldest_kept"] <= seqs[-1]
    end = next(m for m in slow.lines if m.get("method") == p.SUBSCRIPTION_END)
    assert end["params"] == {"subscription": 1, "reason": "lagged"}
    assert log.subscriber_count == 1  # the fast one only
    await slow.send(
        id=9, method="agent.subscribe", params={"agent": "agent-1", "from_seq": seqs[-1]}
    )
    await slow.read_until(
        lambda lines: len([e for e in Client.events(slow) if e["subscription"] == 2]) > 0
    )


async def test_unsubscribe_stops_quietly_and_an_ended_agent_ends_the_subscription(served):
    _, log, connect = served
    c = await connect()
    await subscribe(c, 1)
    sid2 = await subscribe(c, 2)
    await c.send(id=3, method="agent.unsubscribe", params={"subscription": 1})
    await c.read_until(answered(3))
    log.publish(TextDelta(index=0, text="after"), turn="t")
    log.close()
    await c.read_until(lambda lines: any(m.get("method") == p.SUBSCRIPTION_END for m in lines))
    assert [(e["subscription"], e["event"]["text"]) for e in c.events()] == [(sid2, "after")]
    ends = [m["params"] for m in c.lines if m.get("method") == p.SUBSCRIPTION_END]
    assert ends == [{"subscription": sid2, "reason": "agent ended"}]
    # subscribing to an ended agent: its kept entries, then the end
    await c.send(id=4, method="agent.subscribe", params={"agent": "agent-1", "from_seq": 1})
    await c.read_until(
        lambda lines: len([m for m in lines if m.get("method") == p.SUBSCRIPTION_END]) == 2
    )
    assert [e["seq"] for e in c.events(3)] == [1]
    assert log.subscriber_count == 0


def test_stream_flush_interval_in_config():
    assert parse_config("{}").stream.flush_interval == 0
    assert parse_config('{"stream": {"flush_interval": 0.02}}').stream.flush_interval == 0.02
    for value, words in (
        (-1, "Expected number >= 0.0"),
        (2, "Expected number <= 1.0"),
        ("fast", "Expected number, got str"),
    ):
        with pytest.raises(ConfigError) as e:
            parse_config(json.dumps({"stream": {"flush_interval": value}}))
        assert str(e.value) == f"config.json: stream.flush_interval: {words}"
    with pytest.raises(ConfigError) as e:
        parse_config('{"stream": {"flush": 1}}')
    assert "stream.flush: unknown key (known keys: flush_interval)" in str(e.value)
