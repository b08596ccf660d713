"""Load for the end-to-end benchmarks: a fast fake Anthropic provider and the
subscribers that time what reaches them. Bench-only; not a test fake.

    from tests.bench._loadgen import LoadFake, drive

``LoadFake`` speaks just enough HTTP/1.1 on loopback (request head, a
content-length body, keep-alive) to answer ``POST /v1/messages``. A prompt's
text carries a tag ``[bench:RAAAA]`` (run R, agent AAAA); the reply streams
text deltas that are markers ``|RAAAAIIIII|`` (I: delta index), in the real
event sequence and field shapes of tests/fakes/wire/anthropic.py
(message_start, content_block_start, ping, the deltas, content_block_stop,
message_delta with usage, message_stop). Modes:

  chunked   (the primary one, as real providers send) transfer-encoding
            chunked, ONE chunk and ONE socket write per event; the deltas
            come at a steady rate per stream (one every 1/rate s, each stream
            with its own phase within the first interval), or back to back
            when the rate is 0
  bulk      the whole body in one write with content-length

The fake notes ``perf_counter_ns()`` just before the write holding each
marker, and the time of each stream's first write. It must stay cheap, since
it shares the bench process with the subscribers at 1,000 x 10 events/s: the
chunks are rendered when the request arrives (no h11, no JSON per event), one
timer task paces every stream, and writes go straight to non-blocking
sockets (a socket that is full is flushed by a task of its own).

``drive()`` runs one load against a contender (the daemon or the lean relay,
both speaking the control protocol on a Unix socket): one subscriber socket
per agent, every agent prompted at once, until every turn has ended.
"""

from __future__ import annotations

import heapq
import json
import math
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from tests.fakes.recorded import RecordedRequest
from tests.fakes.script import Reply
from tests.fakes.wire.anthropic import render_stream

MARK = re.compile(rb"\|(\d{10})\|")
TAG = re.compile(rb"\[bench:(\d)(\d{4})\]")
_PLACEHOLDER = "|@@@@@@@@@@|"


def marker(run: int, agent: int, i: int) -> str:
    """12 characters, the same length for every delta, so a chunk's size line is fixed."""
    return f"|{run}{agent:04d}{i:05d}|"


def _chunk(event: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(event), event)


class _Templates:
    """The wire module's event sequence for a one-delta reply, cut around the
    delta text so that any marker drops in without rendering again."""

    def __init__(self, model: str) -> None:
        request = RecordedRequest(
            "POST", "/v1/messages", {}, json.dumps({"model": model, "stream": True}).encode()
        )
        events = render_stream(Reply(text=_PLACEHOLDER, pieces=1), request)
        delta = next(i for i, e in enumerate(events) if _PLACEHOLDER.encode() in e)
        self.head = events[:delta]  # message_start, content_block_start, ping
        self.tail = events[delta + 1 :]  # content_block_stop, message_delta, message_stop
        before, after = events[delta].split(_PLACEHOLDER.encode())
        size = len(events[delta])
        self.delta_before = b"%x\r\n%s" % (size, before)
        self.delta_after = after + b"\r\n"
        self.head_chunks = [_chunk(e) for e in self.head]
        self.tail_chunks = [_chunk(e) for e in self.tail]
        self.stream_head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
            b"transfer-encoding: chunked\r\nrequest-id: req_011bench\r\n\r\n"
        )

    def delta(self, mark: bytes) -> bytes:
        return self.delta_before + mark + self.delta_after

    def bulk(self, marks: list[bytes]) -> bytes:
        body = b"".join(
            [*self.head, *(self.delta(m).split(b"\r\n", 1)[1][:-2] for m in marks), *self.tail]
        )
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
            b"content-length: %d\r\nrequest-id: req_011bench\r\n\r\n%s" % (len(body), body)
        )


class _Stream:
    """One reply being paced: its chunks, what was written, and its socket."""

    __slots__ = ("chunks", "dead", "done", "interval", "keys", "next", "out", "pending", "sock")

    def __init__(self, sock: socket.socket, keys: list[bytes], chunks: list[bytes]) -> None:
        self.sock = sock
        self.keys = keys
        self.chunks = chunks
        self.next = 0
        self.interval = 0.0
        self.pending: list[bytes] = []  # bytes the socket had no room for, flushed by a task
        self.dead = False
        self.done = trio.Event()
        self.out = 0


class LoadFake:
    """A fast fake of the Anthropic Messages wire for load (see the module doc)."""

    def __init__(self, model: str = "claude-sonnet-4-5") -> None:
        self.mode = "chunked"
        self.deltas = 20
        self.rate = 10.0  # deltas/s per stream; 0: back to back
        self.writes: dict[bytes, int] = {}  # marker digits -> perf_counter_ns before its write
        self.starts: dict[int, int] = {}  # run*10000+agent -> perf_counter_ns of the first write
        self.ends: list[int] = []  # perf_counter_ns of each stream's last write
        self.requests = 0
        self.errors: list[str] = []
        self.base_url = ""
        self._t = _Templates(model)
        self._heap: list[tuple[float, int, _Stream]] = []
        self._order = 0
        self._kick = trio.Event()
        self._target = math.inf
        self._nursery: trio.Nursery | None = None

    def reset(self) -> None:
        self.writes.clear()
        self.starts.clear()
        self.ends.clear()
        self.errors.clear()

    async def serve(
        self, *, task_status: trio.TaskStatus[LoadFake] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(4096)
        listener.setblocking(False)
        self.base_url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._pacer)
            task_status.started(self)
            try:
                while True:
                    await trio.lowlevel.wait_readable(listener)
                    while True:
                        try:
                            sock, _ = listener.accept()
                        except BlockingIOError:
                            break
                        sock.setblocking(False)
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        nursery.start_soon(self._connection, sock)
            finally:
                listener.close()

    # ------------------------------------------------------------ requests

    async def _connection(self, sock: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = await _recv(sock)
                    if not data:
                        return
                    buf += data
                    if len(buf) > 65536:
                        raise ValueError("request head over 64 KiB")
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.split(b"\r\n")
                method, _, rest = lines[0].partition(b" ")
                path = rest.partition(b" ")[0]
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                    elif name.strip().lower() == b"transfer-encoding":
                        raise ValueError("a chunked request body (this fake reads content-length)")
                while len(buf) < length:
                    data = await _recv(sock)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                self.requests += 1
                await self._answer(sock, method, path, body)
        except (ValueError, OSError) as e:
            self.errors.append(f"{type(e).__name__}: {e}")
        finally:
            sock.close()

    async def _answer(self, sock: socket.socket, method: bytes, path: bytes, body: bytes) -> None:
        if method != b"POST" or not path.endswith((b"/v1/messages", b"/count_tokens")):
            await _send_all(
                sock, _plain(404, b'{"type":"error","error":{"type":"not_found_error"}}')
            )
            return
        if path.endswith(b"/count_tokens"):
            await _send_all(sock, _plain(200, b'{"input_tokens":12}'))
            return
        # the newest user message is the last tag: an agent's history holds its older prompts
        at = body.rfind(b"[bench:")
        m = TAG.match(body, at) if at >= 0 else None
        if m is None:
            await _send_all(
                sock,
                _plain(
                    400,
                    b'{"type":"error","error":{"type":"invalid_request_error","message":"no bench tag"}}',
                ),
            )
            return
        run, agent = int(m.group(1)), int(m.group(2))
        keys = [marker(run, agent, i)[1:-1].encode() for i in range(self.deltas)]
        t = time.perf_counter_ns()
        self.starts[run * 10000 + agent] = t
        if self.mode == "bulk":
            data = self._t.bulk([b"|%s|" % k for k in keys])
            for k in keys:
                self.writes[k] = t
            await _send_all(sock, data)
            self.ends.append(t)
            return
        tpl = self._t
        chunks = [tpl.delta(b"|%s|" % k) for k in keys]
        stream = _Stream(sock, keys, chunks)
        # the head and the first events go at once (the API sends them before any text)
        self._write(stream, tpl.stream_head + tpl.head_chunks[0])
        for c in tpl.head_chunks[1:]:
            self._write(stream, c)
        if self.rate <= 0:
            # back to back: each event its own send, waiting for room when the socket is full
            try:
                for k, c in zip(keys, chunks, strict=True):
                    self.writes[k] = time.perf_counter_ns()
                    await _send_all(sock, c)
                    stream.next += 1
            except OSError:
                stream.dead = True
                stream.done.set()
            else:
                self._finish(stream)
        else:
            stream.interval = 1.0 / self.rate
            # a phase per agent, spread evenly over one interval: streams that start
            # together do not all tick together (real ones do not either)
            phase = (agent * 0.6180339887) % 1.0
            self._schedule(stream, trio.current_time() + stream.interval * (1.0 + phase))
        await stream.done.wait()

    # ------------------------------------------------------------ pacing

    def _schedule(self, stream: _Stream, due: float) -> None:
        self._order += 1
        heapq.heappush(self._heap, (due, self._order, stream))
        if due < self._target:
            self._kick.set()

    async def _pacer(self) -> None:
        heap = self._heap
        writes = self.writes
        clock = time.perf_counter_ns
        while True:
            now = trio.current_time()
            while heap and heap[0][0] <= now:
                due, _, stream = heapq.heappop(heap)
                if stream.dead:
                    stream.done.set()
                    continue
                i = stream.next
                writes[stream.keys[i]] = clock()
                self._write(stream, stream.chunks[i])
                stream.next = i + 1
                if stream.next == len(stream.chunks):
                    self._finish(stream)
                else:
                    # from the due time, not from now: a late tick does not slow the stream
                    self._order += 1
                    heapq.heappush(heap, (due + stream.interval, self._order, stream))
            self._target = heap[0][0] if heap else math.inf
            self._kick = trio.Event()
            with trio.move_on_at(self._target):
                await self._kick.wait()

    def _finish(self, stream: _Stream) -> None:
        tail = self._t.tail_chunks
        for c in tail[:-1]:
            self._write(stream, c)
        self._write(stream, tail[-1] + b"0\r\n\r\n")  # message_stop and the end of the body
        self.ends.append(time.perf_counter_ns())
        if not stream.pending:
            stream.done.set()

    # ------------------------------------------------------------ writes

    def _write(self, stream: _Stream, data: bytes) -> None:
        """One send() of ``data``; what does not fit waits for a flusher task."""
        if stream.dead:
            return
        if stream.pending:
            stream.pending.append(data)
            return
        try:
            n = stream.sock.send(data)
        except BlockingIOError:
            n = 0
        except OSError:
            stream.dead = True
            stream.done.set()
            return
        stream.out += n
        if n < len(data):
            stream.pending.append(data[n:])
            assert self._nursery is not None
            self._nursery.start_soon(self._flush, stream)

    async def _flush(self, stream: _Stream) -> None:
        try:
            while stream.pending:
                data = b"".join(stream.pending)
                stream.pending.clear()
                await _send_all(stream.sock, data)
        except OSError:
            stream.dead = True
        if stream.dead or stream.next == len(stream.chunks):
            stream.done.set()


def _plain(status: int, body: bytes) -> bytes:
    reason = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}[status]
    return b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        status,
        reason,
        len(body),
        body,
    )


async def _recv(sock: socket.socket) -> bytes:
    while True:
        try:
            return sock.recv(1 << 16)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(sock)


async def _send_all(sock: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = sock.send(view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        view = view[n:]


# ------------------------------------------------------------------ the subscribers


class Rpc:
    """A line-oriented JSON-RPC client on a raw non-blocking Unix socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.ids = 0

    @classmethod
    async def connect(cls, path: Path | str) -> Rpc:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(str(path))
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                sock.close()
                raise OSError(err, f"cannot connect to {path}") from None
        except OSError:
            sock.close()
            raise
        return cls(sock)

    async def send(self, method: str, **params: Any) -> None:
        self.ids += 1
        line = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        await _send_all(self.sock, json.dumps(line).encode() + b"\n")

    async def line(self) -> bytes:
        cut = self.buf.find(b"\n")
        if cut < 0:
            # the pieces of a long line (agent.list at 10,000 agents: 5 MB)
            # are joined once: a copy and a search per read would be quadratic
            parts, size = [self.buf], len(self.buf)
            while cut < 0:
                data = await _recv(self.sock)
                if not data:
                    raise EOFError("the contender closed the connection")
                parts.append(data)
                cut = data.find(b"\n")
                if cut >= 0:
                    cut += size
                size += len(data)
            self.buf = b"".join(parts)
        line, self.buf = self.buf[:cut], self.buf[cut + 1 :]
        return line

    async def answer(self) -> Any:
        while True:
            msg = json.loads(await self.line())
            if "id" in msg:
                if "error" in msg:
                    raise RuntimeError(f"error answer: {msg['error']}")
                return msg["result"]

    async def call(self, method: str, **params: Any) -> Any:
        await self.send(method, **params)
        return await self.answer()

    def close(self) -> None:
        self.sock.close()


class Subscriber:
    """One socket subscribed to one agent: notes when each marker arrives (the
    time a read completes the line holding it) and when the turn ends."""

    def __init__(self, rpc: Rpc) -> None:
        self.rpc = rpc
        self.arrivals: list[tuple[bytes, int]] = []
        self.notes = 0
        self.lagged = 0
        self.errors = 0
        self.last = 0  # perf_counter_ns of the last marker received
        self.ended = trio.Event()

    async def read(self) -> None:
        sock = self.rpc.sock
        buf = self.rpc.buf
        arrivals = self.arrivals
        clock = time.perf_counter_ns
        try:
            while True:
                try:
                    data = sock.recv(1 << 18)
                except BlockingIOError:
                    await trio.lowlevel.wait_readable(sock)
                    continue
                if not data:
                    break
                t = clock()
                cut = data.rfind(b"\n")
                if cut < 0:
                    buf += data
                    continue
                lines, buf = buf + data[: cut + 1], data[cut + 1 :]
                self.notes += lines.count(b'"agent.event"')
                if b"text_delta" in lines:
                    for key in MARK.findall(lines):
                        arrivals.append((key, t))
                    self.last = t
                if b'"turn_ended"' in lines:
                    if b'"status":"error"' in lines:
                        self.errors += 1
                    self.ended.set()
                if b'"type":"lagged"' in lines:  # the event, not the subscription_end reason
                    self.lagged += 1
                    self.ended.set()
        except OSError:
            pass
        finally:
            self.ended.set()  # a closed socket ends the wait too; its losses show as lost


@dataclass
class RunResult:
    """One load through one contender."""

    latency_ms: list[float]
    expected: int
    received: int
    notes: int
    lagged: int
    turn_errors: int
    elapsed: float  # first prompt sent -> last turn ended
    cpu: float  # the contender's utime+stime over the run
    delivery: float  # slowest agent: first write -> last delta received (s)
    harness_cpu: float  # this process's CPU over the run (the fake and the subscribers)
    concurrent: int  # the most streams the fake was sending at once
    fake_errors: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.expected - self.received


async def drive(
    sock_path: Path,
    pid: int,
    fake: LoadFake,
    agents: list[str],
    run: int,
    *,
    deltas: int,
    rate: float,
    mode: str = "chunked",
    cpu_seconds: Callable[[int], float],
    limit_s: float = 300.0,
    on_start: Callable[[], None] | None = None,
) -> RunResult:
    """Subscribe one socket per agent, prompt them all at once (pipelined on one
    admin connection), and wait until every turn has ended."""
    fake.reset()
    fake.mode, fake.deltas, fake.rate = mode, deltas, rate
    run %= 10
    subs: list[Subscriber] = []
    async with trio.open_nursery() as nursery:
        for lo in range(0, len(agents), 100):  # connect in batches: the listen backlog is finite
            batch = agents[lo : lo + 100]
            rpcs = [await Rpc.connect(sock_path) for _ in batch]
            for rpc, agent in zip(rpcs, batch, strict=True):
                await rpc.send("agent.subscribe", agent=agent)
            for rpc in rpcs:
                await rpc.answer()
                sub = Subscriber(rpc)
                subs.append(sub)
                nursery.start_soon(sub.read)
        admin = await Rpc.connect(sock_path)
        if on_start is not None:
            on_start()
        cpu0, own0 = cpu_seconds(pid), time.process_time()
        t0 = time.perf_counter_ns()

        async def answers() -> None:
            for _ in agents:
                await admin.answer()

        # answers are read while prompts go out: a contender that answers each
        # line at once would otherwise fill both socket buffers and deadlock
        async with trio.open_nursery() as prompting:
            prompting.start_soon(answers)
            for i, agent in enumerate(agents):
                await admin.send("agent.prompt", agent=agent, text=f"[bench:{run}{i:04d}] stream")
        with trio.move_on_after(limit_s) as scope:
            for sub in subs:
                await sub.ended.wait()
        elapsed = (time.perf_counter_ns() - t0) / 1e9
        cpu, own = cpu_seconds(pid) - cpu0, time.process_time() - own0
        if scope.cancelled_caught:
            print(f"    (gave up after {limit_s:.0f} s waiting for turns to end)")
        nursery.cancel_scope.cancel()
    for sub in subs:
        sub.rpc.close()
    admin.close()
    writes = fake.writes
    latency: list[float] = []
    seen: set[bytes] = set()
    for sub in subs:
        for key, t in sub.arrivals:
            if key in seen or key not in writes:
                continue
            seen.add(key)
            latency.append((t - writes[key]) / 1e6)
    delivery = 0.0
    for i, sub in enumerate(subs):
        start = fake.starts.get(run * 10000 + i)
        if start is not None and sub.last:
            delivery = max(delivery, (sub.last - start) / 1e9)
    return RunResult(
        latency_ms=latency,
        expected=len(agents) * deltas,
        received=len(seen),
        notes=sum(s.notes for s in subs),
        lagged=sum(s.lagged for s in subs),
        turn_errors=sum(s.errors for s in subs),
        elapsed=elapsed,
        cpu=cpu,
        delivery=delivery,
        harness_cpu=own,
        concurrent=_peak(list(fake.starts.values()), fake.ends),
        fake_errors=list(fake.errors),
    )


def _peak(starts: list[int], ends: list[int]) -> int:
    """The most intervals open at once."""
    most = now = 0
    for _, step in sorted([(t, 1) for t in starts] + [(t, -1) for t in ends]):
        now += step
        most = max(most, now)
    return most
