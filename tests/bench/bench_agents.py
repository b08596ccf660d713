"""Agents and daemon, measured side by side with a floor in the same run.

    .venv/bin/python tests/bench/bench_agents.py [--agents 10000] [--reps 3] [--json PATH]

  actor throughput   text deltas/s from the fake provider through an actor
                     (event log, store writes) to a subscriber, beside the same
                     stream read straight from HttpProvider (no actor); the
                     fake streams chunked, one write per event, back to back
                     (tests/bench/_loadgen.py); --reps runs each, interleaved,
                     medians
  idle agent memory  RSS per idle agent (10,000 in the supervisor), beside one
                     bare trio task per agent
  restore            time for a supervisor to restore N running agents, beside
                     reading their rows from the store
  daemon start       ikigaid start to socket ready with N agents in the
                     database, beside an empty database
  control latency    daemon.status round trip p50/p99 with 100 subscribers
                     connected, beside a bare trio echo server on a Unix socket
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents import AgentConfig, AsyncStore, ProviderPool, Supervisor  # noqa: E402
from agents.events import TurnEnded  # noqa: E402
from agents.tools import ToolRegistry  # noqa: E402
from providers.settings import settings_for  # noqa: E402
from providers.types import Message, Request, TextBlock, TextDelta  # noqa: E402
from store import Store  # noqa: E402
from tests.bench._loadgen import LoadFake  # noqa: E402
from tests.bench._measure import ainterleaved, median  # noqa: E402


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _settings(fake: LoadFake):
    return lambda name: settings_for(
        name, env={"ANTHROPIC_API_KEY": "bench"}, base_url=fake.base_url, read_timeout=60
    )


# the fake streams its markers for the agent named by this tag (tests/bench/_loadgen.py)
PROMPT = "[bench:00000] go"


async def actor_throughput(deltas: int, reps: int) -> tuple[float, float]:
    """Text deltas/s through an actor (event log, store writes) to a subscriber,
    and through HttpProvider.stream alone (the floor): the same chunked stream
    (one chunk and one write per event, back to back), ``reps`` runs each,
    interleaved, medians."""
    async with trio.open_nursery() as nursery:
        fake = await nursery.start(LoadFake("claude-sonnet-4-5").serve)
        fake.mode, fake.deltas, fake.rate = "chunked", deltas, 0
        pool = ProviderPool(settings=_settings(fake))
        provider = pool.get("anthropic", "claude-sonnet-4-5")
        req = Request(
            model="claude-sonnet-4-5",
            messages=[Message(role="user", content=[TextBlock(text=PROMPT)])],
        )

        async def floor() -> float:
            t0 = time.perf_counter()
            n = 0
            async with provider.stream(req) as events:
                async for ev in events:
                    n += isinstance(ev, TextDelta)
            return n / (time.perf_counter() - t0)

        tmp = Path(tempfile.mkdtemp())
        store = Store(f"sqlite:///{tmp / 'b.db'}")
        sup = await nursery.start(
            Supervisor(
                AsyncStore(store), pool, ToolRegistry(), AgentConfig(subscriber_buffer=100_000)
            ).run
        )
        rec, _, _ = await sup.create(model="claude-sonnet-4-5", name="bench")
        actor = sup.actors[rec.uuid]

        async def ours() -> float:
            sub = actor.log.subscribe(from_seq=actor.log.next_seq)
            t0 = time.perf_counter()
            turn, _ = await sup.prompt(actor, PROMPT)
            n = 0
            async for entry in sub:
                n += isinstance(entry.event, TextDelta)
                if isinstance(entry.event, TurnEnded) and entry.turn == turn:
                    break
            sub.close()
            return n / (time.perf_counter() - t0)

        runs = await ainterleaved(reps, {"ours": ours, "floor": floor})
        await pool.aclose()
        store.close()
        nursery.cancel_scope.cancel()
    return median(runs["ours"]), median(runs["floor"])


async def idle_memory_and_restore(count: int) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'many.db'}"
    store = Store(url, sqlite_synchronous="OFF")
    with (
        store.engine.begin() as conn
    ):  # bulk rows: creating 10,000 one by one is not what is measured
        from datetime import UTC, datetime

        from store._ids import uuid7
        from store._schema import agents

        now = datetime.now(UTC)
        conn.execute(
            agents.insert(),
            [
                {
                    "uuid": uuid7(),
                    "name": f"a{i}",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "thinking_level": "none",
                    "system_prompt": "",
                    "status": "running",
                    "created_at": now,
                }
                for i in range(count)
            ],
        )
    t0 = time.perf_counter()
    rows = store.list_agents()
    read_rows = time.perf_counter() - t0
    assert len(rows) == count
    out: dict[str, float] = {"read_rows_s": read_rows}
    async with trio.open_nursery() as nursery:
        # floor: one bare task per agent
        before = rss_kb()
        for _ in range(count):
            nursery.start_soon(trio.sleep_forever)
        await trio.sleep(0.1)
        out["bare_task_kb"] = (rss_kb() - before) / count
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        before = rss_kb()
        t0 = time.perf_counter()
        sup = await nursery.start(Supervisor(AsyncStore(store), ProviderPool(), ToolRegistry()).run)
        out["restore_s"] = time.perf_counter() - t0
        await trio.sleep(0.1)
        out["agent_kb"] = (rss_kb() - before) / count
        assert len(sup.actors) == count
        nursery.cancel_scope.cancel()
    store.close()
    out["db"] = str(tmp / "many.db")
    return out


def daemon_start(db_path: str | None) -> float:
    home = Path(tempfile.mkdtemp(prefix="ikb-", dir="/tmp"))
    (home / "config.json").write_text("{}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("IKIGAI_")}
    env["IKIGAI_HOME"] = str(home)
    if db_path:
        env["IKIGAI_DB_URL"] = f"sqlite:///{db_path}"
    sock = home / "run" / "ikigai.sock"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(str(sock))
                s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"}\n')
                if s.recv(65536):
                    return time.perf_counter() - t0
            except OSError:
                time.sleep(0.005)
            finally:
                s.close()
            if proc.poll() is not None or time.perf_counter() - t0 > 120:
                raise RuntimeError("ikigaid did not start")
    finally:
        proc.terminate()
        proc.wait(30)


def control_latency(subscribers: int, calls: int) -> tuple[list[float], list[float]]:
    home = Path(tempfile.mkdtemp(prefix="ikl-", dir="/tmp"))
    (home / "config.json").write_text("{}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("IKIGAI_")}
    env["IKIGAI_HOME"] = str(home)
    sock = home / "run" / "ikigai.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not sock.exists():
            time.sleep(0.01)
        time.sleep(0.2)

        def rpc(s, f, method, params=None, rid=1):
            s.sendall(
                json.dumps(
                    {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
                ).encode()
                + b"\n"
            )
            return json.loads(f.readline())

        admin = socket.socket(socket.AF_UNIX)
        admin.connect(str(sock))
        af = admin.makefile("rb")
        rpc(admin, af, "agent.create", {"name": "watched"})
        subs = []
        for _ in range(subscribers):
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(sock))
            f = s.makefile("rb")
            rpc(s, f, "agent.subscribe", {"agent": "watched"})
            subs.append((s, f))
        ours = []
        for i in range(calls):
            t0 = time.perf_counter()
            rpc(admin, af, "daemon.status", rid=i)
            ours.append(time.perf_counter() - t0)
        for s, f in subs:
            f.close()
            s.close()
        af.close()
        admin.close()
    finally:
        proc.terminate()
        proc.wait(30)
    return ours, echo_latency(calls)


def echo_latency(calls: int) -> list[float]:
    """A bare trio server that answers each line with a fixed JSON line, in another process."""
    path = tempfile.mktemp(prefix="ike-", dir="/tmp")
    code = f"""
import trio
async def handle(stream):
    buf = b""
    async for data in stream:
        buf += data
        while b"\\n" in buf:
            _, buf = buf.split(b"\\n", 1)
            await stream.send_all(b'{{"jsonrpc":"2.0","id":1,"result":{{}}}}\\n')
async def main():
    sock = trio.socket.socket(trio.socket.AF_UNIX)
    await sock.bind({path!r}); sock.listen(16)
    await trio.serve_listeners(handle, [trio.SocketListener(sock)])
trio.run(main)
"""
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        while not os.path.exists(path):
            time.sleep(0.01)
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        f = s.makefile("rb")
        out = []
        for _ in range(calls):
            t0 = time.perf_counter()
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"}\n')
            f.readline()
            out.append(time.perf_counter() - t0)
        f.close()
        s.close()
        return out
    finally:
        proc.terminate()
        proc.wait(10)
        Path(path).unlink(missing_ok=True)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--agents", type=int, default=10_000)
    ap.add_argument("--deltas", type=int, default=5_000)
    ap.add_argument("--reps", type=int, default=3, help="actor throughput runs per contender")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows: list[tuple[str, str, float, float]] = []

    ours, floor = trio.run(actor_throughput, args.deltas, args.reps)
    rows.append(
        (
            "actor -> subscriber",
            "text deltas/s, chunked stream (floor: HttpProvider.stream alone)",
            ours,
            floor,
        )
    )
    mem = trio.run(idle_memory_and_restore, args.agents)
    rows.append(
        (
            f"idle agent memory ({args.agents:,})",
            "KiB per agent (floor: bare trio task)",
            mem["agent_kb"],
            mem["bare_task_kb"],
        )
    )
    rows.append(
        (
            f"restore {args.agents:,} agents",
            "seconds (floor: reading their rows)",
            mem["restore_s"],
            mem["read_rows_s"],
        )
    )
    full = daemon_start(mem["db"])
    empty = daemon_start(None)
    rows.append(
        (
            f"daemon start, {args.agents:,} agents",
            "seconds to answering (floor: empty db)",
            full,
            empty,
        )
    )
    lat, echo = control_latency(100, 2000)
    rows.append(
        (
            "control round trip p50",
            "ms, 100 subscribers (floor: bare trio echo)",
            pct(lat, 0.5) * 1e3,
            pct(echo, 0.5) * 1e3,
        )
    )
    rows.append(
        (
            "control round trip p99",
            "ms, 100 subscribers (floor: bare trio echo)",
            pct(lat, 0.99) * 1e3,
            pct(echo, 0.99) * 1e3,
        )
    )

    print(f"{'benchmark':<34} {'unit':<44} {'ours':>12} {'comparison':>12} {'ratio':>8}")
    for name, unit, a, b in rows:
        print(
            f"{name:<34} {unit:<44} {a:>12,.3f} {b:>12,.3f} {a / b if b else float('nan'):>7.2f}x"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "name": n,
                        "unit": u,
                        "ours": a,
                        "comparison": b,
                        "ratio": a / b if b else None,
                    }
                    for n, u, a, b in rows
                ],
                indent=2,
            )
        )

    return 0


if __name__ == "__main__":
    sys.exit(main())
