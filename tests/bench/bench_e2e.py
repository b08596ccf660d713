"""End to end through the real ikigaid process: added latency, throughput, memory.

    .venv/bin/python tests/bench/bench_e2e.py [--quick] [--json PATH]

The fake provider and the socket subscribers run in this process; the daemon
is a separate process (IKIGAI_HOME in a temporary folder, pointed at the fake).
Every text delta the fake streams is a marker ``|RAAAAIIIII|`` (run, agent,
index); the fake notes perf_counter_ns() just before it writes the bytes that
hold a marker, and each subscriber notes it when the ``agent.event`` line
holding that marker arrives. Same process, same clock.

  added latency p50/p99   fake write -> socket subscriber receives, with 1, 100
                          and 1,000 agents streaming at once (each at a steady
                          rate), beside the floor: the same streams read
                          straight from the fake by httpx in this process (no
                          daemon)
  lost events             markers sent minus markers received at 1,000 agents
  throughput              agent.event notifications/s delivered to subscribers
                          with 1,000 agents streaming as fast as the fake can,
                          beside the floor's SSE events/s over the same streams
  CPU per event           the daemon's CPU time (utime+stime, /proc/PID/stat)
                          per delivered notification, beside this process's
                          CPU per SSE event in the floor run (fake + httpx)
  memory                  VmRSS of the idle daemon beside a bare Python with the
                          same libraries imported; per idle agent (10,000 agents
                          in a prepared database) beside a bare trio task per
                          agent; per streaming agent (1,000 streaming vs idle)
                          beside the per idle agent figure

Not a test: nothing is asserted; it exits non-zero only if something crashed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import h11  # noqa: E402
import httpx  # noqa: E402
import trio  # noqa: E402

from tests.fakes.script import Reply  # noqa: E402
from tests.fakes.server import FakeProvider  # noqa: E402

MARK = re.compile(rb"\|(\d{10})\|")
TAG = re.compile(rb"\[bench:(\d)(\d{4})\]")
TICK = os.sysconf("SC_CLK_TCK")
MODEL = "claude-sonnet-4-5"


def marker(run: int, agent: int, i: int) -> str:
    return f"|{run}{agent:04d}{i:05d}|"  # 12 characters: split() cuts exactly between markers


# ------------------------------------------------------------------ /proc


def rss_kib(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


# ------------------------------------------------------------------ the fake


class TimedFake(FakeProvider):
    """The fake provider, noting when it writes each marker."""

    def __init__(self) -> None:
        super().__init__(responder=self._plan)
        self.writes: dict[bytes, int] = {}
        self.deltas = 10
        self.delay = 0.0

    def _plan(self, request: Any) -> Reply | None:
        m = TAG.search(request.body)
        if m is None:
            return None
        run, agent = int(m.group(1)), int(m.group(2))
        text = "".join(marker(run, agent, i) for i in range(self.deltas))
        return Reply(text=text, pieces=self.deltas, delay=self.delay)

    async def _send(self, stream: trio.SocketStream, conn: h11.Connection, event: h11.Event) -> None:
        data = conn.send(event)
        if data:
            if isinstance(event, h11.Data):
                t = time.perf_counter_ns()
                for m in MARK.finditer(data):
                    self.writes[m.group(1)] = t
            await stream.send_all(data)


# ------------------------------------------------------------------ the daemon


class Daemon:
    def __init__(self, fake: TimedFake, db_url: str | None = None) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="ikb-", dir="/tmp"))
        self.sock = self.home / "run" / "ikigai.sock"
        cfg = {
            "default_model": MODEL,
            "providers": {"anthropic": {"base_url": fake.base_url, "read_timeout": 60, "connect_timeout": 30}},
        }
        (self.home / "config.json").write_text(json.dumps(cfg))
        (self.home / "credentials.json").write_text(json.dumps({"anthropic": "sk-ant-bench"}))
        (self.home / "credentials.json").chmod(0o600)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("IKIGAI_") and not k.endswith("_API_KEY")}
        self.env["IKIGAI_HOME"] = str(self.home)
        if db_url:
            self.env["IKIGAI_DB_URL"] = db_url
        self.proc: trio.Process | None = None

    async def start(self) -> None:
        self.proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "daemon", "run"], env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        with trio.fail_after(180):
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"ikigaid exited with {self.proc.returncode} (logs in {self.home}/logs)")
                try:
                    s = await trio.open_unix_socket(str(self.sock))
                except OSError:
                    await trio.sleep(0.02)
                    continue
                c = Conn(s)
                await c.call("daemon.status")
                await s.aclose()
                return

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            with trio.move_on_after(30):
                await self.proc.wait()
            if self.proc.poll() is None:
                self.proc.kill()
                await self.proc.wait()
        import shutil

        shutil.rmtree(self.home, ignore_errors=True)


class Conn:
    """A minimal line-oriented JSON-RPC client (requests answered in order on this connection)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = b""
        self.ids = 0

    async def send(self, method: str, **params: Any) -> None:
        self.ids += 1
        await self.stream.send_all(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}).encode() + b"\n")

    async def line(self) -> bytes:
        while b"\n" not in self.buf:
            data = await self.stream.receive_some(1 << 16)
            if not data:
                raise EOFError("the daemon closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    async def answer(self) -> Any:
        while True:
            msg = json.loads(await self.line())
            if "id" in msg:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg["result"]

    async def call(self, method: str, **params: Any) -> Any:
        await self.send(method, **params)
        return await self.answer()


# ------------------------------------------------------------------ phases


class Subscriber:
    """One socket per agent, subscribed to it; notes the arrival of every marker."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.arrivals: list[tuple[bytes, int]] = []
        self.notes = 0
        self.lagged = 0
        self.turn_ended = trio.Event()

    async def read(self) -> None:
        conn = self.conn
        while True:
            while b"\n" not in conn.buf:
                data = await conn.stream.receive_some(1 << 16)
                if not data:
                    return
                conn.buf += data
            t = time.perf_counter_ns()
            *lines, conn.buf = conn.buf.split(b"\n")
            for line in lines:
                if b'"agent.event"' not in line:
                    continue
                self.notes += 1
                if b'"text_delta"' in line:
                    for m in MARK.finditer(line):
                        self.arrivals.append((m.group(1), t))
                elif b'"turn_ended"' in line:
                    self.turn_ended.set()
                elif b'"lagged"' in line:
                    self.lagged += 1


async def create_agents(admin: Conn, start: int, count: int) -> list[str]:
    """Pipelined agent.create: names b0000..., uuids in order."""
    uuids: list[str] = []
    batch = 200
    for lo in range(start, start + count, batch):
        hi = min(start + count, lo + batch)
        for i in range(lo, hi):
            await admin.send("agent.create", name=f"b{i:04d}", model=MODEL)
        for _ in range(lo, hi):
            uuids.append((await admin.answer())["agent"]["uuid"])
    return uuids


async def through_daemon(
    daemon: Daemon, fake: TimedFake, uuids: list[str], run: int, deltas: int, delay: float, rss_samples: list[int] | None = None
) -> dict[str, Any]:
    """Prompt every agent in ``uuids`` at once and follow them to the end of their turns."""
    fake.deltas, fake.delay = deltas, delay
    subs: list[Subscriber] = []
    async with trio.open_nursery() as nursery:
        for uuid in uuids:
            s = await trio.open_unix_socket(str(daemon.sock))
            conn = Conn(s)
            await conn.call("agent.subscribe", agent=uuid)
            sub = Subscriber(conn)
            subs.append(sub)
            nursery.start_soon(sub.read)
        admin = Conn(await trio.open_unix_socket(str(daemon.sock)))
        cpu0 = cpu_seconds(daemon.pid)
        t0 = time.perf_counter()
        for i, uuid in enumerate(uuids):
            await admin.send("agent.prompt", agent=uuid, text=f"[bench:{run}{i:04d}] stream")
        for _ in uuids:
            await admin.answer()

        async def sample() -> None:
            while rss_samples is not None:
                rss_samples.append(rss_kib(daemon.pid))
                await trio.sleep(0.1)

        nursery.start_soon(sample)
        with trio.fail_after(600):
            for sub in subs:
                await sub.turn_ended.wait()
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(daemon.pid) - cpu0
        nursery.cancel_scope.cancel()
    for sub in subs:
        await sub.conn.stream.aclose()
    await admin.stream.aclose()
    lat, seen = [], set()
    for sub in subs:
        for key, t in sub.arrivals:
            if key in seen:
                continue
            seen.add(key)
            lat.append((t - fake.writes[key]) / 1e6)
    expected = len(uuids) * deltas
    return {
        "latency_ms": lat,
        "lost": expected - len(seen),
        "lagged": sum(s.lagged for s in subs),
        "notes": sum(s.notes for s in subs),
        "elapsed": elapsed,
        "daemon_cpu": cpu,
    }


async def direct(fake: TimedFake, agents: int, run: int, deltas: int, delay: float) -> dict[str, Any]:
    """The floor: the same streams read by httpx straight from the fake, in this process."""
    fake.deltas, fake.delay = deltas, delay
    arrivals: list[tuple[bytes, int]] = []
    events = 0
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(600, connect=60, pool=600)) as client:

        async def one(i: int) -> None:
            nonlocal events
            body = json.dumps(
                {"model": MODEL, "stream": True, "max_tokens": 1024,
                 "messages": [{"role": "user", "content": f"[bench:{run}{i:04d}] stream"}]}
            )
            tail = b""
            async with client.stream("POST", f"{fake.base_url}/v1/messages", content=body, headers={"content-type": "application/json"}) as r:
                async for chunk in r.aiter_raw():
                    t = time.perf_counter_ns()
                    events += chunk.count(b"\n\n")
                    data = tail + chunk
                    for m in MARK.finditer(data):
                        arrivals.append((m.group(1), t))
                    tail = data[-16:]

        cpu0 = cpu_seconds()
        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for i in range(agents):
                nursery.start_soon(one, i)
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds() - cpu0
    lat, seen = [], set()
    for key, t in arrivals:
        if key not in seen:
            seen.add(key)
            lat.append((t - fake.writes[key]) / 1e6)
    return {"latency_ms": lat, "lost": agents * deltas - len(seen), "events": events, "elapsed": elapsed, "cpu": cpu}


# ------------------------------------------------------------------ memory


def prepared_db(count: int) -> tuple[str, Path]:
    from datetime import UTC, datetime

    from store import Store
    from store._ids import uuid7
    from store._schema import agents

    tmp = Path(tempfile.mkdtemp(prefix="ikbdb-"))
    url = f"sqlite:///{tmp / 'many.db'}"
    store = Store(url, sqlite_synchronous="OFF")
    now = datetime.now(UTC)
    with store.engine.begin() as conn:
        conn.execute(
            agents.insert(),
            [
                {"uuid": uuid7(), "name": f"idle{i}", "provider": "anthropic", "model": MODEL,
                 "thinking_level": "none", "system_prompt": "", "status": "running", "created_at": now}
                for i in range(count)
            ],
        )
    store.close()
    return url, tmp


async def bare_python_rss() -> int:
    code = "import sys, trio, httpx, sqlalchemy, msgspec, structlog, alembic; sys.stdout.write('ok\\n'); sys.stdout.flush(); sys.stdin.read()"
    proc = await trio.lowlevel.open_process([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    await proc.stdout.receive_some(10)
    await trio.sleep(0.3)
    rss = rss_kib(proc.pid)
    await proc.stdin.aclose()
    await proc.wait()
    return rss


async def bare_task_kib(count: int) -> float:
    async with trio.open_nursery() as nursery:
        await trio.sleep(0.05)
        before = rss_kib()
        for _ in range(count):
            nursery.start_soon(trio.sleep_forever)
        await trio.sleep(0.1)
        after = rss_kib()
        nursery.cancel_scope.cancel()
    return (after - before) / count


async def settled_rss(pid: int) -> int:
    await trio.sleep(1.0)
    return rss_kib(pid)


# ------------------------------------------------------------------ main


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def row(name: str, unit: str, ours: float, comparison: float | None, better: str) -> None:
        ratio = ours / comparison if comparison else None
        rows.append({"name": name, "unit": unit, "ours": ours, "comparison": comparison, "ratio": ratio, "better": better})
        print(f"  {name}: {ours:,.3f} {unit} (comparison {comparison if comparison is None else f'{comparison:,.3f}'})", file=sys.stderr)

    counts = args.agents
    most = max(counts)
    async with trio.open_nursery() as nursery:
        fake = TimedFake()
        await nursery.start(fake.serve)

        # ---- memory of the idle daemon
        daemon = Daemon(fake)
        await daemon.start()
        try:
            idle_rss = await settled_rss(daemon.pid)
            row("idle daemon RSS", "MiB (floor: python + the same imports)", idle_rss / 1024, await bare_python_rss() / 1024, "lower")

            admin = Conn(await trio.open_unix_socket(str(daemon.sock)))
            uuids = await create_agents(admin, 0, most)
            await admin.stream.aclose()
            rss_idle_n = await settled_rss(daemon.pid)

            # ---- added latency at 1, 100, 1,000 agents, a steady rate per agent
            for run_no, n in enumerate(counts, start=1):
                deltas, delay = args.plan[n]
                samples: list[int] = []
                ours = await through_daemon(daemon, fake, uuids[:n], run_no, deltas, delay, samples if n == most else None)
                floor = await direct(fake, n, run_no + 4, deltas, delay)
                for q, label in ((0.5, "p50"), (0.99, "p99")):
                    row(
                        f"added latency {label}, {n:,} agent{'s' if n > 1 else ''}",
                        "ms fake write -> subscriber (floor: httpx reads the fake directly)",
                        pct(ours["latency_ms"], q),
                        pct(floor["latency_ms"], q),
                        "lower",
                    )
                if n == most:
                    row(f"lost events, {n:,} agents", f"of {n * deltas:,} text deltas (floor: direct)", ours["lost"] + 0.0, floor["lost"] + 0.0, "lower")
                    peak = max(samples) if samples else rss_kib(daemon.pid)
                    streaming_kib = (peak - rss_idle_n) / n

            # ---- throughput at 1,000 agents, as fast as the fake writes
            tp_deltas = args.tp_deltas
            ours = await through_daemon(daemon, fake, uuids[:most], 8, tp_deltas, 0.0)
            floor = await direct(fake, most, 9, tp_deltas, 0.0)
            row(
                f"throughput, {most:,} agents",
                "agent.event notifications/s to subscribers (floor: SSE events/s read directly)",
                ours["notes"] / ours["elapsed"],
                floor["events"] / floor["elapsed"],
                "higher",
            )
            row(
                f"daemon CPU per event, {most:,} agents",
                "us per notification (floor: fake + httpx reader, us per SSE event)",
                ours["daemon_cpu"] / ours["notes"] * 1e6,
                floor["cpu"] / floor["events"] * 1e6,
                "lower",
            )
            if ours["lost"] or ours["lagged"]:
                print(f"  throughput run: {ours['lost']} markers lost, {ours['lagged']} lagged notices", file=sys.stderr)
        finally:
            await daemon.stop()

        # ---- per idle agent: a daemon restoring N agents from a prepared database
        url, tmp = prepared_db(args.idle_agents)
        big = Daemon(fake, db_url=url)
        try:
            await big.start()
            many_rss = await settled_rss(big.pid)
        finally:
            await big.stop()
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        per_idle = (many_rss - idle_rss) / args.idle_agents
        row(f"RSS per idle agent ({args.idle_agents:,})", "KiB (floor: a bare trio task)", per_idle, await bare_task_kib(args.idle_agents), "lower")
        row(f"RSS per streaming agent ({most:,})", "KiB while streaming (floor: per idle agent)", streaming_kib, per_idle, "lower")
        nursery.cancel_scope.cancel()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a smoke run: fewer agents and events")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--rate-100", type=float, default=None, help="deltas/s per agent in the 100-agent latency run (default 50)")
    args = ap.parse_args()
    if args.quick:
        args.agents = [1, 20, 100]
        args.plan = {1: (50, 0.01), 20: (20, 0.02), 100: (10, 0.05)}
        args.tp_deltas = 10
        args.idle_agents = 1000
    else:
        # (deltas per agent, seconds between deltas): each agent streams at a steady
        # rate like a model does (100, 50 and 10 deltas/s per agent)
        args.agents = [1, 100, 1000]
        args.plan = {1: (300, 0.01), 100: (60, 0.02), 1000: (20, 0.1)}
        args.tp_deltas = 40
        args.idle_agents = 10_000
    if args.rate_100:
        # deltas/s per agent at 100 agents: 50 by default; 10 measures below saturation
        args.plan[100] = (max(20, int(args.rate_100 * 2)), 1 / args.rate_100)
    rows = trio.run(run, args)
    print(f"{'benchmark':<42} {'unit':<78} {'ours':>12} {'comparison':>12} {'ratio':>8}")
    for r in rows:
        comp = "" if r["comparison"] is None else f"{r['comparison']:,.3f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['name']:<42} {r['unit']:<78} {r['ours']:>12,.3f} {comp:>12} {ratio:>8}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
