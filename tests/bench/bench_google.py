"""The Gemini stream path against the floor and the official google-genai SDK.

    .venv/bin/python tests/bench/bench_google.py [--reps N] [--text-parts N] [--json PATH]

One long stream in the recorded generateContent shapes (thought summaries,
thousands of text parts, parallel function calls with thoughtSignatures,
usageMetadata/modelVersion/responseId on every chunk, CRLF line ends) is
served by the fake provider over loopback, chunked, one event per write, then
as one bulk body, and read by

  ours   make_provider(...).stream, every event consumed
  floor  httpx aiter_raw() + SSE split + msgspec decode (tests/bench/_floor.py)
  SDK    google-genai ``models.generate_content_stream``, every chunk's parts read

in equal, interleaved repetitions (medians, CPU of the client thread), and
decoded in memory, one event at a time, by our pure GeminiStreamDecoder and
the floor.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from providers.google._decode import GeminiStreamDecoder  # noqa: E402
from providers.registry import make_provider  # noqa: E402
from providers.settings import settings_for  # noqa: E402
from providers.types import Message, Request, TextBlock, ThinkingConfig  # noqa: E402
from tests.bench._floor import Case, measure_codec, print_rows  # noqa: E402

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


def sse_events(payloads: list[bytes]) -> list[bytes]:
    return [b"data: " + p + b"\r\n\r\n" for p in payloads]


REQUEST = Request(
    model=MODEL,
    messages=[Message(role="user", content=[TextBlock(text="go")])],
    thinking=ThinkingConfig(level="high"),
)


def sdk_stream(base_url: str) -> Callable[[], int]:
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key="bench-key", http_options=types.HttpOptions(base_url=base_url, api_version="v1beta")
    )

    def run() -> int:
        chunks = texts = calls = 0
        for chunk in client.models.generate_content_stream(model=MODEL, contents="go"):
            chunks += 1
            for part in chunk.candidates[0].content.parts or ():  # type: ignore[index, union-attr]
                if part.function_call is not None:
                    calls += len(part.function_call.args or {})
                elif part.text is not None:
                    texts += len(part.text)
            _ = chunk.usage_metadata
        return chunks

    return run


def case(text_parts: int, thought_parts: int, calls: int) -> Case:
    def provider(base_url: str) -> Any:
        settings = settings_for(
            "google", env={"GEMINI_API_KEY": "bench-key"}, base_url=base_url + "/v1beta"
        )
        return make_provider(settings)

    return Case(
        label="",
        events=sse_events(build_payloads(text_parts, thought_parts, calls)),
        provider=provider,
        request=REQUEST,
        decoder=GeminiStreamDecoder,
        sdk=sdk_stream,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=9, help="repetitions of every contender")
    parser.add_argument("--text-parts", type=int, default=3000)
    parser.add_argument("--thought-parts", type=int, default=400)
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--json", metavar="PATH", help="also write the rows here")
    args = parser.parse_args()

    from google import genai

    c = case(args.text_parts, args.thought_parts, args.calls)
    rows = measure_codec(c, args.reps, memory_reps=args.reps * 4)
    print_rows(f"google-genai {genai.__version__}; medians of {args.reps} interleaved reps", rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
