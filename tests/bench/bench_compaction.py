"""Context compaction (issue 16), measured side by side with a floor in the same run.

    .venv/bin/python tests/bench/bench_compaction.py [--rounds 9] [--checks 200] [--json PATH]

An agent's stored context is ~100,000 tokens by ikigai's estimate (about 500
turns of prompts and answers, every fourth with a tool call and its result),
written straight into a real SQLite file; the fake provider answers over
loopback (a summary request gets ~1,500 tokens of text in 300 deltas, as a
real provider streams it; any other request a short answer).

  compact, 128k window     Supervisor.compact(agent) wall time: replay,
                           estimate, cut, transcript, summary call(s), the
                           compaction row, the context reloaded. Floor: the
                           same summary request(s), built beforehand with
                           agents.compaction, sent straight to the provider and
                           read to the end (strictly less work). Each round
                           compacts a fresh agent with the same history.
  compact, 32k summary     the same, the summary written by a model with a 32k
  window                   window (context.summary_model): several calls
  tokens after / before    the context's tokens after compaction beside before
                           (CompactOutcome, ikigai's estimate)
  summary input            input tokens of the summary calls as the fake
                           counts them (tests/fakes/window.py), and the calls
  size check per call      Turn._fitted (request build, meter, budget compare)
                           on a 100k context already measured once, one message
                           appended; beside one complete model call of that
                           request over loopback (a short answer)
  cold size check          the same check when no message was measured yet
                           (every message estimated), beside the same call
  replay per call, N       what precedes every model call's request: the
  messages                 context converted for the provider, its tool
                           results cut, its size estimated (ContextMeter.prepared
                           and raw), one message appended since the last call,
                           at 100 and 10,000 messages; beside the whole walk
                           (for_provider, bound_results, the meter's sum of
                           cached sizes) of the same context. Kept replays at
                           both sizes interleaved, and whole walks likewise

Medians over equal repetitions, ours and the floor interleaved. Not a test:
nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents import AgentConfig, AsyncStore, ProviderPool, RetryPolicy, Supervisor, compaction  # noqa: E402
from agents.compactor import budget_of  # noqa: E402
from agents.context import bound_results, for_provider  # noqa: E402
from agents.meter import ContextMeter  # noqa: E402
from agents.tools import ToolRegistry, builtin_tools  # noqa: E402
from agents.turn import Turn  # noqa: E402
from providers.catalog import Catalog, load_catalog  # noqa: E402
from providers.settings import settings_for  # noqa: E402
from providers.tokens import estimate_message  # noqa: E402
from providers.types import Message, Request, TextBlock, ToolCallBlock, ToolResultBlock  # noqa: E402
from store import Entry, Store  # noqa: E402
from tests.bench._measure import interleaved  # noqa: E402
from tests.fakes.recorded import RecordedRequest  # noqa: E402
from tests.fakes.script import Reply  # noqa: E402
from tests.fakes.server import FakeProvider  # noqa: E402
from tests.fakes.window import fake_tokens  # noqa: E402

PROVIDER = "anthropic"
MODEL = "claude-sonnet-4-5"
SUMMARY_MODEL = "claude-haiku-4-5"
SUMMARY_MARK = "You compact the history"
CONTEXT_TOKENS = 100_000
SYSTEM = "You are a careful software engineer working in the user's repository. " * 4

_VOCABULARY = (
    "the agent reads config file module test function daemon socket store replay request provider "
    "model window token summary history prompt answer error retry stream event tool result bash "
    "grep path line commit branch build check value field table row index cache limit budget "
    "estimate compact turn user assistant message context python trio httpx sqlite json schema "
    "parse encode decode write read open close start stop run wait send receive count size"
)
_WORDS = _VOCABULARY.split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def history(target: int) -> list[Entry]:
    """Turns of a working session until ikigai's estimate reaches ``target`` tokens."""
    rng = random.Random(16)
    entries: list[Entry] = []
    total = 0
    turn = 0
    while total < target:
        msgs: list[tuple[str, Message]] = [
            (
                "user",
                Message(role="user", content=[TextBlock(text=_text(rng, rng.randint(10, 40)))]),
            )
        ]
        if turn % 4 == 3:  # a tool call, its result, the answer
            call = ToolCallBlock(
                id=f"toolu_{turn:06d}",
                name="bash",
                arguments={
                    "command": f"grep -rn {rng.choice(_WORDS)} src/ | head -{rng.randint(20, 80)}"
                },
            )
            msgs.append(
                (
                    "assistant",
                    Message(
                        role="assistant",
                        content=[TextBlock(text=_text(rng, 15)), call],
                        provider=PROVIDER,
                        model=MODEL,
                    ),
                )
            )
            output = "\n".join(
                f"src/{rng.choice(_WORDS)}.py:{rng.randint(1, 900)}: {_text(rng, 10)}"
                for _ in range(rng.randint(5, 20))
            )
            msgs.append(
                (
                    "tool_result",
                    Message(
                        role="tool",
                        content=[
                            ToolResultBlock(tool_call_id=call.id, content=output, name="bash")
                        ],
                    ),
                )
            )
        msgs.append(
            (
                "assistant",
                Message(
                    role="assistant",
                    content=[TextBlock(text=_text(rng, rng.randint(20, 70)))],
                    provider=PROVIDER,
                    model=MODEL,
                ),
            )
        )
        for kind, msg in msgs:
            entries.append(Entry(kind=kind, message=msg))
            total += estimate_message(msg)
        turn += 1
    return entries


SUMMARY = " ".join(
    f"[{i}] The user asked about the {w} module; the agent read src/{w}.py, ran the tests and fixed the {w} limit."
    for i, w in enumerate(_WORDS * 2)
)[:6000]  # ~1,500 tokens


def responder(req: RecordedRequest) -> Reply:
    if SUMMARY_MARK in req.body.decode("utf-8", "replace"):
        return Reply(text=SUMMARY, pieces=300)
    return Reply(text="Done: the change is in place and the tests pass.", pieces=8)


def _settings(fake: FakeProvider) -> Callable[[str], Any]:
    return lambda name: settings_for(
        name, env={"ANTHROPIC_API_KEY": "bench"}, base_url=fake.base_url, read_timeout=60
    )


class Bench:
    """A supervisor on a real SQLite file, its agents filled with the same history."""

    def __init__(
        self, nursery: trio.Nursery, fake: FakeProvider, catalog: Catalog, config: AgentConfig
    ) -> None:
        self.nursery, self.fake, self.catalog, self.config = nursery, fake, catalog, config
        self.tmp = Path(tempfile.mkdtemp(prefix="ikbench-compact-"))
        self.store = Store(f"sqlite:///{self.tmp / 'c.db'}")
        self.pool = ProviderPool(catalog=catalog, settings=_settings(fake))
        self.tools = ToolRegistry(builtin_tools())
        self.sup = Supervisor(AsyncStore(self.store), self.pool, self.tools, self.config)

    async def start(self) -> Supervisor:
        await self.nursery.start(self.sup.run)
        return self.sup

    async def agent(self, entries: list[Entry]) -> str:
        rec, _, _ = await self.sup.create(model=MODEL, system=SYSTEM)
        self.store.append_many(rec.uuid, entries)
        actor = await self.sup.live(rec.uuid)
        await actor.context()  # its one-time check for a dangling turn, not what is measured
        return rec.uuid

    async def aclose(self) -> None:
        await self.pool.aclose()
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


async def send(pool: ProviderPool, request: Request, model: str) -> None:
    async with pool.get(PROVIDER, model).stream(request) as events:
        async for _ev in events:
            pass


def floor_requests(bench: Bench, messages: list[Message], summary_model: str) -> list[Request]:
    """The summary requests Compactor._summarize sends for ``messages`` (the
    part it compacts), built with the same pure functions (agents.compaction)."""
    meter = ContextMeter()
    sizes = meter.sizes(messages)
    budget = budget_of(
        bench.catalog,
        PROVIDER,
        summary_model,
        bench.config.max_output_tokens,
        bench.config.compact_at,
        meter,
    )
    # the agent has made no call yet: the compactor sizes parts for an uncalibrated summarizer
    room, cap = compaction.summary_parts(budget, compaction.UNCALIBRATED_RATIO)
    out: list[Request] = []
    previous: str | None = None
    for part in compaction.chunks(messages, sizes, room):
        text = compaction.fit_text(compaction.transcript(part), room)
        out.append(
            compaction.summary_request(
                summary_model, text, previous=previous, max_output_tokens=cap
            )
        )
        previous = SUMMARY.strip()
    return out


async def compact_rows(
    rounds: int, entries: list[Entry], size: str, label: str, summary_window: int | None
) -> list[dict]:
    catalog = load_catalog()
    catalog.set_limits(PROVIDER, MODEL, context_window=128_000)
    summary_model = MODEL
    if summary_window is not None:
        summary_model = SUMMARY_MODEL
        catalog.set_limits(PROVIDER, SUMMARY_MODEL, context_window=summary_window)
    config = AgentConfig(
        retry=RetryPolicy(base_delay=0.01, jitter=0.0),
        summary_model=None if summary_window is None else SUMMARY_MODEL,
    )
    async with trio.open_nursery() as nursery:
        fake = FakeProvider(responder=responder)
        await nursery.start(fake.serve)
        bench = Bench(nursery, fake, catalog, config)
        sup = await bench.start()
        agents = [await bench.agent(entries) for _ in range(rounds + 1)]  # +1: the warm-up
        ours: list[float] = []
        floor: list[float] = []
        outcome = None
        same = True
        sent_ours: list[RecordedRequest] = []
        for i, uuid in enumerate(agents):
            replayed = [e.message for e in bench.store.replay_entries(uuid)]
            first = len(fake.requests)
            t0 = time.perf_counter()
            outcome = await sup.compact(uuid)
            took = time.perf_counter() - t0
            sent_ours = fake.requests[first:]
            if not outcome.compacted:
                raise RuntimeError(f"nothing compacted: {outcome.reason} {outcome.message or ''}")
            # the floor's requests, built outside the timed part
            requests = floor_requests(bench, replayed[: outcome.messages], summary_model)
            first = len(fake.requests)
            t0 = time.perf_counter()
            for request in requests:
                await send(bench.pool, request, summary_model)
            took_floor = time.perf_counter() - t0
            same = same and [r.body for r in sent_ours] == [r.body for r in fake.requests[first:]]
            if i:  # the first round warms connections and caches
                ours.append(took)
                floor.append(took_floor)
        # counted by the fake's tokenizer (bytes / 3 of the prompt), not ikigai's estimate
        tokens_in = sum(fake_tokens(r) for r in sent_ours)
        calls = len(sent_ours)
        await bench.aclose()
        nursery.cancel_scope.cancel()
    if outcome is None:
        raise RuntimeError("no round ran")
    if not same:
        print(
            f"warning ({label}): the floor's requests differ from the compactor's", file=sys.stderr
        )
    o, f = statistics.median(ours) * 1e3, statistics.median(floor) * 1e3
    return [
        {
            "name": f"compact {size} context, {label}",
            "unit": "ms (floor: the same summary calls straight to the provider)",
            "ours": o,
            "comparison": f,
            "ratio": o / f,
            "summary_calls": calls,
            "tokens_in": tokens_in,
            "tokens_before": outcome.tokens_before,
            "tokens_after": outcome.tokens_after,
            "messages": outcome.messages,
            "same_requests": same,
        },
        {
            "name": f"compact {size} context, {label}: tokens after / before",
            "unit": "tokens, ikigai's estimate",
            "ours": outcome.tokens_after,
            "comparison": outcome.tokens_before,
            "ratio": outcome.tokens_after / outcome.tokens_before,
        },
        {
            "name": f"compact {size} context, {label}: summary input, {calls} call{'s' if calls != 1 else ''}",
            "unit": "tokens counted by the fake",
            "ours": tokens_in,
            "comparison": None,
            "ratio": None,
        },
    ]


async def check_rows(checks: int, entries: list[Entry], size: str) -> list[dict]:
    """The size check before each model call, warm and cold, beside the call itself."""
    catalog = load_catalog()  # claude-sonnet-4-5: 200k, so a 100k context is far from the limit
    config = AgentConfig(retry=RetryPolicy(base_delay=0.01, jitter=0.0))
    async with trio.open_nursery() as nursery:
        fake = FakeProvider(responder=responder)
        await nursery.start(fake.serve)
        bench = Bench(nursery, fake, catalog, config)
        sup = await bench.start()
        uuid = await bench.agent(entries)
        actor = await sup.live(uuid)
        context = await actor.context()
        turn = Turn(actor, actor.deps, "bench", "", None)
        # measured once: every message's size is cached from here on
        request = await turn._fitted(MODEL, PROVIDER, "none")
        rng = random.Random(4)
        warm: list[float] = []
        cold: list[float] = []
        call: list[float] = []
        for i in range(checks + 1):
            # one new message, kept (a turn only appends), alternating roles:
            # consecutive prompts would be merged into a new one
            new = _text(rng, 40)
            context.append(
                Message(role="user", content=[TextBlock(text=new)])
                if i % 2
                else Message(role="assistant", content=[TextBlock(text=new)], provider=PROVIDER)
            )
            t0 = time.perf_counter()
            request = await turn._fitted(MODEL, PROVIDER, "none")
            took_warm = time.perf_counter() - t0
            kept = actor.meter
            actor.meter = ContextMeter()  # nothing measured yet, as after a restart or a compaction
            t0 = time.perf_counter()
            await turn._fitted(MODEL, PROVIDER, "none")
            took_cold = time.perf_counter() - t0
            actor.meter = kept
            t0 = time.perf_counter()
            await send(bench.pool, request, MODEL)
            took_call = time.perf_counter() - t0
            if i:
                warm.append(took_warm)
                cold.append(took_cold)
                call.append(took_call)
        await bench.aclose()
        nursery.cancel_scope.cancel()
    w, c, m = (statistics.median(x) * 1e6 for x in (warm, cold, call))
    unit = "µs (comparison: one model call of that request over loopback)"
    return [
        {
            "name": f"size check per call, {size} context",
            "unit": unit,
            "ours": w,
            "comparison": m,
            "ratio": w / m,
        },
        {
            "name": f"cold size check, {size} context",
            "unit": unit,
            "ours": c,
            "comparison": m,
            "ratio": c / m,
        },
    ]


def messages(count: int) -> list[Message]:
    """The first ``count`` messages of a working session (``history``)."""
    target = count * 100  # ~90 tokens a message
    while len(found := history(target)) < count:
        target *= 2
    return [e.message for e in found[:count]]


def replay_rows(checks: int, sizes: tuple[int, ...] = (100, 10_000)) -> list[dict]:
    """The replay before each model call, kept between calls, beside the whole
    walk it replaces, at each context size: one message appended per call.

    The kept replay at every size is measured interleaved with itself at the
    other sizes, and the whole walks likewise: a whole walk of 10,000 messages
    between two kept ones would leave them to run in the CPU caches it
    emptied, which is the walk's cost (5 µs became ~20 in a trial)."""
    window = load_catalog().limits(PROVIDER, MODEL).context_window
    bound = int(window * AgentConfig().tool_result_share)  # as Turn._request cuts
    msgs = messages(max(sizes) + checks + 1)  # +1: the warm-up's
    ours = interleaved(checks, {size: _kept(msgs, size, bound) for size in sizes})
    floor = interleaved(checks, {size: _whole(msgs, size, bound) for size in sizes})
    rows = []
    for size in sizes:
        o, f = statistics.median(ours[size]) * 1e6, statistics.median(floor[size]) * 1e6
        rows.append(
            {
                "name": f"replay per call (convert, cut, measure), {size:,} messages",
                "unit": "µs (comparison: the whole walk of the same context)",
                "ours": o,
                "comparison": f,
                "ratio": o / f,
            }
        )
    return rows


def _kept(msgs: list[Message], size: int, bound: int) -> Callable[[], float]:
    """One call's replay as a turn makes it: kept from the last call."""
    context, coming = msgs[:size], iter(msgs[size:])
    meter = ContextMeter()
    # made once and every size cached, as after the agent's first call
    meter.raw(Request(model=MODEL, messages=meter.prepared(context, PROVIDER, bound)))

    def call() -> float:
        context.append(next(coming))
        t0 = time.perf_counter()
        replay = meter.prepared(context, PROVIDER, bound)
        meter.raw(Request(model=MODEL, messages=replay))
        return time.perf_counter() - t0

    return call


def _whole(msgs: list[Message], size: int, bound: int) -> Callable[[], float]:
    """One call's replay as it was made before: the whole context walked."""
    context, coming = msgs[:size], iter(msgs[size:])
    meter = ContextMeter()
    meter.raw(Request(model=MODEL, messages=bound_results(for_provider(context, PROVIDER), bound)))

    def call() -> float:
        context.append(next(coming))
        t0 = time.perf_counter()
        replay = bound_results(for_provider(context, PROVIDER), bound)
        meter.raw(Request(model=MODEL, messages=replay))
        return time.perf_counter() - t0

    return call


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--rounds", type=int, default=9, help="compactions of each kind (and as many floor runs)"
    )
    ap.add_argument("--checks", type=int, default=200, help="size checks (and as many model calls)")
    ap.add_argument(
        "--tokens", type=int, default=CONTEXT_TOKENS, help="the context's size, ikigai's estimate"
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    # the compactor's info lines (two per compaction) would bury the table
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    size = f"{args.tokens // 1000}k"
    entries = history(args.tokens)
    turns = sum(e.kind == "user" for e in entries)
    print(f"history: {turns} turns, {len(entries)} messages, ~{args.tokens:,} tokens")

    rows = trio.run(compact_rows, args.rounds, entries, size, "128k window", None)
    rows += trio.run(compact_rows, args.rounds, entries, size, "32k summary window", 32_000)
    rows += trio.run(check_rows, args.checks, entries, size)
    rows += replay_rows(args.checks)

    print(f"{'benchmark':<70} {'unit':<62} {'ours':>12} {'comparison':>12} {'ratio':>8}")
    for r in rows:
        comp = "-" if r["comparison"] is None else f"{r['comparison']:,.3f}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}x"
        print(f"{r['name']:<70} {r['unit']:<62} {r['ours']:>12,.3f} {comp:>12} {ratio:>8}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
