#!/usr/bin/env python3
"""Fan-outs and listings at fleet size, through a real ikigaid (issue 30).

    .venv/bin/python tests/bench/bench_fanout.py [--quick] [--json PATH]

Rows:
  1,000 forks with their first prompts, acknowledged   one ``agent.fork
      {count: 1000, prompt}`` (one transaction: agent rows, fork rows, user
      rows, open turns) from send to answer; comparison: the same 1,000
      children made by 1,000 ``agent.fork {prompt}`` calls pipelined on one
      connection (what a script had to do before), send of the first to the
      last answer. Same daemon, same parent history, repetitions interleaved,
      the children's turns (a one-delta reply from the fast fake) finished and
      the children killed between runs.
  agent.list at 10,000 agents   the daemon restored on a prepared SQLite
      database of 10,000 idle agents, one ``agent.list`` round trip;
      comparison: the floor, the agents table's rows read with sqlite3 in this
      process (no JSON, no socket, no usage or short ids): strictly less work.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import trio  # noqa: E402

from tests.bench._loadgen import LoadFake, Rpc  # noqa: E402
from tests.bench._measure import median  # noqa: E402
from tests.bench.bench_e2e import MODEL, Daemon, Table, prepared_db  # noqa: E402


async def call(rpc: Rpc, method: str, **params: Any) -> Any:
    await rpc.send(method, **params)
    return await rpc.answer()


async def settle(rpc: Rpc, parent: str) -> None:
    """Until no agent of the parent's tree has a turn running or queued."""
    with trio.fail_after(600):
        while True:
            agents = await call(rpc, "agent.list")
            if not any(a["state"] != "idle" or a["queued"] for a in agents):
                return
            await trio.sleep(0.05)


async def one_call(rpc: Rpc, parent: str, n: int, run: int) -> float:
    t0 = time.perf_counter()
    res = await call(rpc, "agent.fork", agent=parent, count=n, prompt=f"[bench:{run:01d}0000] go")
    took = time.perf_counter() - t0
    assert len(res["children"]) == n
    return took


async def many_calls(rpc: Rpc, parent: str, n: int, run: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        await rpc.send("agent.fork", agent=parent, prompt=f"[bench:{run:01d}0000] go")
    for _ in range(n):
        await rpc.answer()
    return time.perf_counter() - t0


async def forks(table: Table, fake_url: str, n: int, reps: int) -> None:
    daemon = Daemon(fake_url)
    try:
        await daemon.start()
        rpc = await Rpc.connect(daemon.sock)
        ours: list[float] = []
        theirs: list[float] = []
        run = 0
        for rep in range(reps):
            pair = [(one_call, ours), (many_calls, theirs)]
            for how, into in pair if rep % 2 == 0 else pair[::-1]:
                run += 1
                parent = (await call(rpc, "agent.create", name=f"parent{run}", model=MODEL))[
                    "agent"
                ]["uuid"]
                into.append(await how(rpc, parent, n, run % 10))
                await settle(rpc, parent)
                await call(rpc, "agent.kill", agent=parent)
        rpc.close()
        table.row(
            f"{n:,} forks with their first prompts, acknowledged",
            f"s, one agent.fork {{count}} (comparison: {n:,} agent.fork calls, pipelined)",
            median(ours),
            median(theirs),
            "lower",
        )
    finally:
        await daemon.stop()
        daemon.cleanup()


async def listing(table: Table, fake_url: str, n: int, reps: int) -> None:
    url, tmp = prepared_db(n)
    daemon = Daemon(fake_url, db_url=url)
    path = url.removeprefix("sqlite:///")
    try:
        await daemon.start()
        rpc = await Rpc.connect(daemon.sock)
        await call(rpc, "agent.list")  # warm
        ours: list[float] = []
        floor: list[float] = []
        for _ in range(reps):
            t0 = time.perf_counter()
            listed = await call(rpc, "agent.list")
            ours.append(time.perf_counter() - t0)
            assert len(listed) == n
            t0 = time.perf_counter()
            db = sqlite3.connect(path)
            rows = db.execute("SELECT * FROM agents").fetchall()
            db.close()
            floor.append(time.perf_counter() - t0)
            assert len(rows) == n
        rpc.close()
        table.row(
            f"agent.list at {n:,} agents",
            "ms, one round trip (comparison: the agents table read with sqlite3, in process)",
            median(ours) * 1000,
            median(floor) * 1000,
            "lower",
        )
    finally:
        await daemon.stop()
        daemon.cleanup()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    table = Table()
    n_forks, n_list, reps = (100, 1000, 3) if args.quick else (1000, 10_000, 5)
    async with trio.open_nursery() as nursery:
        fake = await nursery.start(LoadFake(MODEL).serve)
        fake.deltas, fake.rate = 1, 0.0  # the children's turns: a one-delta reply at once
        await forks(table, fake.base_url, n_forks, 3)
        await listing(table, fake.base_url, n_list, reps)
        nursery.cancel_scope.cancel()
    return table.rows


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="a smoke run: 100 forks, 1,000 agents")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    rows = trio.run(run, args)
    for r in rows:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['name']:<52} {r['ours']:>10,.3f} {r['comparison']:>10,.3f} {ratio:>8}  {r['unit']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
