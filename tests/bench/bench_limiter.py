"""The provider limiter against a key that enforces a real limit: the same
fan-out with the limiter on and off, side by side in one run.

    .venv/bin/python tests/bench/bench_limiter.py [--agents 50] [--tpm 60000] [--json PATH]

``--agents`` agents (a supervisor on a real SQLite file, talking over
loopback to tests/fakes) prompt at once, each request ~2,000 input tokens,
against a fake key of ``--tpm`` input tokens a minute (a token bucket of a
minute's worth, refilled continuously; past it, a 429 with ``retry-after``
and the real ``anthropic-ratelimit-*`` headers on every answer: see
tests/fakes/ratelimit.py). The agents run with the daemon's retry policy.

  ours        the limiter on (the daemon's default: learned from the headers)
  comparison  the limiter off (each agent meets the provider alone)

Rows: 429s the key answered, retries the agents scheduled, turns that
completed, requests the provider received, and the time until the last turn
ended beside the fewest seconds the limit allows. Time is trio's mock clock
(it jumps when every task has idled a few real milliseconds), so a limit of
minutes runs in seconds; the wall time of each run is kept too. Not a test:
nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
import trio.testing

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents import AgentConfig, RetryPolicy  # noqa: E402
from tests.agents.conftest import Harness  # noqa: E402
from tests.fakes.ratelimit import KeyLimit  # noqa: E402
from tests.fakes.script import Reply  # noqa: E402
from tests.fakes.server import FakeProvider  # noqa: E402

MODEL = "claude-sonnet-4-5/none"


async def fleet(agents: int, tpm: int, *, limit: bool, folder: Path) -> dict[str, Any]:
    key = KeyLimit(requests_per_minute=1_000_000, input_tokens_per_minute=tpm)
    fake = FakeProvider(default=Reply(text="ok"), limit=key)
    async with trio.open_nursery() as nursery:
        await nursery.start(fake.serve)
        h = Harness(nursery, fake, folder / "ikigai.db")
        sup = await h.start(config=AgentConfig(retry=RetryPolicy()), read_timeout=60.0)
        sup.pool.limit = limit
        actors = []
        for i in range(agents):
            record, _, _ = await sup.create(model=MODEL, name=f"a{i}")
            actors.append(sup.actors[record.uuid])
        wall, start = time.perf_counter(), trio.current_time()
        turns = [await a.submit("x" * 6000) for a in actors]
        async with trio.open_nursery() as waits:
            for actor, (turn, _) in zip(actors, turns, strict=True):
                waits.start_soon(actor.wait_turn, turn)
        took, wall = trio.current_time() - start, time.perf_counter() - wall
        retries = sum(
            type(e.event).__name__ == "RetryScheduled" for a in actors for e in a.log.backlog(1)
        )
        completed = sum(a.last_result is not None and a.last_result.status == "completed" for a in actors)
        sizes = [r.tokens for r in fake.requests if r.tokens]
        demand = sum(sizes) / len(sizes) * agents
        await h.stop()
        nursery.cancel_scope.cancel()
    return {
        "429s": key.refused,
        "retries": retries,
        "completed": completed,
        "requests": len(fake.requests),
        "seconds": took,
        "fewest_seconds": max(0.0, demand - tpm) / (tpm / 60.0),
        "wall_seconds": wall,
    }


def run(agents: int, tpm: int, *, limit: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ikbench-limiter-") as tmp:
        clock = trio.testing.MockClock(autojump_threshold=0.05)
        return trio.run(lambda: fleet(agents, tpm, limit=limit, folder=Path(tmp)), clock=clock)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", type=int, default=50)
    ap.add_argument("--tpm", type=int, default=60_000, help="the key's input tokens a minute")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))  # warnings off
    on = run(args.agents, args.tpm, limit=True)
    off = run(args.agents, args.tpm, limit=False)
    n = args.agents
    rows = []
    for name, unit, field in (
        ("429s", "count", "429s"),
        ("retries", "count", "retries"),
        ("turns completed", "count", "completed"),
        ("provider requests", "count", "requests"),
        ("time to the last turn's end", "s", "seconds"),
    ):
        ours, theirs = float(on[field]), float(off[field])
        rows.append(
            {
                "name": f"{n} agents, {name}",
                "unit": unit,
                "ours": ours,
                "comparison": theirs,
                "ratio": round(ours / theirs, 3) if theirs else None,
                "fewest_seconds": round(on["fewest_seconds"], 2),
                "wall_seconds": {"on": round(on["wall_seconds"], 2), "off": round(off["wall_seconds"], 2)},
            }
        )
    rows.append(
        {
            "name": f"{n} agents, limiter on: time to the last turn's end vs the fewest the limit allows",
            "unit": "s (comparison: the key's limit divided into the load)",
            "ours": float(on["seconds"]),
            "comparison": round(on["fewest_seconds"], 2),
            "ratio": round(on["seconds"] / on["fewest_seconds"], 3) if on["fewest_seconds"] else None,
        }
    )
    print(f"{'':34} {'limiter on':>12} {'limiter off':>12}")
    for r in rows[:-1]:
        print(f"{r['name']:34} {r['ours']:>12.1f} {r['comparison']:>12.1f}")
    print(f"fewest seconds the limit allows: {on['fewest_seconds']:.1f}")
    print(f"wall seconds: on {on['wall_seconds']:.1f}, off {off['wall_seconds']:.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
