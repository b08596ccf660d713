"""Decode throughput of the OpenAI adapters beside the official ``openai`` SDK.

    /work/main/.venv/bin/python tests/bench/bench_openai.py [--rounds N] [--json PATH]

For each API (Chat Completions, Responses) a long stream in the recorded
payload shapes (thousands of text deltas, reasoning, a tool call with its
arguments in pieces, usage) is served as the SAME bytes over loopback by the
fake provider, and consumed event by event by

  (a) the official SDK's streaming client,
  (b) our HttpProvider.stream (httpx + codec),

and, in memory, by

  (c) our pure stream decoder,
  (d) the floor: msgspec.json.decode of each payload, nothing else.

Rates are SSE events per second (the same count for every row); the best of
a few rounds is kept. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from providers.registry import make_provider  # noqa: E402
from providers.settings import settings_for  # noqa: E402
from providers.sse import SSEDecoder  # noqa: E402
from providers.types import Message, Request, TextBlock  # noqa: E402
from tests.fakes.script import Raw, Reply  # noqa: E402
from tests.fakes.server import ThreadedFakeProvider  # noqa: E402

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


def chat_stream() -> tuple[bytes, int]:
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
    return b"".join(parts), len(parts)


def responses_stream() -> tuple[bytes, int]:
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
    return b"".join(parts), len(parts)


REQUEST_CHAT = Request(
    model="gpt-4.1-nano", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)
REQUEST_RESP = Request(
    model="gpt-5", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)


def best(fn: Callable[[], int], rounds: int) -> float:
    """The shortest time of ``rounds`` runs (fn returns how many items it consumed)."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def sdk_best(base_url: str, api: str, rounds: int) -> float:
    """Best time of one streamed call through the SDK (one client, reused; first call warms up)."""
    import openai

    client = openai.OpenAI(base_url=base_url + "/v1", api_key="sk-bench", max_retries=0)

    def once() -> int:
        if api == "chat":
            stream = client.chat.completions.create(
                model="gpt-4.1-nano", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        else:
            stream = client.responses.create(model="gpt-5", input="hi", stream=True)
        return sum(1 for _event in stream)

    once()
    t = best(once, rounds)
    client.close()
    return t


def ours_best(base_url: str, api: str, rounds: int) -> float:
    """Best time of one streamed call through HttpProvider (one provider, reused; first call warms up)."""
    settings = settings_for(
        "openai", env={"OPENAI_API_KEY": "sk-bench"}, base_url=base_url + "/v1", api=api
    )
    request = REQUEST_CHAT if api == "chat" else REQUEST_RESP

    async def main() -> float:
        provider = make_provider(settings)

        async def once() -> int:
            n = 0
            async with provider.stream(request) as events:
                async for _event in events:
                    n += 1
            return n

        await once()
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            await once()
            times.append(time.perf_counter() - t0)
        await provider.aclose()
        return min(times)

    return trio.run(main)


def decoder_run(body: bytes, api: str) -> int:
    from providers.openai.chat import ChatCodec
    from providers.openai.responses import ResponsesCodec

    settings = settings_for("openai", env={"OPENAI_API_KEY": "sk-bench"}, api=api)
    codec = ChatCodec(settings) if api == "chat" else ResponsesCodec(settings)
    decoder = codec.stream_decoder(REQUEST_CHAT if api == "chat" else REQUEST_RESP)
    n = 0
    for i in range(0, len(body), 16384):  # network-sized reads
        n += len(decoder.feed(body[i : i + 16384]))
    return n + len(decoder.close())


def floor_run(body: bytes) -> int:
    decode = msgspec.json.decode
    n = 0
    for ev in SSEDecoder().feed(body):
        if ev.data != "[DONE]":
            decode(ev.data)
        n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the numbers here")
    args = parser.parse_args()

    rows = []
    for api, (body, count) in (("chat", chat_stream()), ("responses", responses_stream())):
        with ThreadedFakeProvider(
            default=Reply(fault=Raw(body, content_type="text/event-stream"))
        ) as fake:
            t_sdk = sdk_best(fake.base_url, api, args.rounds)
            # ours is cheap: more rounds make its best less noisy
            t_ours = ours_best(fake.base_url, api, args.rounds * 3)
        t_dec = best(lambda body=body, api=api: decoder_run(body, api), args.rounds * 10)
        t_floor = best(lambda body=body: floor_run(body), args.rounds * 10)
        rows.append(
            {
                "name": f"{api}: HTTP stream, ours vs openai SDK",
                "events": count,
                "bytes": len(body),
                "ours": count / t_ours,
                "comparison": count / t_sdk,
            }
        )
        rows.append(
            {
                "name": f"{api}: decoder in memory, ours vs msgspec floor",
                "events": count,
                "bytes": len(body),
                "ours": count / t_dec,
                "comparison": count / t_floor,
            }
        )
    import openai

    print(
        f"openai SDK {openai.__version__}; best of {args.rounds} rounds (SDK) / more for ours; "
        "rates in SSE events/s"
    )
    print(f"{'name':52} {'events':>7} {'ours ev/s':>12} {'other ev/s':>12} {'ratio':>7}")
    for r in rows:
        r["ratio"] = r["ours"] / r["comparison"]
        print(
            f"{r['name']:52} {r['events']:>7} {r['ours']:>12,.0f} {r['comparison']:>12,.0f} {r['ratio']:>6.2f}x"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"sdk": openai.__version__, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
