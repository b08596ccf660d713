"""Gemini stream decoding: our adapter beside the official google-genai SDK.

    /work/main/.venv/bin/python tests/bench/bench_google.py [--rounds N] [--json PATH]

One long stream in the recorded generateContent shapes (thought summaries,
thousands of text parts, parallel function calls with thoughtSignatures,
usageMetadata/modelVersion/responseId on every chunk) is served, byte for byte
the same, by the fake provider over loopback to

  (a) google-genai's ``models.generate_content_stream`` (every chunk's parts read),
  (b) our ``HttpProvider.stream`` (every event read),

and decoded in memory by

  (c) our pure ``GeminiStreamDecoder`` (the bytes fed in 64 KiB pieces),
  (d) the floor: ``msgspec.json.decode`` of each payload, no SSE, no normalization.

"events" are the stream's SSE payloads (chunks), the same count for every
row. Each figure is the best of ``--rounds`` runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402
import trio  # noqa: E402

from providers.google._decode import GeminiStreamDecoder  # noqa: E402
from providers.http import HttpProvider  # noqa: E402
from providers.registry import make_provider  # noqa: E402
from providers.settings import settings_for  # noqa: E402
from providers.types import Message, Request, TextBlock, ThinkingConfig  # noqa: E402
from tests.fakes.script import Raw, Reply  # noqa: E402
from tests.fakes.server import ThreadedFakeProvider  # noqa: E402

MODEL = "gemini-3-pro-preview"
RESPONSE_ID = "M3iLaY-AI7zTxN8P3Piw4Qg"
SIGNATURE = (
    "EpAICo0IAb4+9vuku3oDHR5EQSMfPm5IpmH06lgm9aGICNAJKKfpVXU3971qpSGSFiIVb60jKjMU182kVfRyl9bViwRtwI1o4nFI"
    "+BqC+kLUuUaG+hCfQZBYcCiq8rmQK+LQJxRey5s3kXIDNUcpyOk4I2Y/wFpbcnQC/8xzXHo8D0y7eZrayZwAsusgHwcww988h0J"
) * 4
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "strawberries",
    "ripen",
    "in",
    "the",
    "summer",
    "sun",
]


def build_payloads(text_parts: int, thought_parts: int, calls: int) -> list[bytes]:
    payloads: list[dict[str, Any]] = []
    prompt = 1234

    def chunk(parts: list[dict[str, Any]], n: int, **extra: Any) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0, **extra}
        return {
            "candidates": [cand],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": n,
                "totalTokenCount": prompt + n + thought_parts * 4,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
                "thoughtsTokenCount": thought_parts * 4,
            },
            "modelVersion": MODEL,
            "responseId": RESPONSE_ID,
        }

    for i in range(thought_parts):
        words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(6))
        payloads.append(chunk([{"text": f"**Step {i}** {words}. ", "thought": True}], 0))
    for i in range(text_parts):
        words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(5))
        payloads.append(chunk([{"text": f"{words} — «{i}» "}], i * 7))
    fcs = []
    for i in range(calls):
        part: dict[str, Any] = {
            "functionCall": {
                "name": f"tool_{i % 4}",
                "args": {"path": f"/src/file_{i}.py", "line": i, "flags": ["-n", "-i"]},
            }
        }
        if i == 0:
            part["thoughtSignature"] = SIGNATURE
        fcs.append(part)
    payloads.append(chunk(fcs, text_parts * 7))
    payloads.append(
        chunk(
            [{"text": "", "thoughtSignature": SIGNATURE}], text_parts * 7 + 40, finishReason="STOP"
        )
    )
    return [json.dumps(p, ensure_ascii=False, separators=(",", ":")).encode() for p in payloads]


def sse_body(payloads: list[bytes]) -> bytes:
    return b"".join(b"data: " + p + b"\r\n\r\n" for p in payloads)


def best(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# ------------------------------------------------------------------ contenders


def sdk_stream(base_url: str, expected: int) -> Any:
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key="bench-key", http_options=types.HttpOptions(base_url=base_url, api_version="v1beta")
    )

    def run() -> None:
        chunks = texts = calls = 0
        for chunk in client.models.generate_content_stream(model=MODEL, contents="go"):
            chunks += 1
            for part in chunk.candidates[0].content.parts or ():
                if part.function_call is not None:
                    calls += len(part.function_call.args or {})
                elif part.text is not None:
                    texts += len(part.text)
            _ = chunk.usage_metadata
        assert chunks == expected, (chunks, expected)

    return run


def ours_stream(base_url: str) -> Any:
    settings = settings_for(
        "google", env={"GEMINI_API_KEY": "bench-key"}, base_url=base_url + "/v1beta"
    )
    request = Request(
        model=MODEL,
        messages=[Message(role="user", content=[TextBlock(text="go")])],
        thinking=ThinkingConfig(level="high"),
    )

    async def main() -> int:
        provider: HttpProvider = make_provider(settings)
        n = 0
        try:
            async with provider.stream(request) as events:
                async for _event in events:
                    n += 1
        finally:
            await provider.aclose()
        return n

    def run() -> None:
        n = trio.run(main)
        assert n > 0

    return run


def ours_decoder(body: bytes) -> Any:
    pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)]

    def run() -> None:
        dec = GeminiStreamDecoder()
        n = 0
        for piece in pieces:
            n += len(dec.feed(piece))
        n += len(dec.close())
        assert n > 0

    return run


def floor(payloads: list[bytes]) -> Any:
    decode = msgspec.json.decode

    def run() -> None:
        for p in payloads:
            decode(p)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--text-parts", type=int, default=3000)
    parser.add_argument("--thought-parts", type=int, default=400)
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args()

    payloads = build_payloads(args.text_parts, args.thought_parts, args.calls)
    body = sse_body(payloads)
    events = len(payloads)
    with ThreadedFakeProvider(
        default=Reply(fault=Raw(body, content_type="text/event-stream"))
    ) as fake:
        t_sdk = best(sdk_stream(fake.base_url, events), args.rounds)
        t_ours = best(ours_stream(fake.base_url), args.rounds)
    t_dec = best(ours_decoder(body), args.rounds)
    t_floor = best(floor(payloads), args.rounds)

    rows = [
        ("HTTP stream over loopback (vs google-genai SDK)", events / t_ours, events / t_sdk),
        ("decoder in memory (vs msgspec floor)", events / t_dec, events / t_floor),
    ]
    print(f"stream: {events} chunks, {len(body) / 1e6:.2f} MB, best of {args.rounds} rounds")
    print(f"{'name':<50} {'events/s ours':>15} {'events/s comparison':>20} {'ratio':>7}")
    for name, ours, other in rows:
        print(f"{name:<50} {ours:>15,.0f} {other:>20,.0f} {ours / other:>6.2f}x")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "events": events,
                    "bytes": len(body),
                    "rounds": args.rounds,
                    "seconds": {
                        "sdk_stream": t_sdk,
                        "ours_stream": t_ours,
                        "ours_decoder": t_dec,
                        "msgspec_floor": t_floor,
                    },
                    "rows": [
                        {
                            "name": n,
                            "events_per_s_ours": o,
                            "events_per_s_comparison": c,
                            "ratio": o / c,
                        }
                        for n, o, c in rows
                    ],
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
