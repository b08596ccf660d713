"""The OpenAI stream paths (Chat Completions, Responses) against the floor and the SDK.

    .venv/bin/python tests/bench/bench_openai.py [--reps N] [--json PATH]

For each API a long stream in the recorded payload shapes (thousands of text
deltas, reasoning, a tool call with its arguments in pieces, usage) is served
by the fake provider over loopback, chunked, one event per write (as real
providers flush), then again as one bulk body, and read by

  ours   make_provider(...).stream, every event consumed
  floor  httpx aiter_raw() + SSE split + msgspec decode (tests/bench/_floor.py)
  SDK    the official ``openai`` streaming client (chunked only)

in interleaved, equal repetitions (medians; CPU of the client thread, the
server thread not counted), and decoded in memory, fed per event, by our pure
stream decoder and the floor. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from providers.openai.chat import ChatCodec  # noqa: E402
from providers.openai.responses import ResponsesCodec  # noqa: E402
from providers.registry import make_provider  # noqa: E402
from providers.settings import ProviderSettings, settings_for  # noqa: E402
from providers.types import Message, Request, TextBlock  # noqa: E402
from tests.bench._floor import Case, measure_codec, print_rows  # noqa: E402

TEXT_DELTAS = 1600
THINKING_DELTAS = 400
ARG_DELTAS = 200
WORDS = [
    "The",
    " quick",
    " brown",
    " fox",
    " jumps",
    " over",
    " the",
    " lazy",
    " dog",
    ".",
    " “Ω”",
    "\n\n",
]


def _sse(obj: dict, event: str | None = None) -> bytes:
    data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    return (f"event: {event}\n".encode() if event else b"") + b"data: " + data + b"\n\n"


def chat_stream() -> list[bytes]:
    """A gpt-4.1-style chunk stream (shapes of tests/fixtures/recorded/openai/openai-text.chunks.txt)."""
    head = {
        "id": "chatcmpl-D8Z5oo6uDh67AD85p73ksdT1KxhE0",
        "object": "chat.completion.chunk",
        "created": 1770933892,
        "model": "gpt-4.1-nano-2025-04-14",
        "service_tier": "default",
        "system_fingerprint": "fp_de604bd877",
    }

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return _sse(
            {
                **head,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
                "usage": None,
                "obfuscation": "yhjoJbEF",
            }
        )

    parts = [chunk({"role": "assistant", "content": "", "refusal": None})]
    parts += [
        chunk({"content": None, "reasoning_content": WORDS[i % len(WORDS)]})
        for i in range(THINKING_DELTAS)
    ]
    parts += [chunk({"content": WORDS[i % len(WORDS)]}) for i in range(TEXT_DELTAS)]
    parts.append(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_bench",
                        "type": "function",
                        "function": {"name": "search", "arguments": ""},
                    }
                ]
            }
        )
    )
    parts += [
        chunk(
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"q":"x' if i == 0 else "y"}}]}
        )
        for i in range(ARG_DELTAS)
    ]
    parts.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}))
    parts.append(chunk({}, "tool_calls"))
    usage = {
        "prompt_tokens": 16,
        "completion_tokens": 5000,
        "total_tokens": 5016,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 600, "audio_tokens": 0},
    }
    parts.append(_sse({**head, "choices": [], "usage": usage, "obfuscation": "h9RiQLL"}))
    parts.append(b"data: [DONE]\n\n")
    return parts


def responses_stream() -> list[bytes]:
    """A gpt-5-style event stream (shapes of openai-reasoning-encrypted-content.1.chunks.txt)."""
    parts: list[bytes] = []
    seq = 0

    def emit(kind: str, **fields: object) -> None:
        nonlocal seq
        parts.append(_sse({"type": kind, "sequence_number": seq, **fields}, kind))
        seq += 1

    resp = {
        "id": "resp_bench",
        "object": "response",
        "created_at": 1765552659,
        "status": "in_progress",
        "model": "gpt-5.1-codex-max",
        "output": [],
        "parallel_tool_calls": True,
        "reasoning": {"effort": "high", "summary": "detailed"},
        "store": False,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
        "metadata": {},
    }
    emit("response.created", response=resp)
    emit("response.in_progress", response=resp)
    rs = "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9"
    emit(
        "response.output_item.added",
        output_index=0,
        item={"id": rs, "type": "reasoning", "summary": []},
    )
    emit(
        "response.reasoning_summary_part.added",
        item_id=rs,
        output_index=0,
        summary_index=0,
        part={"type": "summary_text", "text": ""},
    )
    for i in range(THINKING_DELTAS):
        emit(
            "response.reasoning_summary_text.delta",
            item_id=rs,
            output_index=0,
            summary_index=0,
            delta=WORDS[i % len(WORDS)],
        )
    enc = "gAAAAABpPDIV" + "x" * 2000
    emit(
        "response.output_item.done",
        output_index=0,
        item={
            "id": rs,
            "type": "reasoning",
            "encrypted_content": enc,
            "summary": [{"type": "summary_text", "text": "..."}],
        },
    )
    msg = "msg_01830d662ab3856501693c32183a488190a612c410a0a39823"
    emit(
        "response.output_item.added",
        output_index=1,
        item={
            "id": msg,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        },
    )
    emit(
        "response.content_part.added",
        item_id=msg,
        output_index=1,
        content_index=0,
        part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
    )
    for i in range(TEXT_DELTAS):
        emit(
            "response.output_text.delta",
            item_id=msg,
            output_index=1,
            content_index=0,
            delta=WORDS[i % len(WORDS)],
            logprobs=[],
        )
    emit(
        "response.output_text.done",
        item_id=msg,
        output_index=1,
        content_index=0,
        text="...",
        logprobs=[],
    )
    emit(
        "response.output_item.done",
        output_index=1,
        item={
            "id": msg,
            "type": "message",
            "status": "completed",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": "..."}],
            "role": "assistant",
        },
    )
    fc = "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f"
    emit(
        "response.output_item.added",
        output_index=2,
        item={
            "id": fc,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": "call_bench",
            "name": "search",
        },
    )
    for i in range(ARG_DELTAS):
        emit(
            "response.function_call_arguments.delta",
            item_id=fc,
            output_index=2,
            delta='{"q":"x' if i == 0 else "y",
        )
    emit("response.function_call_arguments.delta", item_id=fc, output_index=2, delta='"}')
    args = '{"q":"x' + "y" * (ARG_DELTAS - 1) + '"}'
    emit("response.function_call_arguments.done", item_id=fc, output_index=2, arguments=args)
    emit(
        "response.output_item.done",
        output_index=2,
        item={
            "id": fc,
            "type": "function_call",
            "status": "completed",
            "arguments": args,
            "call_id": "call_bench",
            "name": "search",
        },
    )
    usage = {
        "input_tokens": 134,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5000,
        "output_tokens_details": {"reasoning_tokens": 600},
        "total_tokens": 5134,
    }
    emit("response.completed", response={**resp, "status": "completed", "usage": usage})
    return parts


REQUEST_CHAT = Request(
    model="gpt-4.1-nano", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)
REQUEST_RESP = Request(
    model="gpt-5", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)


def _settings(api: str, base_url: str = "http://127.0.0.1:9") -> ProviderSettings:
    return settings_for(
        "openai", env={"OPENAI_API_KEY": "sk-bench"}, base_url=base_url + "/v1", api=api
    )


def _sdk(api: str) -> Callable[[str], Callable[[], int]]:
    def make(base_url: str) -> Callable[[], int]:
        import openai

        client = openai.OpenAI(base_url=base_url + "/v1", api_key="sk-bench", max_retries=0)

        def once() -> int:
            if api == "chat":
                stream: Any = client.chat.completions.create(
                    model="gpt-4.1-nano", messages=[{"role": "user", "content": "hi"}], stream=True
                )
            else:
                stream = client.responses.create(model="gpt-5", input="hi", stream=True)
            return sum(1 for _event in stream)

        return once

    return make


def case(api: str) -> Case:
    events = chat_stream() if api == "chat" else responses_stream()
    request = REQUEST_CHAT if api == "chat" else REQUEST_RESP
    codec_type = ChatCodec if api == "chat" else ResponsesCodec
    return Case(
        label=f"{api}: ",
        events=events,
        provider=lambda base_url: make_provider(_settings(api, base_url)),
        request=request,
        decoder=lambda: codec_type(_settings(api)).stream_decoder(request),
        sdk=_sdk(api),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=15, help="repetitions of every contender")
    parser.add_argument("--json", metavar="PATH", help="also write the rows here")
    args = parser.parse_args()

    import openai

    rows = []
    for api in ("chat", "responses"):
        rows += measure_codec(case(api), args.reps, memory_reps=args.reps * 4)
    print_rows(f"openai SDK {openai.__version__}; medians of {args.reps} interleaved reps", rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
