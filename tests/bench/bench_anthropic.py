"""The Anthropic Messages stream path against the floor and the official SDK.

    .venv/bin/python tests/bench/bench_anthropic.py [--reps N] [--text-deltas N] [--json PATH]

A long stream in the recorded payload shapes (thinking deltas and a
signature, a few thousand text deltas, two tool calls streamed as
input_json_delta, pings, usage) is served by the fake provider over
loopback, chunked, one event per write, then as one bulk body, and read by

  ours   make_provider(...).stream, every event consumed
  floor  httpx aiter_raw() + SSE split + msgspec decode (tests/bench/_floor.py)
  SDK    anthropic ``messages.create(stream=True)`` (chunked only)

and, as a further row, our stream folded by providers.accumulate.Accumulator
beside the SDK's ``messages.stream()`` (which accumulates a snapshot). Equal,
interleaved repetitions, medians, CPU of the client thread. In memory: our
pure stream decoder vs the floor, fed one event at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from providers.accumulate import Accumulator  # noqa: E402
from providers.anthropic import AnthropicCodec  # noqa: E402
from providers.http import HttpProvider  # noqa: E402
from providers.registry import make_provider  # noqa: E402
from providers.settings import ProviderSettings, settings_for  # noqa: E402
from providers.types import Message, Request, TextBlock  # noqa: E402
from tests.bench._floor import Case, Extra, measure_codec, print_rows  # noqa: E402

MODEL = "claude-sonnet-4-6"
WORDS = [
    "The",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "résumé-writing",
    "naïve",
    "coöperators",
    "compute",
    "25",
    "\u00d7",
    "37",
    "=",
    "925",
    "and",
    "sum",
    "÷",
    "count;",
    "streaming",
    "tokens",
    "arrive",
    "one",
    "by",
    "one.",
]


def _frame(payload: dict) -> bytes:
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return b"event: " + payload["type"].encode() + b"\ndata: " + data + b"\n\n"


def build_stream(
    text_deltas: int = 3000, thinking_deltas: int = 600, arg_deltas: int = 200
) -> list[bytes]:
    """The SSE events, each framed as the wire sends it."""
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
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 0,
                        "ephemeral_1h_input_tokens": 0,
                    },
                    "output_tokens": 1,
                    "service_tier": "standard",
                },
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {"type": "ping"},
    ]
    for i in range(thinking_deltas):
        events.append(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": " " + WORDS[i % len(WORDS)]},
            }
        )
    events.append(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {
                "type": "signature_delta",
                "signature": "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv/VeJBNbejNWIWRBn+KPNEgz6HWtKx7p+QRgKsEoaDGjsiqfht7gTRFYHiyIwD1VSmNqHxv3wy8KEMP+LYb/TC4UH3H97tuoaADARFFcA0phdfxnzKQxFnc9lwY+dKlzUsaKSUAFeu1bDL5ikZJ1vL0Fkz6JjoFke0L/wOJRIUDUlDUOFJ1tZ3ea7g6LGE/5hwuvWgLwewdcm64d+43l7F57XrOmqNd6flI2K/oPr/4yzNgvi/EhT6Ca17BgB",
            },
        }
    )
    events.append({"type": "content_block_stop", "index": 0})
    events.append(
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}
    )
    for i in range(text_deltas):
        events.append(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": " " + WORDS[i % len(WORDS)]},
            }
        )
        if i % 500 == 499:
            events.append({"type": "ping"})
    events.append({"type": "content_block_stop", "index": 1})
    for block in (2, 3):
        events.append(
            {
                "type": "content_block_start",
                "index": block,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_01KFbKqPYSuAKujiL6mTfzY{block}",
                    "name": "write_file",
                    "input": {},
                },
            }
        )
        events.append(
            {
                "type": "content_block_delta",
                "index": block,
                "delta": {"type": "input_json_delta", "partial_json": ""},
            }
        )
        events.append(
            {
                "type": "content_block_delta",
                "index": block,
                "delta": {
                    "type": "input_json_delta",
                    "partial_json": '{"path": "notes.txt", "content": "',
                },
            }
        )
        for i in range(arg_deltas):
            events.append(
                {
                    "type": "content_block_delta",
                    "index": block,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": WORDS[i % len(WORDS)] + " ",
                    },
                }
            )
        events.append(
            {
                "type": "content_block_delta",
                "index": block,
                "delta": {"type": "input_json_delta", "partial_json": '"}'},
            }
        )
        events.append({"type": "content_block_stop", "index": block})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {
                "input_tokens": 1200,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 4096,
                "output_tokens": 4711,
            },
        }
    )
    events.append({"type": "message_stop"})
    return [_frame(e) for e in events]


REQUEST = Request(model=MODEL, messages=[Message(role="user", content=[TextBlock(text="go")])])


def _settings(base_url: str = "http://127.0.0.1:9") -> ProviderSettings:
    return settings_for("anthropic", env={"ANTHROPIC_API_KEY": "sk-ant-bench"}, base_url=base_url)


def _sdk(fold: bool) -> Callable[[str], Callable[[], int]]:
    def make(base_url: str) -> Callable[[], int]:
        import anthropic

        sdk = anthropic.Anthropic(api_key="sk-ant-bench", base_url=base_url, max_retries=0)
        messages = [{"role": "user", "content": "go"}]

        def raw() -> int:
            with sdk.messages.create(
                model=MODEL, max_tokens=8192, messages=messages, stream=True
            ) as s:  # type: ignore[arg-type]
                return sum(1 for _ in s)

        def folded() -> int:
            with sdk.messages.stream(model=MODEL, max_tokens=8192, messages=messages) as s:  # type: ignore[arg-type]
                n = sum(1 for _ in s)
                s.get_final_message()
            return n

        return folded if fold else raw

    return make


async def ours_folded(provider: HttpProvider) -> None:
    acc = Accumulator(provider="anthropic")
    async with provider.stream(REQUEST) as events:
        async for ev in events:
            acc.feed(ev)
    acc.response()


def case(text_deltas: int) -> Case:
    return Case(
        label="",
        events=build_stream(text_deltas),
        provider=lambda base_url: make_provider(_settings(base_url)),
        request=REQUEST,
        decoder=lambda: AnthropicCodec(_settings()).stream_decoder(REQUEST),
        sdk=_sdk(fold=False),
        extras=[Extra("stream folded vs SDK messages.stream()", ours_folded, _sdk(fold=True))],
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=11, help="repetitions of every contender")
    parser.add_argument("--text-deltas", type=int, default=3000)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    import anthropic

    rows = measure_codec(case(args.text_deltas), args.reps, memory_reps=args.reps * 4)
    print_rows(
        f"anthropic SDK {anthropic.__version__}; medians of {args.reps} interleaved reps", rows
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
