"""THE floor of every codec benchmark, defined once, and how a codec is measured against it.

The floor does the least work that still turns a provider's stream into data:

    raw bytes -> SSE split -> msgspec.json.decode of each data payload

The split (``Splitter``) is minimal: lines (LF or CRLF), the ``data:`` fields
of an event joined with LF, an event ends at a blank line. No ``event:``/``id:``
handling, no normalization, no objects beyond what msgspec decodes; the OpenAI
end marker ``[DONE]`` counts as an event but is not JSON, so it is not decoded.

- In memory (``floor_memory``) it is fed the body in the same pieces as the
  wire sends them: one piece per SSE event.
- Over loopback (``floor_loopback``) it is fed httpx's ``aiter_raw()`` of the
  very response our provider reads (same fake server, same bytes, same
  chunking), in the same trio event loop, on a warm connection.

``measure_codec`` runs every contender the same number of times, interleaved
(tests/bench/_measure.py), and keeps medians. The stream-path rows are CPU of
the client thread (``time.thread_time``): the fake server runs in its own
thread, so its work is not counted, and waiting on the socket costs nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
import trio

from providers.http import HttpProvider
from providers.types import Request
from tests.bench._measure import ainterleaved, interleaved, median
from tests.fakes.script import Raw, RawStream, Reply
from tests.fakes.server import ThreadedFakeProvider

UNIT_STREAM = "us CPU per SSE event (comparison: httpx + SSE split + msgspec floor, same bytes)"
UNIT_MEMORY = "us per SSE event (comparison: SSE split + msgspec floor)"
UNIT_SDK = "SSE events/s (comparison: official SDK)"

_DONE = b"[DONE]"


class Splitter:
    """SSE bytes in any chunking -> the data payload of each complete event."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf + data if self._buf else data
        if b"\r" in buf:
            # the unsplit tail is kept and scanned again, so a CRLF cut between
            # two pieces is joined here on the next feed
            buf = buf.replace(b"\r\n", b"\n")
        *blocks, self._buf = buf.split(b"\n\n")
        out = []
        for block in blocks:
            if block.startswith(b"data:") and b"\n" not in block:
                out.append(block[6:] if block[5:6] == b" " else block[5:])
                continue
            fields = [
                line[6:] if line[5:6] == b" " else line[5:]
                for line in block.split(b"\n")
                if line.startswith(b"data:")
            ]
            if fields:
                out.append(b"\n".join(fields))
        return out


def _decode_all(payloads: list[bytes], decode: Callable[[bytes], Any] = msgspec.json.decode) -> int:
    for p in payloads:
        if p != _DONE:
            decode(p)
    return len(payloads)


def floor_memory(pieces: Sequence[bytes]) -> int:
    """The floor over a body fed in ``pieces``; returns the events it decoded."""
    split = Splitter()
    return sum(_decode_all(split.feed(p)) for p in pieces)


async def floor_loopback(client: httpx.AsyncClient, url: str) -> tuple[int, int]:
    """The floor over one streamed response: (events, reads)."""
    split = Splitter()
    events = reads = 0
    async with client.stream("POST", url, content=b"{}") as response:
        async for data in response.aiter_raw():
            reads += 1
            events += _decode_all(split.feed(data))
    return events, reads


# ------------------------------------------------------------------ one codec's benchmark


@dataclass
class Extra:
    """A further ours-vs-SDK row, chunked (e.g. a stream folded into a message)."""

    name: str
    ours: Callable[[HttpProvider], Awaitable[object]]  # one stream, consumed
    sdk: Callable[[str], Callable[[], object]]  # base_url -> one SDK stream, consumed


@dataclass
class Case:
    label: str  # row name prefix: "chat: ", "responses: " or ""
    events: list[bytes]  # the stream's SSE events, each as the wire frames it
    provider: Callable[[str], HttpProvider]  # base_url -> make_provider(...)
    request: Request
    decoder: Callable[[], Any]  # a fresh pure stream decoder (feed/close)
    sdk: Callable[[str], Callable[[], object]]  # base_url -> one SDK stream, consumed
    extras: list[Extra] = field(default_factory=list)

    @property
    def body(self) -> bytes:
        return b"".join(self.events)


def _cpu_sync(fn: Callable[[], object]) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        t0 = time.thread_time()
        fn()
        return time.thread_time() - t0

    return run


def _cpu_async(fn: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        t0 = time.thread_time()
        await fn()
        return time.thread_time() - t0

    return run


async def _drain(provider: HttpProvider, request: Request) -> int:
    n = 0
    async with provider.stream(request) as events:
        async for _event in events:
            n += 1
    if n == 0:
        raise RuntimeError("our provider streamed no event")
    return n


def _other_threads_cpu(servers: list[int]) -> float:
    """CPU of the whole process minus this thread and the fake's threads."""
    return (
        time.process_time()
        - time.thread_time()
        - sum(time.clock_gettime(clock) for clock in servers)
    )


def _loopback(case: Case, base_url: str, reps: int, with_sdk: bool) -> dict[str, Any]:
    """Interleaved repetitions over the fake's current reply: CPU seconds per
    contender; the floor's reads per stream; and the CPU our stream path spent
    in threads other than this one (work handed to a thread would not be seen
    by thread_time: this shows it)."""
    floor_reads: list[int] = []
    ours_elsewhere: list[float] = []
    main_thread = threading.main_thread()
    servers = [
        time.pthread_getcpuclockid(t.ident)
        for t in threading.enumerate()
        if t is not main_thread and t.ident is not None
    ]

    async def main() -> dict[str, Any]:
        provider = case.provider(base_url)
        sdk_runs = {}
        async with httpx.AsyncClient(timeout=60) as client:

            async def floor() -> None:
                events, reads = await floor_loopback(client, base_url + "/floor")
                if events != len(case.events):
                    raise RuntimeError(f"the floor read {events} of {len(case.events)} events")
                floor_reads.append(reads)

            async def ours() -> None:
                before = _other_threads_cpu(servers)
                await _drain(provider, case.request)
                ours_elsewhere.append(_other_threads_cpu(servers) - before)

            contenders: dict[str, Callable[[], Awaitable[float]]] = {
                "ours": _cpu_async(ours),
                "floor": _cpu_async(floor),
            }
            if with_sdk:
                contenders["sdk"] = _cpu_sync(case.sdk(base_url))
                for extra in case.extras:
                    contenders[f"ours {extra.name}"] = _cpu_async(
                        lambda extra=extra: extra.ours(provider)
                    )
                    sdk_runs[extra.name] = extra.sdk(base_url)
                    contenders[f"sdk {extra.name}"] = _cpu_sync(sdk_runs[extra.name])
            try:
                out: dict[str, Any] = await ainterleaved(reps, contenders)
            finally:
                await provider.aclose()
        out["floor reads"] = floor_reads[-reps:]
        out["ours elsewhere"] = ours_elsewhere[-reps:]
        return out

    return trio.run(main)


def _memory(case: Case, reps: int) -> dict[str, list[float]]:
    pieces = case.events

    def ours() -> float:
        t0 = time.thread_time()
        dec = case.decoder()
        for p in pieces:
            dec.feed(p)
        dec.close()
        return time.thread_time() - t0

    def floor() -> float:
        t0 = time.thread_time()
        floor_memory(pieces)
        return time.thread_time() - t0

    return interleaved(reps, {"ours": ours, "floor": floor})


def _row(name: str, unit: str, ours: float, comparison: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "unit": unit,
        "ours": ours,
        "comparison": comparison,
        "ratio": ours / comparison,
        **extra,
    }


def measure_codec(case: Case, reps: int, memory_reps: int) -> list[dict[str, Any]]:
    """The four rows of tests/bench (names.md) for one stream, plus the extras."""
    n = len(case.events)
    info = {"events": n, "bytes": len(case.body)}
    with ThreadedFakeProvider(default=Reply(fault=RawStream(case.events))) as fake:
        chunked = _loopback(case, fake.base_url, reps, with_sdk=True)
        fake.default = Reply(fault=Raw(case.body, content_type="text/event-stream"))
        bulk = _loopback(case, fake.base_url, reps, with_sdk=False)
    mem = _memory(case, memory_reps)

    def us(xs: list[float]) -> float:
        return median(xs) / n * 1e6

    def rate(xs: list[float]) -> float:
        return n / median(xs)

    rows = [
        _row(
            f"{case.label}stream path CPU per event, {mode}",
            UNIT_STREAM,
            us(got["ours"]),
            us(got["floor"]),
            reps=reps,
            floor_reads_per_event=median(got["floor reads"]) / n,
            ours_other_threads_us=us(got["ours elsewhere"]),
            **info,
        )
        for mode, got in (("chunked", chunked), ("bulk", bulk))
    ]
    rows += [
        _row(
            f"{case.label}decoder vs floor, in memory",
            UNIT_MEMORY,
            us(mem["ours"]),
            us(mem["floor"]),
            reps=memory_reps,
            **info,
        ),
        _row(
            f"{case.label}stream vs official SDK, chunked",
            UNIT_SDK,
            rate(chunked["ours"]),
            rate(chunked["sdk"]),
            reps=reps,
            **info,
        ),
    ]
    for extra in case.extras:
        rows.append(
            _row(
                f"{case.label}{extra.name}, chunked",
                UNIT_SDK,
                rate(chunked[f"ours {extra.name}"]),
                rate(chunked[f"sdk {extra.name}"]),
                reps=reps,
                **info,
            )
        )
    return rows


def print_rows(title: str, rows: list[dict[str, Any]]) -> None:
    print(title)
    print(f"{'name':58} {'ours':>12} {'comparison':>12} {'ratio':>7}  unit")
    for r in rows:
        print(
            f"{r['name']:58} {r['ours']:>12,.2f} {r['comparison']:>12,.2f} {r['ratio']:>6.2f}x"
            f"  {r['unit']}"
        )
