#!/usr/bin/env python3
"""Several ikigaid processes on one PostgreSQL database (issue 32).

    IKIGAI_TEST_PG_URL=... .venv/bin/python tests/bench/bench_cluster.py [--quick] [--json PATH]
        [--lease S] [--heartbeat S] [--kills N] [--agents N] [--stream-deltas N]
        [--parts round-trip,latency,throughput,failover]

Two real daemons, A and B (``python -m daemon run``, each its own
IKIGAI_HOME, ``database_url`` and ``cluster: {lease, heartbeat}`` in its
config.json, as tests/cluster/conftest.py starts them), on a fresh database
created on the server IKIGAI_TEST_PG_URL names and dropped at the end;
without it the script prints ``skipped: ...`` and writes no rows. The fake
provider is tests/bench/_loadgen.py's, in this process: chunked SSE, one
write per event, each text delta a marker; it notes perf_counter_ns() just
before the write holding each marker, and the subscribers note it when the
read completing the line holding it returns (same process, same clock).

Rows:
  control round trip, remote vs local agent   ``agent.show``, and
      ``agent.history {limit: 1}``, of an idle agent B runs, one call at a
      time on one connection, median per call: asked of A (ours: A finds
      the owner in the database, forwards the request to B over B's control
      socket and relays the answer) vs asked of B (comparison: the daemon
      that runs it). The connections take turns call by call (order
      alternating), equal counts. agent.show is the heavier method (usage,
      last activity, budget, context: several queries), so the hop is a
      smaller share of it; agent.history limit 1 shows the hop better.
  event latency, remote vs local subscriber, p50 / p99   one agent on B
      streaming a reply (1 agent x 100 deltas/s); one subscriber on B and one
      on A (the relay), both read by this one trio loop: fake write ->
      receipt of each text delta; ours the subscriber on A, comparison the
      one on B. The percentile is taken per run and the median of the runs
      reported.
  relay's extra latency per event   per text delta, its arrival at the
      subscriber on A minus its arrival at the one on B (paired, same event),
      median per run, median of the runs; comparison: the local subscriber's
      own median latency from the fake's write. Both readers share one loop:
      when both sockets are ready in one wake-up the second read is stamped
      after the first is handled (some microseconds), which counts against
      the relay.
  failover after kill -9, median / max   an idle agent on B (made through A
      with ``on``); B killed with SIGKILL at a random phase of its heartbeat;
      time from the kill to the first ``agent.show`` through A that answers
      with A as the agent's daemon (it answers -32009 meanwhile), polled
      every 20 ms; B restarted between kills (not timed). Comparison: the
      configured bound, lease + heartbeat (ratio = figure / bound). Expected
      about the lease: B's lease runs out ``lease`` after its last heartbeat,
      which was up to a heartbeat before the kill, and A notices at its next
      heartbeat, up to a heartbeat later.
  delivered events/s, 2 daemons vs 1   the same total load, 20 agents each
      streaming N deltas back to back (no pacing: as fast as the daemons take
      them): 10 on A and 10 on B (ours) vs all 20 on A (comparison; B up and
      idle), each subscriber on its agent's owner; text deltas received /
      (first prompt sent -> last turn ended). Runs interleaved, alternating
      which goes first; median of the runs.

  Expected scaling. One ikigaid is one Python process: its event path (read
  the provider stream, decode, encode, send to subscribers) runs on one core,
  and the database sees a turn's messages, not its deltas, so daemons share
  nothing per event. With free cores, k daemons deliver about k times what
  one does, until the cores (or the database's per-turn writes) run out.
  Here there are 2 cores, shared by the daemons, this process (the fake
  provider and the subscribers: about half a daemon's CPU per event) and
  PostgreSQL, and by whatever else runs on the machine: one daemon is held
  to one core, and 2 daemons to the cores the rest leaves, so the gain is at
  most min(2 / d, C / (d + h)) / min(1 / d, C / (d + h)), d and h the
  daemon's and this process's CPU per event and C the cores not busy with
  anything else: about 1.3x on 2 idle cores, nothing when other work holds
  the second core. The row keeps the figures behind it (medians of the
  runs) in the results file: ``daemon_cpu_us_per_event``, ``harness_cpu_us_per_event``,
  ``other_cores_busy`` (from /proc/stat: busy CPU not ours) and
  ``ceiling_ratio``, that bound computed from them.

Not a test: nothing is asserted; the daemons' warnings and errors are
printed at the end (kill -9 makes the expected ``daemon lost`` ones).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import trio  # noqa: E402

from tests.bench._loadgen import LoadFake, Rpc, Subscriber  # noqa: E402
from tests.bench._measure import median, pct  # noqa: E402
from tests.bench.bench_e2e import MODEL, TICK, Daemon, Table, cpu_seconds  # noqa: E402

PARTS = ("round-trip", "latency", "throughput", "failover")
POLL_S = 0.02  # how often agent.show is asked during a failover


def machine_busy() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICK  # all but idle and iowait


class Member(Daemon):
    """One daemon of the cluster: bench_e2e's Daemon with a shared database."""

    def __init__(
        self, name: str, base_url: str, db_url: str, lease: float, heartbeat: float
    ) -> None:
        super().__init__(base_url)
        self.name = f"ikigaid {name}"
        cfg = json.loads((self.home / "config.json").read_text())
        cfg["database_url"] = db_url
        cfg["cluster"] = {"lease": lease, "heartbeat": heartbeat}
        (self.home / "config.json").write_text(json.dumps(cfg))
        self.id = ""

    def _open_log(self) -> Any:
        return open(self.log, "ab")  # every start's output kept: a restart must not hide a crash

    async def start(self) -> None:
        await super().start()
        rpc = await Rpc.connect(self.sock)
        try:
            self.id = (await rpc.call("daemon.status"))["cluster"]["id"]
        finally:
            rpc.close()

    async def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # SIGKILL
        await self.proc.wait()


async def ask(rpc: Rpc, method: str, **params: Any) -> dict[str, Any]:
    """The whole answer (result or error), notifications skipped."""
    await rpc.send(method, **params)
    while True:
        msg = json.loads(await rpc.line())
        if msg.get("id") == rpc.ids:
            return msg


# ------------------------------------------------------------------ 1. control round trip


ROUND_TRIPS: dict[str, dict[str, Any]] = {
    "agent.show": {"agent": "rt"},
    "agent.history": {"agent": "rt", "limit": 1},
}


async def round_trip(table: Table, a: Member, b: Member, calls: int) -> None:
    admin = await Rpc.connect(b.sock)
    await admin.call("agent.create", name="rt", model=MODEL)
    admin.close()
    local, remote = await Rpc.connect(b.sock), await Rpc.connect(a.sock)
    shown = await remote.call("agent.show", agent="rt")
    assert shown["daemon"] == b.id, shown  # A must forward: B runs it
    conns = {"local": local, "remote": remote}
    times: dict[tuple[str, str], list[float]] = {(m, w): [] for m in ROUND_TRIPS for w in conns}
    for i in range(calls + 20):  # the first 20 of each: warm-up, not kept
        for method, params in ROUND_TRIPS.items():
            for who in ("local", "remote") if i % 2 == 0 else ("remote", "local"):
                t0 = time.perf_counter()
                await conns[who].call(method, **params)
                took = time.perf_counter() - t0
                if i >= 20:
                    times[method, who].append(took)
    local.close()
    remote.close()
    for method, params in ROUND_TRIPS.items():
        what = method + ("" if list(params) == ["agent"] else " limit 1")
        ours, theirs = times[method, "remote"], times[method, "local"]
        table.row(
            f"control round trip, remote vs local agent, {what}",
            f"ms per {what} of an idle agent, one call at a time "
            "(comparison: asked of the daemon that runs it)",
            median(ours) * 1000,
            median(theirs) * 1000,
            "lower",
        )
        table.rows[-1].update(
            calls=calls, p90_ms=pct(ours, 0.9) * 1000, comparison_p90_ms=pct(theirs, 0.9) * 1000
        )


# ------------------------------------------------------------------ 2. event latency


async def latency_run(
    fake: LoadFake, a: Member, b: Member, agent: str, run: int, deltas: int, rate: float
) -> dict[str, float]:
    fake.reset()
    fake.mode, fake.deltas, fake.rate = "chunked", deltas, rate
    subs: dict[str, Subscriber] = {}
    async with trio.open_nursery() as nursery:
        for who, m in (("local", b), ("remote", a)):
            rpc = await Rpc.connect(m.sock)
            await rpc.call("agent.subscribe", agent=agent)
            subs[who] = Subscriber(rpc)
            nursery.start_soon(subs[who].read)
        admin = await Rpc.connect(b.sock)
        await admin.call("agent.prompt", agent=agent, text=f"[bench:{run % 10}0000] stream")
        with trio.fail_after(60 + 4 * deltas / rate):
            for s in subs.values():
                await s.ended.wait()
        nursery.cancel_scope.cancel()
    admin.close()
    for s in subs.values():
        s.rpc.close()
    at = {who: dict(s.arrivals) for who, s in subs.items()}
    keys = [k for k in fake.writes if k in at["local"] and k in at["remote"]]
    local = [(at["local"][k] - fake.writes[k]) / 1e6 for k in keys]
    remote = [(at["remote"][k] - fake.writes[k]) / 1e6 for k in keys]
    extra = [(at["remote"][k] - at["local"][k]) / 1e6 for k in keys]
    return {
        "local_p50": pct(local, 0.5),
        "local_p99": pct(local, 0.99),
        "remote_p50": pct(remote, 0.5),
        "remote_p99": pct(remote, 0.99),
        "extra_p50": pct(extra, 0.5),
        "extra_p99": pct(extra, 0.99),
        "lost_local": deltas - len(at["local"]),
        "lost_remote": deltas - len(at["remote"]),
        "lagged": sum(s.lagged for s in subs.values()),
    }


async def event_latency(
    table: Table, fake: LoadFake, a: Member, b: Member, runs: int, deltas: int, rate: float
) -> None:
    admin = await Rpc.connect(b.sock)
    await admin.call("agent.create", name="lat", model=MODEL)
    admin.close()
    await latency_run(fake, a, b, "lat", 0, min(deltas, 20), rate)  # warm-up, not kept
    got = [await latency_run(fake, a, b, "lat", i + 1, deltas, rate) for i in range(runs)]

    def med(key: str) -> float:
        return median([g[key] for g in got])

    load = f"1 agent x {rate:g}/s"
    lost = {
        "lost_local": sum(int(g["lost_local"]) for g in got),
        "lost_remote": sum(int(g["lost_remote"]) for g in got),
        "lagged": sum(int(g["lagged"]) for g in got),
        "runs": runs,
        "events_per_run": deltas,
    }
    for q in ("p50", "p99"):
        table.row(
            f"event latency, remote vs local subscriber, {q}, {load}",
            "ms, fake write -> receipt, subscriber on the other daemon "
            "(comparison: subscriber on the owner)",
            med(f"remote_{q}"),
            med(f"local_{q}"),
            "lower",
        )
        table.rows[-1].update(lost)
    table.row(
        f"relay's extra latency per event, median, {load}",
        "ms, remote minus local arrival of the same event "
        "(comparison: the local subscriber's latency from the fake's write)",
        med("extra_p50"),
        med("local_p50"),
        "lower",
    )
    table.rows[-1].update(lost, extra_p99_ms=med("extra_p99"))


# ------------------------------------------------------------------ 3. throughput


async def stream_load(
    fake: LoadFake, placed: list[tuple[Member, str]], run: int, deltas: int
) -> dict[str, float]:
    """Every agent prompted at once (through its owner), one subscriber each
    on its owner, until every turn has ended."""
    fake.reset()
    fake.mode, fake.deltas, fake.rate = "chunked", deltas, 0.0
    members = list(dict.fromkeys(m for m, _ in placed))
    subs: list[Subscriber] = []
    async with trio.open_nursery() as nursery:
        for m, agent in placed:
            rpc = await Rpc.connect(m.sock)
            await rpc.call("agent.subscribe", agent=agent)
            subs.append(Subscriber(rpc))
            nursery.start_soon(subs[-1].read)
        admins = {m.name: await Rpc.connect(m.sock) for m in members}
        cpu0 = sum(cpu_seconds(m.pid) for m in members)
        own0, busy0 = time.process_time(), machine_busy()
        t0 = time.perf_counter()
        for i, (m, agent) in enumerate(placed):
            await admins[m.name].send(
                "agent.prompt", agent=agent, text=f"[bench:{run % 10}{i:04d}] stream"
            )
        for m, _ in placed:
            await admins[m.name].answer()
        with trio.fail_after(300):
            for s in subs:
                await s.ended.wait()
        elapsed = time.perf_counter() - t0
        cpu = sum(cpu_seconds(m.pid) for m in members) - cpu0
        own, busy = time.process_time() - own0, machine_busy() - busy0
        nursery.cancel_scope.cancel()
    for rpc in admins.values():
        rpc.close()
    for s in subs:
        s.rpc.close()
    received = len({k for s in subs for k, _ in s.arrivals})
    first = min((s.arrivals[0][1] for s in subs if s.arrivals), default=0) / 1e9 - t0
    return {
        "rate": received / elapsed,
        "elapsed": elapsed,
        "first_event_s": first,
        "received": received,
        "lost": len(placed) * deltas - received,
        "lagged": sum(s.lagged for s in subs),
        "errors": sum(s.errors for s in subs),
        "cpu_us": cpu / max(1, received) * 1e6,
        "harness_cpu_us": own / max(1, received) * 1e6,
        # cores busy with anything else meanwhile (PostgreSQL, other users of
        # the machine): what the daemons could not have
        "other_cores": max(0.0, busy - cpu - own) / elapsed,
    }


def ceiling(daemon_us: float, harness_us: float, others: float) -> float:
    """The most 2 daemons can gain over 1 here: one daemon delivers at most a
    core's worth (1 / its CPU per event), and all of them together at most
    what the cores left by other processes give the daemons and this
    harness (cores / (daemon + harness CPU per event))."""
    free = max(0.1, (os.cpu_count() or 1) - others) / (daemon_us + harness_us)
    return min(2 / daemon_us, free) / min(1 / daemon_us, free)


async def throughput(
    table: Table, fake: LoadFake, a: Member, b: Member, agents: int, deltas: int, reps: int
) -> None:
    half = agents // 2
    one: list[tuple[Member, str]] = []
    two: list[tuple[Member, str]] = []
    for i in range(agents):
        for into, m, name in ((one, a, f"one{i:02d}"), (two, a if i < half else b, f"two{i:02d}")):
            admin = await Rpc.connect(m.sock)
            await admin.call("agent.create", name=name, model=MODEL)
            admin.close()
            into.append((m, name))
    run = 0
    for placed in (one, two):  # warm-up, not kept
        run += 1
        await stream_load(fake, placed, run, min(deltas, 50))
    got: dict[str, list[dict[str, float]]] = {"one": [], "two": []}
    for rep in range(reps):
        order = ("two", "one") if rep % 2 == 0 else ("one", "two")
        for who in order:
            run += 1
            got[who].append(await stream_load(fake, one if who == "one" else two, run, deltas))

    def med(who: str, key: str) -> float:
        return median([g[key] for g in got[who]])

    table.row(
        f"delivered events/s, 2 daemons vs 1, {agents} agents back to back",
        f"text deltas/s, {half} agents on each of 2 daemons "
        f"(comparison: all {agents} on one), higher is better",
        med("two", "rate"),
        med("one", "rate"),
        "higher",
    )
    table.rows[-1].update(
        cores=os.cpu_count(),
        events_per_run=agents * deltas,
        runs=reps,
        lost=sum(int(g["lost"]) for g in got["two"]),
        comparison_lost=sum(int(g["lost"]) for g in got["one"]),
        lagged=sum(int(g["lagged"]) for w in got for g in got[w]),
        turn_errors=sum(int(g["errors"]) for w in got for g in got[w]),
        daemon_cpu_us_per_event=med("two", "cpu_us"),
        comparison_daemon_cpu_us_per_event=med("one", "cpu_us"),
        harness_cpu_us_per_event=med("two", "harness_cpu_us"),
        elapsed_s=med("two", "elapsed"),
        comparison_elapsed_s=med("one", "elapsed"),
        first_event_s=med("two", "first_event_s"),
        comparison_first_event_s=med("one", "first_event_s"),
        other_cores_busy=med("two", "other_cores"),
        comparison_other_cores_busy=med("one", "other_cores"),
        ceiling_ratio=ceiling(
            med("one", "cpu_us"), med("one", "harness_cpu_us"), med("one", "other_cores")
        ),
    )
    extra = {k: v for k, v in table.rows[-1].items() if k not in ("name", "unit", "better")}
    print(f"    {extra}", file=sys.stderr)


# ------------------------------------------------------------------ 4. failover


async def adopted(rpc: Rpc, agent: str, gone: str, limit: float) -> tuple[str, dict[str, int]]:
    """Ask until the agent answers with an owner other than ``gone``."""
    errors: dict[str, int] = {}
    with trio.fail_after(limit):
        while True:
            msg = await ask(rpc, "agent.show", agent=agent)
            if "error" in msg:
                code = str(msg["error"].get("code"))
                errors[code] = errors.get(code, 0) + 1
            elif msg["result"]["daemon"] != gone:
                return msg["result"]["daemon"], errors
            await trio.sleep(POLL_S)


async def failover(
    table: Table, a: Member, b: Member, kills: int, lease: float, heartbeat: float
) -> None:
    rng = random.Random(32)
    rpc = await Rpc.connect(a.sock)
    took: list[float] = []
    errors: dict[str, int] = {}
    for k in range(kills):
        name = f"fo{k:02d}"
        with trio.fail_after(30 + 3 * lease):  # B may not be live again at once
            while True:
                made = await ask(rpc, "agent.create", name=name, model=MODEL, on=b.id)
                if "result" in made:
                    break
                await trio.sleep(0.1)
        shown = await rpc.call("agent.show", agent=name)
        assert shown["daemon"] == b.id, shown
        # a random phase of B's heartbeat: the figure spans what a kill may meet
        await trio.sleep(rng.uniform(0, heartbeat))
        t0 = time.perf_counter()
        await b.kill()
        owner, seen = await adopted(rpc, name, b.id, 60 + 3 * (lease + heartbeat))
        took.append(time.perf_counter() - t0)
        assert owner == a.id, (owner, a.id)
        for code, n in seen.items():
            errors[code] = errors.get(code, 0) + n
        print(f"    kill {k + 1}: answered by the adopter after {took[-1]:.2f} s", file=sys.stderr)
        await b.start()
    rpc.close()
    bound = lease + heartbeat
    for what, figure in (("median", median(took)), ("max", max(took))):
        table.row(
            f"failover after kill -9, {what} of {kills}",
            f"s, kill -> first agent.show through the survivor naming it the owner, "
            f"lease {lease:g} s + heartbeat {heartbeat:g} s (comparison: that bound)",
            figure,
            bound,
            "lower",
        )
        table.rows[-1].update(
            lease=lease, heartbeat=heartbeat, kills=kills, times_s=took, answers_meanwhile=errors
        )


# ------------------------------------------------------------------ main


async def run(args: argparse.Namespace, db_url: str) -> list[dict[str, Any]]:
    table = Table()
    members: list[Member] = []
    async with trio.open_nursery() as nursery:
        fake = await nursery.start(LoadFake(MODEL).serve)
        try:
            for name in ("a", "b"):  # one at a time: the first migrates the database
                m = Member(name, fake.base_url, db_url, args.lease, args.heartbeat)
                members.append(m)
                await m.start()
            a, b = members
            print(f"  daemons: a={a.id} b={b.id}", file=sys.stderr, flush=True)
            if "round-trip" in args.parts:
                await round_trip(table, a, b, args.calls)
            if "latency" in args.parts:
                await event_latency(table, fake, a, b, args.latency_runs, args.deltas, args.rate)
            if "throughput" in args.parts:
                await throughput(
                    table, fake, a, b, args.agents, args.stream_deltas, args.throughput_runs
                )
            if "failover" in args.parts:  # last: it kills b
                await failover(table, a, b, args.kills, args.lease, args.heartbeat)
        finally:
            with trio.CancelScope(shield=True):
                for m in members:
                    await m.stop()
            for m in members:
                complaints = m.complaints()
                if complaints:
                    print(
                        f"  {m.name} logged {len(complaints)} warning/error lines:", file=sys.stderr
                    )
                    for line in complaints[:12]:
                        print(f"    {line}", file=sys.stderr)
                m.cleanup()
        nursery.cancel_scope.cancel()
    return table.rows


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="a smoke run: fewer calls, runs, kills")
    ap.add_argument("--lease", type=float, default=4.0, help="cluster.lease, seconds")
    ap.add_argument("--heartbeat", type=float, default=1.0, help="cluster.heartbeat, seconds")
    ap.add_argument("--kills", type=int, help="kill -9 rounds (default 10; quick 3)")
    ap.add_argument("--agents", type=int, default=20, help="agents of the events/s rows")
    ap.add_argument(
        "--stream-deltas",
        type=int,
        help="deltas per agent, events/s rows (default 3000; quick 500)",
    )
    ap.add_argument(
        "--parts",
        default=",".join(PARTS),
        help="what to measure, comma-separated (default: all of " + ", ".join(PARTS) + ")",
    )
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    args.parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if unknown := [x for x in args.parts if x not in PARTS]:
        ap.error(f"--parts: no such part: {', '.join(unknown)}")
    args.calls, args.latency_runs, args.deltas, args.rate = 1000, 5, 200, 100.0
    args.throughput_runs = 5
    if args.quick:
        args.calls, args.latency_runs, args.deltas, args.throughput_runs = 200, 3, 100, 2
    if args.stream_deltas is None:
        args.stream_deltas = 500 if args.quick else 3000
    if args.kills is None:
        args.kills = 3 if args.quick else 10

    admin = os.environ.get("IKIGAI_TEST_PG_URL")
    if not admin:
        print("skipped: IKIGAI_TEST_PG_URL is not set (several daemons need a PostgreSQL server)")
        if args.json:
            args.json.write_text("[]")
        return 0
    from tests.store.conftest import create_pg_database, drop_pg_database

    name = f"ikigai_bench_cluster_{secrets.token_hex(4)}"
    db_url = create_pg_database(admin, name)
    try:
        rows = trio.run(run, args, db_url)
    finally:
        drop_pg_database(admin, name)
    for r in rows:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(
            f"{r['name']:<62} {r['ours']:>10,.3f} {r['comparison']:>10,.3f} {ratio:>8}  {r['unit']}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
