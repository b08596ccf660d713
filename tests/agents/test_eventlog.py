from __future__ import annotations

import msgspec
import trio
import trio.lowlevel

from agents.eventlog import EventLog
from agents.events import Lagged, LogEntry, Notice, StateChanged
from providers.types import TextDelta


def _texts(entries):
    return [e.event.text if isinstance(e.event, Notice) else e.event for e in entries]


async def test_backlog_then_live_in_order():
    log = EventLog("a", keep=10, buffer=10)
    for i in range(3):
        log.publish(Notice(text=f"n{i}"), turn="t1")
    sub = log.subscribe(from_seq=2)
    log.publish(Notice(text="n3"))
    log.close()
    got = [e async for e in sub]
    assert [e.seq for e in got] == [2, 3, 4]
    assert _texts(got) == ["n1", "n2", "n3"]
    assert got[0].turn == "t1" and got[2].turn is None


async def test_subscribe_without_seq_gets_only_new_events():
    log = EventLog("a")
    log.publish(Notice(text="old"))
    sub = log.subscribe()
    log.publish(Notice(text="new"))
    log.close()
    assert _texts([e async for e in sub]) == ["new"]


async def test_slow_subscriber_is_dropped_with_resume_point_and_never_blocks():
    log = EventLog("a", keep=100, buffer=3)
    slow = log.subscribe()
    fast_seen = []
    fast = log.subscribe()
    for i in range(10):
        log.publish(Notice(text=str(i)))  # never blocks, even with a full subscriber
        fast_seen.append(fast._recv.receive_nowait().seq)
    got = [e async for e in slow]
    assert [e.seq for e in got[:3]] == [1, 2, 3]
    assert got[3].event == Lagged(resume_from=4, oldest_kept=1)
    assert len(got) == 4
    assert fast_seen == list(range(1, 11))
    assert log.subscriber_count == 1
    # resuming from the lag point gets the rest from the kept backlog
    again = log.subscribe(from_seq=4)
    log.close()
    assert [e.seq for e in [e async for e in again]] == list(range(4, 11))


async def test_resume_before_the_kept_window_says_so():
    log = EventLog("a", keep=3)
    for i in range(6):
        log.publish(Notice(text=str(i)))
    sub = log.subscribe(from_seq=1)
    log.close()
    got = [e async for e in sub]
    assert got[0].event == Lagged(resume_from=1, oldest_kept=4)
    assert [e.seq for e in got[1:]] == [4, 5, 6]


async def test_live_delivery_across_tasks():
    log = EventLog("a")
    received: list[int] = []

    async def reader(sub):
        async for e in sub:
            received.append(e.seq)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader, log.subscribe())
        await trio.testing.wait_all_tasks_blocked()
        for _ in range(50):
            log.publish(StateChanged(state="waiting_for_llm"))
            await trio.lowlevel.checkpoint()
        log.close()
    assert received == list(range(1, 51))


def test_entries_encode_as_tagged_json():
    e = LogEntry(seq=7, agent="a", turn="t", event=TextDelta(index=1, text="hi"))
    data = msgspec.json.encode(e)
    assert data == b'{"seq":7,"agent":"a","event":{"type":"text_delta","index":1,"text":"hi"},"turn":"t"}'
    assert msgspec.json.decode(data, type=LogEntry) == e
