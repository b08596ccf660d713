"""Hostile request lines against the real daemon: each gets a clear error (or
its connection closed), the daemon lives, and another client's stream of a
running turn goes on undisturbed. Each case here once killed or froze it."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass

import pytest
import trio

from tests.daemon.rpc import Client, connect, turn_ended
from tests.fakes.script import Reply

CANARY_TEXT = "".join(f"w{i} " for i in range(60))


@dataclass
class Canary:
    client: Client
    turn: str
    first_seq: int


async def _canary(daemon, fake_provider, nursery) -> Canary:
    """Start the daemon and a streamed turn watched from its own connection."""
    await daemon.start()
    fake_provider.default = Reply(text="ok")
    fake_provider.responder = lambda r: Reply(text=CANARY_TEXT, pieces=60, delay=0.03) if b"canary-sing" in r.body else None
    watcher = await connect(nursery, str(daemon.socket))
    await watcher.call("agent.create", name="canary")
    sub = await watcher.call("agent.subscribe", agent="canary")
    turn = (await watcher.call("agent.prompt", agent="canary", text="canary-sing"))["turn"]
    return Canary(watcher, turn, sub["next_seq"])


async def _still_fine(daemon, nursery, canary: Canary) -> None:
    """The daemon answers a new client, and the canary's turn streams to its end
    with every seq in order and the exact text."""
    assert daemon.proc.poll() is None, "the daemon died:\n" + daemon.output()[-3000:]
    with trio.fail_after(10):
        fresh = await connect(nursery, str(daemon.socket))
        status = await fresh.call("daemon.status")
    assert status["agents"]["running"] >= 1
    events = await canary.client.events_until(turn_ended(canary.turn), limit=30)
    assert [e["seq"] for e in events] == list(range(canary.first_seq, canary.first_seq + len(events)))
    text = "".join(e["event"]["text"] for e in events if e["turn"] == canary.turn and e["event"]["type"] == "text_delta")
    assert text == CANARY_TEXT
    assert events[-1]["event"]["status"] == "completed"


async def _exchange(daemon, data: bytes, answers: int = 1, limit: float = 10) -> list[dict]:
    """Send raw bytes on a new connection; the first ``answers`` replies (fewer
    if the daemon closes the connection first)."""
    stream = await trio.open_unix_socket(str(daemon.socket))
    got: list[dict] = []
    buf = b""

    async def send() -> None:
        # the daemon may close first (a line too long): its answer is read below
        with contextlib.suppress(trio.BrokenResourceError):
            await stream.send_all(data)

    try:
        with trio.fail_after(limit):
            async with trio.open_nursery() as inner:
                # one write, read while it goes: a client that reads nothing
                # until it has sent everything may be dropped once its answers fill the buffer
                inner.start_soon(send)
                while len(got) < answers:
                    chunk = await stream.receive_some(1 << 16)
                    if not chunk:
                        break
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    got += [json.loads(line) for line in lines]
                inner.cancel_scope.cancel()
    finally:
        await stream.aclose()
    return got


def _line(msg: dict) -> bytes:
    # ensure_ascii: lone surrogates go out as \ud800 escapes, as a hostile client would write them
    return json.dumps(msg).encode() + b"\n"


# ------------------------------------------------------------------ nesting


async def test_deep_nesting_is_a_parse_error(daemon, fake_provider, nursery):
    canary = await _canary(daemon, fake_provider, nursery)
    [answer] = await _exchange(daemon, b"[" * 1000 + b"]" * 1000 + b"\n")
    assert answer["id"] is None and answer["error"]["code"] == -32700
    assert "nested deeper than 64" in answer["error"]["message"]
    # unclosed, and inside a request's params: the same
    deep = b'{"jsonrpc":"2.0","id":3,"method":"daemon.status","params":{"a":' + b"[" * 100_000 + b"\n"
    [answer] = await _exchange(daemon, deep)
    assert answer["error"]["code"] == -32700 and "nested deeper than 64" in answer["error"]["message"]
    # brackets inside a string are text, not nesting
    [answer] = await _exchange(daemon, _line({"jsonrpc": "2.0", "id": 4, "method": "agent.show", "params": {"agent": "[" * 200}}))
    assert answer["id"] == 4 and answer["error"]["code"] == -32001
    await _still_fine(daemon, nursery, canary)


# ------------------------------------------------------------------ lone surrogates

_SURROGATES = [
    # (what, the line, expected code, expected id, words the message must hold)
    ("id", _line({"jsonrpc": "2.0", "id": "a\ud800", "method": "daemon.status"}), -32600, None, "id: contains a lone surrogate (\\ud800 at character 1)"),
    ("id raw", b'{"jsonrpc":"2.0","id":"\xed\xbf\xbf","method":"daemon.status"}\n', -32700, None, "invalid UTF-8 at byte 23"),
    ("method", _line({"jsonrpc": "2.0", "id": 5, "method": "agent.\udfff"}), -32600, 5, "method: contains a lone surrogate (\\udfff at character 6)"),
    ("unknown key", _line({"jsonrpc": "2.0", "id": 6, "method": "agent.show", "params": {"agent": "x", "\ud800k": 1}}), -32602, 6, "params: a key contains a lone surrogate"),
    ("deep value", _line({"jsonrpc": "2.0", "id": 7, "method": "agent.show", "params": {"agent": "x", "e": {"f": [1, "ok", "\udc00"]}}}), -32602, 7, "params.e.f[2]: contains a lone surrogate (\\udc00 at character 0)"),
    ("agent ref", _line({"jsonrpc": "2.0", "id": 8, "method": "agent.show", "params": {"agent": "ab\ud83dcd"}}), -32602, 8, "params.agent: contains a lone surrogate (\\ud83d at character 2); agent must be valid Unicode"),
    ("other member", _line({"jsonrpc": "2.0", "id": 9, "method": "daemon.status", "x": ["\ud800"]}), -32600, 9, "x[0]: contains a lone surrogate"),
]


@pytest.mark.parametrize(("what", "line", "code", "rid", "words"), _SURROGATES, ids=[s[0] for s in _SURROGATES])
async def test_a_lone_surrogate_is_refused(daemon, fake_provider, nursery, what, line, code, rid, words):
    canary = await _canary(daemon, fake_provider, nursery)
    [answer] = await _exchange(daemon, line)
    assert answer["id"] == rid and answer["error"]["code"] == code, answer
    assert words in answer["error"]["message"], answer
    await _still_fine(daemon, nursery, canary)


@pytest.mark.parametrize("text", [b'"say \\ud800 now"', b'"say \xed\xa0\x80 now"'], ids=["escape", "raw"])
async def test_a_surrogate_prompt_is_refused_before_it_is_acknowledged(daemon, fake_provider, nursery, text):
    canary = await _canary(daemon, fake_provider, nursery)
    c = await connect(nursery, str(daemon.socket))
    await c.call("agent.create", name="victim")
    await c.call("agent.subscribe", agent="victim")
    line = b'{"jsonrpc":"2.0","id":11,"method":"agent.prompt","params":{"agent":"victim","text":' + text + b"}}\n"
    [answer] = await _exchange(daemon, line)
    assert answer["error"]["code"] == (-32602 if b"\\u" in text else -32700), answer
    assert "params.text: contains a lone surrogate (\\ud800 at character 4); text must be valid Unicode" in answer["error"]["message"] or (
        "invalid UTF-8" in answer["error"]["message"]
    )
    assert (await c.call("agent.history", agent="victim"))["messages"] == []  # nothing was queued
    assert (await c.call("agent.show", agent="victim"))["state"] == "idle"
    await _still_fine(daemon, nursery, canary)


# ------------------------------------------------------------------ sizes


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("agent.history", {"agent": "canary", "limit": 10**30}, "limit"),
        ("agent.history", {"agent": "canary", "before": 10**30}, "before"),
        ("agent.subscribe", {"agent": "canary", "from_seq": 2**64}, "from_seq"),
        ("agent.fork", {"agent": "canary", "at": -(10**30)}, "at"),
        ("agent.unsubscribe", {"subscription": 10**20}, "subscription"),
    ],
    ids=["limit", "before", "from_seq", "at", "subscription"],
)
async def test_a_huge_integer_names_the_field_and_range(daemon, fake_provider, nursery, method, params, field):
    canary = await _canary(daemon, fake_provider, nursery)
    [answer] = await _exchange(daemon, _line({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    assert answer["error"]["code"] == -32602, answer
    message = answer["error"]["message"]
    assert message.startswith(f"invalid params for {method}: {field}: ") and "9007199254740991" in message, message
    await _still_fine(daemon, nursery, canary)


async def test_a_one_mib_agent_ref_is_answered_at_once(daemon, fake_provider, nursery):
    canary = await _canary(daemon, fake_provider, nursery)
    ref = "q" * ((1 << 20) - 200)
    started = time.monotonic()
    [answer] = await _exchange(daemon, _line({"jsonrpc": "2.0", "id": 2, "method": "agent.show", "params": {"agent": ref}}), limit=20)
    assert time.monotonic() - started < 5  # a freeze detector: it takes milliseconds
    assert answer["id"] == 2 and answer["error"]["code"] == -32602
    assert "agent: Expected `str` of length <= 256" in answer["error"]["message"]
    assert len(json.dumps(answer)) < 1000  # nothing of the megabyte is echoed
    # a long unknown method is quoted only in part
    [answer] = await _exchange(daemon, _line({"jsonrpc": "2.0", "id": 3, "method": "m" * 500_000}))
    assert answer["error"]["code"] == -32601 and len(answer["error"]["message"]) < 400
    await _still_fine(daemon, nursery, canary)


# ------------------------------------------------------------------ odd but legal, or plainly wrong


async def test_odd_ids_params_and_method_names(daemon, fake_provider, nursery):
    canary = await _canary(daemon, fake_provider, nursery)
    cases = [
        # (the line, expected id, expected code or None for a result)
        (b'{"jsonrpc":"2.0","id":-0,"method":"daemon.status"}', 0, None),
        (b'{"jsonrpc":"2.0","id":9007199254740991,"method":"daemon.status"}', 9007199254740991, None),
        (b'{"jsonrpc":"2.0","id":' + b"9" * 40 + b',"method":"daemon.status"}', None, -32600),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"daemon.status"}', None, -32600),
        (b'{"jsonrpc":"2.0","id":-0.0,"method":"daemon.status"}', None, -32600),
        (b'{"jsonrpc":"2.0","id":NaN,"method":"daemon.status"}', None, -32700),
        (b'{"jsonrpc":"2.0","id":"' + b"i" * 300 + b'","method":"daemon.status"}', None, -32600),
        (b'{"jsonrpc":"2.0","id":12,"method":"daemon.status","params":[]}', 12, -32602),
        (b'{"jsonrpc":"2.0","id":13,"method":"agent.show","params":[[["canary"]]]}', 13, -32602),
        (b'{"jsonrpc":"2.0","id":14,"method":"agent.show","params":{"agent":["canary"]}}', 14, -32602),
        (b'{"jsonrpc":"2.0","id":15,"method":"daemon.status\\u0000"}', 15, -32601),
        (b'{"jsonrpc":"2.0","id":16,"method":"agent.show","params":{"agent":"can\\u0000ary"}}', 16, -32602),
        (b'{"jsonrpc":"2.0","id":17,"method":"agent.create","params":{"name":"' + b"n" * 257 + b'"}}', 17, -32602),
        (b'\xef\xbb\xbf{"jsonrpc":"2.0","id":18,"method":"daemon.status"}', None, -32700),
        (b'{"jsonrpc":"2.0","id":19,"method":"daemon.status"', None, -32700),
        (b'\x00\x00\x00{', None, -32700),
    ]
    for line, rid, code in cases:
        [answer] = await _exchange(daemon, line + b"\n")
        assert answer["id"] == rid, (line[:80], answer)
        if code is None:
            assert "result" in answer, (line[:80], answer)
        else:
            assert answer["error"]["code"] == code, (line[:80], answer)
    await _still_fine(daemon, nursery, canary)


async def test_ten_thousand_pipelined_requests_are_all_answered(daemon, fake_provider, nursery):
    canary = await _canary(daemon, fake_provider, nursery)
    n = 10_000
    data = b"".join(_line({"jsonrpc": "2.0", "id": i, "method": "daemon.status" if i % 2 else "agent.show", "params": {} if i % 2 else {"agent": "canary"}}) for i in range(n))
    # a bound, not a speed test: 5,000 agent.show on a loaded 2-core machine
    # took 70 s (each is several reads), and CI machines are slower still
    answers = await _exchange(daemon, data, answers=n, limit=300)
    assert sorted(a["id"] for a in answers) == list(range(n))
    assert all("result" in a for a in answers)
    await _still_fine(daemon, nursery, canary)


async def test_silent_half_line_and_failing_notification_clients(daemon, fake_provider, nursery):
    canary = await _canary(daemon, fake_provider, nursery)
    silent = await trio.open_unix_socket(str(daemon.socket))  # connects and never sends
    half = await trio.open_unix_socket(str(daemon.socket))
    await half.send_all(b'{"jsonrpc":"2.0","id":1,"method":"agent.kill","params":{"agent":"can')
    await half.aclose()  # half a line, then gone: nothing is done
    # notifications (no id) that fail are never answered; the request after them is
    notes = b"".join(
        _line(m)
        for m in [
            {"jsonrpc": "2.0", "method": "no.such"},
            {"jsonrpc": "2.0", "method": "agent.show", "params": {"agent": 5}},
            {"jsonrpc": "2.0", "method": "agent.show", "params": {"agent": "nobody"}},
            {"jsonrpc": "2.0", "method": "agent.history", "params": {"agent": "canary", "limit": 10**30}},
            {"jsonrpc": "2.0", "method": "agent.show", "params": {"agent": "x", "\ud800": 1}},
            {"jsonrpc": "2.0", "method": "agent.kill", "params": {"agent": "nobody"}},
        ]
    )
    stream = await trio.open_unix_socket(str(daemon.socket))
    await stream.send_all(notes + _line({"jsonrpc": "2.0", "id": 77, "method": "daemon.status"}))
    await stream.send_eof()
    buf = b""
    with trio.fail_after(10):
        while chunk := await stream.receive_some(1 << 16):
            buf += chunk
    answers = [json.loads(x) for x in buf.splitlines()]
    assert [a.get("id") for a in answers] == [77] and "result" in answers[0], answers
    await stream.aclose()
    await _still_fine(daemon, nursery, canary)
    c = await connect(nursery, str(daemon.socket))
    assert (await c.call("agent.show", agent="canary"))["status"] == "running"  # the half line killed nothing
    await silent.aclose()
