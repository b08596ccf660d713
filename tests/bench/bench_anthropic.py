"""Benchmark: decoding an Anthropic Messages stream, ours beside the official SDK.

    /work/main/.venv/bin/python tests/bench/bench_anthropic.py [--rounds N] [--json PATH]

Builds a long stream in the recorded payload shapes (thinking deltas and a
signature, a few thousand text deltas, two tool calls streamed as
input_json_delta, pings, usage), serves the SAME bytes over loopback from the
fake provider (Raw fault: exact body), and times:

  (a) anthropic SDK  client.messages.create(stream=True), every event consumed
  (b) ours           HttpProvider.stream, every event consumed
  (c) ours           the pure stream decoder on the same bytes in memory
  (d) floor          msgspec.json.decode of each payload, no SSE, no normalization
  (e) anthropic SDK  client.messages.stream() (accumulates a snapshot), beside
                     (b) folded with providers.accumulate.Accumulator

Each is run a few rounds and the best is kept. Rates are SSE events per
second over the same body (the SDK hides pings; they still count).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402
import httpx  # noqa: E402
import msgspec  # noqa: E402
import trio  # noqa: E402

from providers.accumulate import Accumulator  # noqa: E402
from providers.anthropic import AnthropicCodec  # noqa: E402
from providers.http import HttpProvider  # noqa: E402
from providers.settings import settings_for  # noqa: E402
from providers.types import Message, Request, TextBlock  # noqa: E402
from tests.fakes.script import Raw, Reply  # noqa: E402
from tests.fakes.server import ThreadedFakeProvider  # noqa: E402

MODEL = "claude-sonnet-4-6"
WORDS = ["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "résumé-writing", "naïve", "coöperators", "compute", "25", "\u00d7", "37", "=", "925", "and", "sum", "÷", "count;", "streaming", "tokens", "arrive", "one", "by", "one."]


def _frame(payload: dict) -> bytes:
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return b"event: " + payload["type"].encode() + b"\ndata: " + data + b"\n\n"


def build_stream(text_deltas: int = 3000, thinking_deltas: int = 600, arg_deltas: int = 200) -> tuple[bytes, int]:
    """(body, number of SSE events)."""
    events: list[dict] = [
        {
            "type": "message_start",
            "message": {
                "model": MODEL,
                "id": "msg_01QC4g3HwBThD4BaNtBckFDJ",
                "type": "message",
                "role": "assistant",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 1200,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 4096,
                    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                    "output_tokens": 1,
                    "service_tier": "standard",
                },
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "ping"},
    ]
    for i in range(thinking_deltas):
        events.append({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": " " + WORDS[i % len(WORDS)]}})
    events.append({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv/VeJBNbejNWIWRBn+KPNEgz6HWtKx7p+QRgKsEoaDGjsiqfht7gTRFYHiyIwD1VSmNqHxv3wy8KEMP+LYb/TC4UH3H97tuoaADARFFcA0phdfxnzKQxFnc9lwY+dKlzUsaKSUAFeu1bDL5ikZJ1vL0Fkz6JjoFke0L/wOJRIUDUlDUOFJ1tZ3ea7g6LGE/5hwuvWgLwewdcm64d+43l7F57XrOmqNd6flI2K/oPr/4yzNgvi/EhT6Ca17BgB"}})
    events.append({"type": "content_block_stop", "index": 0})
    events.append({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    for i in range(text_deltas):
        events.append({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " " + WORDS[i % len(WORDS)]}})
        if i % 500 == 499:
            events.append({"type": "ping"})
    events.append({"type": "content_block_stop", "index": 1})
    for block in (2, 3):
        events.append(
            {
                "type": "content_block_start",
                "index": block,
                "content_block": {"type": "tool_use", "id": f"toolu_01KFbKqPYSuAKujiL6mTfzY{block}", "name": "write_file", "input": {}},
            }
        )
        events.append({"type": "content_block_delta", "index": block, "delta": {"type": "input_json_delta", "partial_json": ""}})
        events.append({"type": "content_block_delta", "index": block, "delta": {"type": "input_json_delta", "partial_json": '{"path": "notes.txt", "content": "'}})
        for i in range(arg_deltas):
            events.append({"type": "content_block_delta", "index": block, "delta": {"type": "input_json_delta", "partial_json": WORDS[i % len(WORDS)] + " "}})
        events.append({"type": "content_block_delta", "index": block, "delta": {"type": "input_json_delta", "partial_json": '"}'}})
        events.append({"type": "content_block_stop", "index": block})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4096, "output_tokens": 4711},
        }
    )
    events.append({"type": "message_stop"})
    return b"".join(_frame(e) for e in events), len(events)


def best(fn: Callable[[], int], rounds: int) -> tuple[float, int]:
    """(best seconds, what fn counted)."""
    times, count = [], 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        count = fn()
        times.append(time.perf_counter() - t0)
    return min(times), count


REQUEST = Request(model=MODEL, messages=[Message(role="user", content=[TextBlock(text="go")])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--text-deltas", type=int, default=3000)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    body, n_events = build_stream(args.text_deltas)
    payloads = [
        line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")
    ]
    reply = Reply(fault=Raw(body, content_type="text/event-stream"))

    with ThreadedFakeProvider(default=reply) as fake:
        settings = settings_for("anthropic", env={"ANTHROPIC_API_KEY": "sk-ant-bench"}, base_url=fake.base_url)
        codec = AnthropicCodec(settings)

        sdk = anthropic.Anthropic(api_key="sk-ant-bench", base_url=fake.base_url, max_retries=0)

        def sdk_raw() -> int:
            n = 0
            with sdk.messages.create(
                model=MODEL, max_tokens=8192, messages=[{"role": "user", "content": "go"}], stream=True
            ) as s:
                for _ in s:
                    n += 1
            return n

        def sdk_accumulate() -> int:
            n = 0
            with sdk.messages.stream(model=MODEL, max_tokens=8192, messages=[{"role": "user", "content": "go"}]) as s:
                for _ in s:
                    n += 1
                s.get_final_message()
            return n

        def ours_http(fold: bool, rounds: int) -> tuple[float, int]:
            """Best of ``rounds`` streams inside one trio run, over one client (as the SDK's)."""

            async def run() -> tuple[float, int]:
                times, n = [], 0
                async with httpx.AsyncClient() as client:
                    provider = HttpProvider(codec, settings, client=client)
                    for _ in range(rounds + 1):  # the first one warms the connection up
                        t0 = time.perf_counter()
                        n = 0
                        acc = Accumulator(provider="anthropic")
                        async with provider.stream(REQUEST) as events:
                            async for ev in events:
                                n += 1
                                if fold:
                                    acc.feed(ev)
                        if fold:
                            acc.response()
                        times.append(time.perf_counter() - t0)
                return min(times[1:]), n

            return trio.run(run)

        def ours_memory() -> int:
            dec = codec.stream_decoder(REQUEST)
            n = 0
            for i in range(0, len(body), 65536):
                n += len(dec.feed(body[i : i + 65536]))
            return n + len(dec.close())

        def floor() -> int:
            decode = msgspec.json.decode
            for p in payloads:
                decode(p)
            return len(payloads)

        sdk_raw()  # warm up connections and imports
        rows = []
        t_sdk, c_sdk = best(sdk_raw, args.rounds)
        t_ours, c_ours = ours_http(False, args.rounds)
        rows.append(("loopback stream (b) vs SDK create(stream=True) (a)", t_ours, t_sdk, c_ours, c_sdk))
        t_mem, c_mem = best(ours_memory, args.rounds * 3)
        t_floor, c_floor = best(floor, args.rounds * 3)
        rows.append(("in-memory decoder (c) vs msgspec floor (d)", t_mem, t_floor, c_mem, c_floor))
        t_sdk_acc, c_sdk_acc = best(sdk_accumulate, max(2, args.rounds // 2))
        t_acc, c_acc = ours_http(True, max(2, args.rounds // 2))
        rows.append(("loopback + fold (b+Accumulator) vs SDK messages.stream() (e)", t_acc, t_sdk_acc, c_acc, c_sdk_acc))

    print(f"stream: {len(body):,} bytes, {n_events:,} SSE events; best of {args.rounds} rounds")
    print(f"{'name':64} {'events/s ours':>14} {'events/s comp.':>15} {'ratio':>7}")
    results = []
    for name, t_a, t_b, c_a, c_b in rows:
        ours_rate, comp_rate = n_events / t_a, n_events / t_b
        print(f"{name:64} {ours_rate:14,.0f} {comp_rate:15,.0f} {ours_rate / comp_rate:6.2f}x")
        results.append(
            {
                "name": name,
                "events_per_s_ours": ours_rate,
                "events_per_s_comparison": comp_rate,
                "ratio": ours_rate / comp_rate,
                "seconds_ours": t_a,
                "seconds_comparison": t_b,
                "items_ours": c_a,
                "items_comparison": c_b,
            }
        )
    if args.json:
        args.json.write_text(json.dumps({"bytes": len(body), "sse_events": n_events, "rounds": args.rounds, "results": results}, indent=2))


if __name__ == "__main__":
    main()
