"""Hostile HTTP: servers that send exactly the bytes a test wants.

The base is a real answer: the fake provider's chunked event stream for an
OpenAI Chat request, captured off the socket once (head and body as sent).
Hypothesis then breaks it the ways a broken server, proxy or middlebox does:
cut at any byte, chunk-size lines of garbage, negative, 40 hex digits or
overlong, a 1 MB header block, 10,000 headers, a garbage status line, a body
longer or shorter than its Content-Length, invalid UTF-8 inside data lines,
Transfer-Encoding with Content-Length, 1xx answers before the real head.

For every example HttpProvider.stream yields events and ends with exactly one
DoneEvent or ErrorEvent (of a category that fits), never raises and never hangs.
One test points the real daemon at such a server, then checks it still answers.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from providers.registry import make_provider
from providers.settings import settings_for
from providers.types import (
    DoneEvent,
    ErrorEvent,
    Message,
    Request,
    StreamEvent,
    TextBlock,
    TextDelta,
)
from tests.daemon.rpc import connect
from tests.fakes.script import Reply
from tests.fakes.server import FakeProvider
from tests.faults.conftest import Case, FaultDaemon, Script, assert_history

KEY = "sk-proj-HostileTestKey0123456789abcdefgh"
TEXT = "Hostile bytes never crash the stream. " * 6
LIMIT = 15  # seconds for one example: nothing may hang
CHAT_PATH = "/v1/chat/completions"
TAIL = b"\r\n0\r\n\r\n"  # what follows the final event's data


# ------------------------------------------------------------------ the real bytes


@dataclass(frozen=True)
class Captured:
    status_line: bytes  # without CRLF
    headers: list[bytes]  # "name: value" lines, without CRLF, no framing headers
    events: list[bytes]  # the SSE events, one per chunk as the fake sent them

    def head(self, *extra: bytes, status_line: bytes | None = None) -> bytes:
        lines = [status_line or self.status_line, *self.headers, *extra]
        return b"\r\n".join(lines) + b"\r\n\r\n"

    @property
    def sse(self) -> bytes:
        return b"".join(self.events)

    def chunked(self) -> bytes:
        return b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in self.events) + b"0\r\n\r\n"

    def valid(self) -> bytes:
        return self.head(b"transfer-encoding: chunked") + self.chunked()


def _dechunk(body: bytes) -> list[bytes]:
    out = []
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return out
        out.append(body[:size])
        body = body[size + 2 :]


@functools.cache
def captured() -> Captured:
    """The fake provider's streamed answer to a Chat request, off the wire."""

    async def main() -> bytes:
        async with trio.open_nursery() as nursery:
            fake = FakeProvider(default=Reply(text=TEXT, pieces=8))
            await nursery.start(fake.serve)
            body = json.dumps(
                {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
            ).encode()
            stream = await trio.open_tcp_stream("127.0.0.1", fake.port)
            head = f"POST {CHAT_PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
            await stream.send_all(head.encode() + body)
            raw = bytearray()
            while data := await stream.receive_some(65536):
                raw += data
            nursery.cancel_scope.cancel()
            return bytes(raw)

    raw = trio.run(main)
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *headers = head.split(b"\r\n")
    assert re.search(rb"(?im)^transfer-encoding: chunked\r?$", head), head
    keep = [
        h
        for h in headers
        if not h.lower().startswith((b"transfer-encoding", b"content-length", b"connection"))
    ]
    return Captured(status_line=status_line, headers=keep, events=_dechunk(body))


# ------------------------------------------------------------------ a server that says what it is told


async def _read_request(stream: trio.SocketStream) -> bool:
    """The request's head and body (by Content-Length); False if the client left."""
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        data = await stream.receive_some(65536)
        if not data:
            return False
        buf += data
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    match = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    need = int(match.group(1)) if match else 0
    while len(rest) < need:
        data = await stream.receive_some(65536)
        if not data:
            return False
        rest += data
    return True


class RawServer:
    """Answers every request with ``payload`` (sent in ``pieces`` writes), then closes."""

    def __init__(self) -> None:
        self.payload = b""
        self.pieces = 1
        self.port = 0
        self.served = 0

    async def serve(
        self, *, task_status: trio.TaskStatus[RawServer] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self)
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        try:
            if await _read_request(stream):
                self.served += 1
                payload, n = self.payload, max(1, self.pieces)
                step = -(-len(payload) // n) or 1
                for i in range(0, len(payload), step):
                    await stream.send_all(payload[i : i + step])
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()


# ------------------------------------------------------------------ what may come back

NETWORK = frozenset({"network"})
# a malformed answer: the transport's fault or the server's
BROKEN = frozenset({"network", "server"})
ANY_END = frozenset({"network", "server", "invalid_request"})


@dataclass(frozen=True)
class Hostile:
    name: str
    payload: bytes
    ends: frozenset[str] | None  # error categories allowed; None: the answer must complete
    pieces: int = 1
    # a DoneEvent is acceptable too (the damage is where a reader need not look)
    done_ok: bool = False


def _mutations(c: Captured) -> dict[str, Callable[[st.DataObject], Hostile]]:
    valid = c.valid()
    head = c.head(b"transfer-encoding: chunked")
    chunks = c.chunked()

    def cut(data: st.DataObject) -> Hostile:
        # not in the last 7 bytes (after the final event): test_a_cut_after_the_final_event_still_ends_once
        at = data.draw(st.integers(0, len(valid) - len(TAIL) - 1), label="cut at")
        return Hostile(
            f"cut at {at}/{len(valid)}", valid[:at], NETWORK, pieces=data.draw(st.integers(1, 4))
        )

    def chunk_line(data: st.DataObject) -> Hostile:
        bad = data.draw(
            st.sampled_from(
                [
                    b"zz",
                    b"-5",
                    b"-0",
                    b"f" * 40,
                    b"1" * 100,
                    b"a" * 70_000,
                    b"5;" + b"x" * 70_000,
                    b" ",
                    b"0x10",
                    b"\xff\xfe",
                ]
            ),
            label="chunk size line",
        )
        where = data.draw(st.integers(0, len(c.events) - 1), label="before chunk")
        good = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in c.events[:where])
        return Hostile(
            f"chunk size line {bad[:20]!r} before chunk {where}",
            head + good + bad + b"\r\n" + c.events[where] + b"\r\n",
            BROKEN,
        )

    def big_header(data: st.DataObject) -> Hostile:
        size = data.draw(st.sampled_from([1 << 20, 300_000]), label="header bytes")
        return Hostile(
            f"a {size}-byte header",
            c.head(b"x-junk: " + b"a" * size, b"transfer-encoding: chunked") + chunks,
            BROKEN,
        )

    def many_headers(data: st.DataObject) -> Hostile:
        n = data.draw(st.sampled_from([10_000, 3_000]), label="headers")
        extra = [b"x-h-%d: v" % i for i in range(n)]
        # about 100 kB of head: a client may read it (httpcore's limit is 100 kB) or refuse it
        return Hostile(
            f"{n} headers",
            c.head(*extra, b"transfer-encoding: chunked") + chunks,
            BROKEN,
            done_ok=True,
        )

    def status_line(data: st.DataObject) -> Hostile:
        bad = data.draw(
            st.one_of(
                st.sampled_from(
                    [
                        b"HTTP/1.1 OK",
                        b"HTTP/9.9 200 OK",
                        b"SSH-2.0-OpenSSH_9.6",
                        b"HTTP/1.1 2000 OK",
                        b"\x00\x01\x02",
                        b"HTTP/1.1 -200 OK",
                        b"<html>",
                    ]
                ),
                st.binary(min_size=1, max_size=40).filter(
                    lambda b: b"\r\n" not in b and not b.startswith(b"HTTP/1.1 2")
                ),
            ),
            label="status line",
        )
        return Hostile(
            f"status line {bad!r}",
            c.head(b"transfer-encoding: chunked", status_line=bad) + chunks,
            BROKEN,
        )

    def content_length(data: st.DataObject) -> Hostile:
        longer = data.draw(st.booleans(), label="longer")
        body = c.sse[:20] if longer else c.sse[:5]
        # longer: the answer is 10 bytes, a truncated event stream; shorter: the peer leaves early
        return Hostile(
            f"Content-Length: 10 with {len(body)} bytes",
            c.head(b"content-length: 10") + body,
            BROKEN if longer else NETWORK,
        )

    def bad_utf8(data: st.DataObject) -> Hostile:
        junk = data.draw(
            st.sampled_from(
                [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80\x80"]
            ),
            label="bytes",
        )
        events = list(c.events)
        i = data.draw(st.integers(0, len(events) - 1), label="event")
        text_at = events[i].find(b'"content":"')
        at = text_at + len(b'"content":"') if text_at >= 0 else len(b"data: ")
        events[i] = events[i][:at] + junk + events[i][at:]
        body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
        return Hostile(f"{junk!r} in event {i}", head + body, ANY_END, done_ok=True)

    def both_framings(data: st.DataObject) -> Hostile:
        n = data.draw(st.sampled_from([10, len(chunks), 100_000]), label="content-length")
        payload = c.head(b"transfer-encoding: chunked", b"content-length: %d" % n) + chunks
        return Hostile(f"chunked and Content-Length: {n}", payload, BROKEN, done_ok=True)

    def informational(data: st.DataObject) -> Hostile:
        first = data.draw(
            st.lists(
                st.sampled_from(
                    [
                        b"HTTP/1.1 100 Continue\r\n\r\n",
                        b"HTTP/1.1 103 Early Hints\r\nlink: </x.css>; rel=preload\r\n\r\n",
                        b"HTTP/1.1 102 Processing\r\n\r\n",
                    ]
                ),
                min_size=1,
                max_size=3,
            ),
            label="1xx",
        )
        return Hostile(f"{len(first)} informational answers first", b"".join(first) + valid, None)

    return {
        "cut": cut,
        "chunk_line": chunk_line,
        "big_header": big_header,
        "many_headers": many_headers,
        "status_line": status_line,
        "content_length": content_length,
        "bad_utf8": bad_utf8,
        "both_framings": both_framings,
        "informational": informational,
    }


def request() -> Request:
    return Request(model="gpt-4o", messages=[Message(role="user", content=[TextBlock(text="hi")])])


async def stream_from(server: RawServer) -> list[StreamEvent]:
    settings_ = settings_for(
        "openai",
        env={"OPENAI_API_KEY": KEY},
        base_url=f"http://127.0.0.1:{server.port}/v1",
        read_timeout=5,
        connect_timeout=5,
    )
    provider = make_provider(settings_, api="chat")
    try:
        with trio.fail_after(LIMIT):
            async with provider.stream(request()) as events:
                return [e async for e in events]
    finally:
        await provider.aclose()


def check(case: Hostile, events: list[StreamEvent]) -> None:
    where = f"{case.name}: {events[-3:]!r}"
    ends = [e for e in events if isinstance(e, DoneEvent | ErrorEvent)]
    assert len(ends) == 1 and events[-1] is ends[0], where
    end = ends[0]
    if case.ends is None:
        assert isinstance(end, DoneEvent), where
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == TEXT, where
    elif isinstance(end, DoneEvent):
        assert case.done_ok, where
    else:
        assert end.error.category in case.ends, where
        if case.ends == NETWORK:
            assert end.error.retryable, where
        assert KEY[:12] not in end.error.message, where


def run_hostile(case: Hostile) -> list[StreamEvent]:
    async def main() -> list[StreamEvent]:
        async with trio.open_nursery() as nursery:
            server = RawServer()
            server.payload, server.pieces = case.payload, case.pieces
            await nursery.start(server.serve)
            events = await stream_from(server)
            nursery.cancel_scope.cancel()
            return events

    return trio.run(main)


def test_the_captured_answer_is_whole_as_it_is():
    c = captured()
    assert len(c.events) >= 8 and c.status_line.startswith(b"HTTP/1.1 200")
    assert set(KINDS) == set(_mutations(c))
    assert c.valid().endswith(b"data: [DONE]\n\n" + TAIL)
    case = Hostile("as captured", c.valid(), None, pieces=len(c.events))
    check(case, run_hostile(case))


KINDS = (
    "cut",
    "chunk_line",
    "big_header",
    "many_headers",
    "status_line",
    "content_length",
    "bad_utf8",
    "both_framings",
    "informational",
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(kind=st.sampled_from(KINDS), data=st.data())
def test_hostile_answers_end_in_exactly_one_done_or_error(kind: str, data: st.DataObject):
    case = _mutations(captured())[kind](data)
    check(case, run_hostile(case))


@pytest.mark.parametrize("short", [8, 9, 15, 20, 40])
def test_a_cut_just_before_the_final_event_is_one_network_error(short: int):
    valid = captured().valid()
    case = Hostile(f"cut {short} bytes before the end", valid[:-short], NETWORK)
    check(case, run_hostile(case))


@pytest.mark.parametrize("short", [1, 2, 5, 7])
def test_a_cut_after_the_final_event_still_ends_once(short: int):
    """The last 7 bytes are the chunk's CRLF and the zero-size chunk: the answer
    is whole but not delimited. A DoneEvent or a network error, but only one."""
    valid = captured().valid()
    case = Hostile(f"cut {short} bytes before the end", valid[:-short], NETWORK, done_ok=True)
    check(case, run_hostile(case))


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_hostile_answer_at_least_once(kind: str):
    """Hypothesis may draw one kind less often; each kind runs here too, with a fixed draw."""

    @settings(max_examples=3, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        case = _mutations(captured())[kind](data)
        check(case, run_hostile(case))

    one()


# ------------------------------------------------------------------ the daemon


async def test_the_daemon_survives_a_batch_of_hostile_answers(
    nursery: trio.Nursery, fake_provider: FakeProvider
):
    c = await trio.to_thread.run_sync(captured)  # captured() runs trio itself
    hostile = [
        c.valid()[: len(c.valid()) // 2],
        c.head(b"transfer-encoding: chunked") + b"zz\r\n",
        c.head(b"x-junk: " + b"a" * (1 << 20), b"transfer-encoding: chunked") + c.chunked(),
        # h3: 10,000 headers
        c.head(*[b"x-h-%d: v" % i for i in range(10_000)], b"transfer-encoding: chunked")
        + c.chunked(),
        c.head(b"transfer-encoding: chunked", status_line=b"SSH-2.0-OpenSSH_9.6"),
        c.head(b"content-length: 10") + c.sse[:5],
        c.head(b"transfer-encoding: chunked") + b"f" * 40 + b"\r\n" + c.sse,
    ]
    servers = []
    for payload in hostile:
        server = RawServer()
        server.payload = payload
        await nursery.start(server.serve)
        servers.append(server)
    home = Path(tempfile.mkdtemp(prefix="ikh-", dir="/tmp"))
    script = Script()
    fake_provider.responder = script
    d = FaultDaemon(home, fake_provider, script, nursery)
    try:
        await _hostile_batch(d, servers, nursery)
        d.stop()
        d.assert_clean_log()
    finally:
        d.stop()
        shutil.rmtree(home, ignore_errors=True)


async def _hostile_batch(d: FaultDaemon, servers: list[RawServer], nursery: trio.Nursery) -> None:
    home = d.home
    d.configure()
    cfg = json.loads((home / "config.json").read_text())
    for i, server in enumerate(servers):
        cfg["providers"][f"hostile{i}"] = {
            "base_url": f"http://127.0.0.1:{server.port}/v1",
            "api": "chat",
            "key_env": None,
        }
    (home / "config.json").write_text(json.dumps(cfg))
    await d.proc.start()
    out = await d.run_all(
        *[Case(f"h{i}", [], model=f"hostile{i}/some-model") for i in range(len(servers))], limit=40
    )
    for tag, o in out.items():
        if tag == "h3" and o.status == "completed":  # 10,000 headers (~100 kB) may be read
            assert_history(o, ["user", "assistant"], reply=TEXT)
            continue
        assert o.status == "error", (tag, o.ended)
        assert o.ended["error"]["category"] in ("network", "server"), (tag, o.ended)
        assert_history(o, ["user"])
    assert all(s.served >= 1 for s in servers)
    with trio.fail_after(10):
        admin = await connect(nursery, str(d.proc.socket))
        status = await admin.call("daemon.status")
        await admin.stream.aclose()
    assert status
    ok = await d.run(Case("after", [Reply(text="still here")], model="gpt-4o"), limit=20)
    assert ok.status == "completed", ok.ended
    assert_history(ok, ["user", "assistant"], reply="still here")
